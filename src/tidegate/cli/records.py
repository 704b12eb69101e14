"""``tidegate runs`` and ``tidegate read``: recorded runs, read-only.

Shared by the typer commands and the fast path (``tidegate.cli.fast``), so both print the
same thing. Loads only the store's reading side: no typer, no engine, and no pydantic or
rich unless a recorded report is shown to a person.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tidegate.cli.output import dump_json
from tidegate.cli.runtext import runs_text, view_text
from tidegate.errors import UsageError
from tidegate.store.state_root import read_all_run_stores, read_run_store
from tidegate.store.views import run_row, run_view
from tidegate.workspace.repo import Repository, discover

if TYPE_CHECKING:
    from tidegate.records.report import FlowReport


def list_runs(repo: Path | None, state_root: str | None, limit: int, as_json: bool) -> None:
    """Print recorded runs, newest first: this repository's, or outside a repository (and
    without ``repo``) every repository's in the state root."""
    found = _repository(Path(".")) if repo is None else discover(repo)
    if found is None:
        stores = read_all_run_stores(state_root)
    else:
        one = read_run_store(found, state_root)
        stores = [one] if one is not None else []
    rows = sorted(
        (run_row(r) for s in stores for r in s.runs(limit, reports=False)),
        key=lambda r: (r["started_ms"], r["run_id"]),
        reverse=True,
    )[:limit]
    if as_json:
        sys.stdout.write(dump_json(rows) + "\n")
        return
    sys.stdout.write(runs_text(rows))


def _repository(path: Path) -> Repository | None:
    """The repository ``path`` is in, or None outside one (discovered once: each discovery
    runs git)."""
    try:
        return discover(path)
    except UsageError:
        return None


def show_run(run_id: str, repo: Path, state_root: str | None, as_json: bool, detail: bool) -> None:
    """Print one recorded run (``latest``: the newest): its report as JSON, everything with
    ``detail``, or for a person the run, phases, attempts, effects, evidence and report."""
    store = read_run_store(discover(repo), state_root)
    if store is None:
        raise UsageError(f"no recorded run {run_id!r} for this repository")
    view = run_view(store, run_id)
    if as_json:
        shown = view if detail or view["report"] is None else view["report"]
        sys.stdout.write(dump_json(shown) + "\n")
        return
    _print_view(view)


def _print_view(view: dict[str, Any]) -> None:
    report = _report(view["report"])  # parsed first: a bad report fails before any output
    text = view_text(view)
    if report is not None:
        from tidegate.cli.report_text import report_text, terminal_styles

        text += report_text(report.model_dump(mode="json"), terminal_styles())
    sys.stdout.write(text)


def _report(data: dict[str, Any] | None) -> FlowReport | None:
    if data is None:
        return None
    from tidegate.records.report import FlowReport

    return FlowReport.model_validate(data)
