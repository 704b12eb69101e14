"""Writing the task files: templates for a new task, and in-place updates of parsed files.

An update changes only what a command changed: one cell of a ledger row (the other cells
keep their bytes, padding included), the value of one checkpoint key, one checkbox, or
lines appended at the end of a notes section. Everything else a person wrote stays as it is.
"""

from __future__ import annotations

from tidegate.ledger.markdown import (
    TextFile,
    aligned_widths,
    checklist,
    key_lines,
    make_row,
    parse_table,
    render_row,
)
from tidegate.ledger.model import CheckEntry, Checkpoint, Evidence, Item, LogEntry, Route, TaskState
from tidegate.ledger.parse import CHECKPOINT_KEYS, item_table
from tidegate.ledger.parse_notes import EVIDENCE_COLUMNS, evidence_table
from tidegate.ledger.routes import BRIEF, CHECKPOINT, LEDGER, NOTES, PLAN, REVIEW, ROADMAP

_CHECKPOINT_TITLES = {
    "route": "Route",
    "stage": "Stage",
    "resume pointer": "Resume Pointer",
    "next action": "Next Action",
    "latest evidence": "Latest Evidence",
    "updated": "Updated",
}
EVIDENCE_HEADER = ["ID", "Item", "Attempt", "Kind", "Result", "Ref", "Fingerprint"]
PLAN_HINT = (
    "Describe the change. For `tidegate ledger run`, put edit blocks in a fenced block "
    "tagged `tidegate` and the check in a `Verify:` line."
)


# -- new task --------------------------------------------------------------------------


def new_checkpoint(cp: Checkpoint) -> str:
    return "\n".join(
        [
            "# Checkpoint",
            "",
            "Read this first: where the task stands and what to do next.",
            "",
            *(f"- {_CHECKPOINT_TITLES[k]}: {v}" for k, v in checkpoint_values(cp).items()),
            "",
            "## Re-Execution Conditions",
            "",
            "## Promotion Triggers",
            "",
        ]
    )


def new_ledger(items: list[Item], epic: bool) -> str:
    columns = ["ID", "Title", *(["Milestone"] if epic else [])]
    columns += ["Status", "Required", "Gate", "Assignee", "Retries", "Blocker", "Evidence"]
    rows = [
        make_row(
            [
                i.id,
                i.title,
                *([i.milestone or "-"] if epic else []),
                i.status.value,
                "yes" if i.required else "no",
                i.gate.value if i.gate else "-",
                "-",
                "0",
                "-",
                "-",
            ]
        )
        for i in items
    ]
    return "\n".join(
        [
            "# Ledger",
            "",
            "One row per item. Status: pending, in_progress, blocked, done, discarded.",
            "",
            make_row(columns),
            make_row(["---"] * len(columns)),
            *rows,
            "",
        ]
    )


def new_notes(brief: str) -> str:
    return "\n".join(
        [
            "# Implementation notes",
            "",
            "## Reader Summary",
            "",
            brief.strip(),
            "",
            "## Decisions",
            "",
            "## Failures",
            "",
            "## Evidence Index",
            "",
            make_row(EVIDENCE_HEADER),
            make_row(["---"] * len(EVIDENCE_COLUMNS)),
            "",
            "## Evidence Blocks",
            "",
        ]
    )


def new_brief(brief: str) -> str:
    return f"# Brief\n\n{brief.strip()}\n"


def new_plan(brief: str, items: list[Item]) -> str:
    sections = [f"## {i.id}: {i.title}\n\n{PLAN_HINT}\n" for i in items]
    return "# Plan\n\n## Brief\n\n" + brief.strip() + "\n\n" + "\n".join(sections)


def new_review() -> str:
    return (
        "# Review report\n\n- Verdict: pending\n- Refs: none\n\n"
        "Verdicts: pending, approved, changes_requested, blocked. Ship needs approved, with\n"
        "refs to the evidence reviewed (E-N ids, URLs or paths).\n\n## Findings\n"
    )


def new_roadmap(milestones: list[tuple[str, str]]) -> str:
    return "# Roadmap\n\n" + "\n".join(f"## {m}: {title}\n" for m, title in milestones)


def new_files(route: Route, brief: str, items: list[Item], cp: Checkpoint) -> dict[str, str]:
    """Every file a new task on ``route`` starts with."""
    files = {
        CHECKPOINT: new_checkpoint(cp),
        LEDGER: new_ledger(items, route is Route.EPIC),
        NOTES: new_notes(brief),
    }
    if route is Route.SMALL:
        files[BRIEF] = new_brief(brief)
    else:
        files[PLAN] = new_plan(brief, items)
        files[REVIEW] = new_review()
    if route is Route.EPIC:
        files[ROADMAP] = new_roadmap([("M1", brief.strip().splitlines()[0][:80])])
    return files


# -- updates ---------------------------------------------------------------------------


def checkpoint_values(cp: Checkpoint) -> dict[str, str]:
    return {
        "route": cp.route.value,
        "stage": f"{cp.stage} ({cp.stage_status.value})",
        "resume pointer": cp.resume_pointer or "none",
        "next action": cp.next_action or "none",
        "latest evidence": cp.latest_evidence or "none",
        "updated": cp.updated,
    }


def update_checkpoint(file: TextFile, old: Checkpoint, new: Checkpoint) -> None:
    keys = key_lines(file, set(CHECKPOINT_KEYS), file.preamble_end())
    before, after = checkpoint_values(old), checkpoint_values(new)
    missing: list[str] = []
    for key, value in after.items():
        if key not in keys:
            missing.append(f"- {_CHECKPOINT_TITLES[key]}: {value}")
        elif before[key] != value:
            file.replace(keys[key].index, keys[key].with_value(value))
    if missing:
        file.insert(max(k.index for k in keys.values()) + 1, missing)
    _update_checks(file, "Re-Execution Conditions", new.conditions)
    _update_checks(file, "Promotion Triggers", new.triggers)


def _update_checks(file: TextFile, title: str, entries: list[CheckEntry]) -> None:
    span = file.section(title)
    existing = {c.index + 1: c for c in checklist(file, *span)} if span else {}
    for entry in entries:
        check = existing.get(entry.line)
        if check is not None and check.closed != entry.closed:
            file.replace(check.index, check.with_closed(entry.closed))
    added = [f"- [{'x' if e.closed else ' '}] {e.text}" for e in entries if e.line == 0]
    if added:
        file.append_to_section(title, added)


def ledger_cells(item: Item) -> dict[str, str]:
    """The cells the runtime writes; the others (title, required, gate, milestone, and any
    column a person added) are never rewritten."""
    return {
        "status": item.status.value,
        "assignee": item.assignee or "-",
        "retries": str(item.retries),
        "blocker": item.blocker.render() if item.blocker else "-",
        "evidence": ", ".join(item.evidence) or "-",
    }


def update_ledger(file: TextFile, old: dict[str, Item], items: list[Item]) -> None:
    table = parse_table(file, item_table(file))
    widths = aligned_widths(file, table)
    rows = {
        index + 1: (index, cells, lead)
        for (index, cells), lead in zip(table.rows, table.leading_pipe, strict=True)
    }
    for item in items:
        before, after = ledger_cells(old[item.id]), ledger_cells(item)
        if before == after:
            continue
        index, cells, lead = rows[item.line]
        values = [
            after[col] if col in after and after[col] != before[col] else None
            for col in table.columns
        ]
        file.replace(index, render_row(cells, values, lead, widths))


def update_notes(file: TextFile, state: TaskState) -> None:
    new_decisions = [d for d in state.decisions if d.line == 0]
    new_failures = [f for f in state.failures if f.line == 0]
    new_evidence = [e for e in state.evidence if e.line == 0]
    if new_decisions:
        file.append_to_section("Decisions", [log_line("D", d) for d in new_decisions])
    if new_failures:
        file.append_to_section("Failures", [log_line("F", f) for f in new_failures])
    if new_evidence:
        _append_evidence(file, new_evidence)
    if state.ship_summary:
        file.append_section("Ship Summary", state.ship_summary)


def log_line(tag: str, entry: LogEntry) -> str:
    parts = [f"- {tag}-{entry.number} {entry.kind}"]
    tail = None
    for key, value in entry.fields.items():
        if key in ("reason", "decision"):
            tail = (key, value)
        else:
            parts.append(f"{key}={value or '-'}")
    if tail:
        parts.append(f"{tail[0]}={' '.join(tail[1].split())}")
    return " ".join(parts)


def _append_evidence(file: TextFile, new: list[Evidence]) -> None:
    rows = [
        make_row(
            [
                e.id,
                e.item,
                str(e.attempt),
                e.kind.value,
                "pass" if e.passed else "fail",
                e.ref,
                e.fingerprint,
            ]
        )
        for e in new
    ]
    header = evidence_table(file)
    if header is None:
        head = [
            make_row(EVIDENCE_HEADER),
            make_row(["---"] * len(EVIDENCE_COLUMNS)),
        ]
        file.append_to_section("Evidence Index", head + rows)
    else:
        file.insert(parse_table(file, header).end, rows)
    blocks: list[str] = []
    for e in new:
        title = f"### {e.id} · {e.item} attempt {e.attempt} · {e.kind.value} · {'pass' if e.passed else 'fail'}"
        blocks += [title, "", f"- ref: {e.ref}", *e.detail, ""]
    file.append_to_section("Evidence Blocks", blocks[:-1], gap=True)
