"""How the ledger commands print: their console, the status view (a table of items) and
item runs (each run's report, then the ledger's lines), or JSON."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from tidegate.cli.output import dump_json
from tidegate.text.sanitize import sanitize

if TYPE_CHECKING:
    from rich.console import Console

    from tidegate.ledger.engine import ItemRun
    from tidegate.ledger.model import TaskState
    from tidegate.ledger.next_action import Action


def ledger_console() -> Console:
    from tidegate.cli.render import console  # rich loads with the commands that print

    return console(markup=False)


def print_runs(runs: list[ItemRun], as_json: bool) -> None:
    if as_json:
        payload = [
            {
                "item": r.item,
                "exit_code": r.outcome.exit_code,
                "lines": r.outcome.lines,
                "report": r.report.model_dump(mode="json") if r.report else None,
            }
            for r in runs
        ]
        sys.stdout.write(dump_json(payload) + "\n")
        return
    from tidegate.cli.report_text import report_text, terminal_styles

    out = ledger_console()
    styles = terminal_styles()
    for r in runs:
        if r.report is not None:
            sys.stdout.write(report_text(r.report.model_dump(mode="json"), styles))
        for line in r.outcome.lines:
            out.print(line)


def print_status(state: TaskState, action: Action) -> None:
    from tidegate.ledger.operations import status_view

    view = status_view(state, action)
    out = ledger_console()
    budget = view["budget"]
    assert isinstance(budget, dict)
    loop = budget["loop_iterations"]
    out.print(f"route {view['route']}   stage {view['stage']} ({view['stage_status']})")
    flow = view["flow"]
    assert isinstance(flow, list)
    out.print("stages: " + " > ".join(f"[{s}]" if s == view["stage"] else s for s in flow))
    out.print(f"resume pointer: {view['resume_pointer'] or 'none'}")
    out.print(f"next action:    {action.text}")
    out.print(f"latest evidence: {view['latest_evidence'] or 'none'}")
    out.print(
        f"retry budget: {budget['retries_per_item']} per item"
        + (f", {loop} loop iterations" if loop else "")
    )
    from rich.table import Table

    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in ("ID", "status", "retries", "assignee", "gate", "blocker", "evidence", "title"):
        table.add_column(column)
    for item in state.items:
        cells = (
            item.id,
            item.status.value,
            f"{item.retries}/{budget['retries_per_item']}",
            item.assignee or "-",
            item.gate.value if item.gate else "-",
            _short(item.blocker.render()) if item.blocker else "-",
            ", ".join(item.evidence) or "-",
            item.title,
        )
        table.add_row(*(sanitize(c) for c in cells))
    out.print(table)
    for key, title in (
        ("re_execution_conditions", "re-execution conditions"),
        ("promotion_triggers", "promotion triggers"),
    ):
        entries = view[key]
        assert isinstance(entries, list)
        if entries:
            out.print(f"{title}:")
            for entry in entries:
                out.print(f"  - {entry}")
    if view["review"]:
        out.print(f"review verdict: {view['review']}")


def _short(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
