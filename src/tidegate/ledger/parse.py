"""Reading the task files into records: checkpoint.md and ledger.md here, with the
shared ID patterns; implementation-notes.md in ``parse_notes``, the plan, review and
roadmap in ``parse_plan``. Strict: anything malformed raises ``LedgerFormatError``
naming the file and line; nothing is guessed or repaired.

The formats, with examples, are in docs/ledger.md.
"""

from __future__ import annotations

import hashlib
import re

from tidegate.ledger.markdown import (
    TextFile,
    cell_text,
    checklist,
    find_tables,
    key_lines,
    parse_table,
)
from tidegate.ledger.model import (
    Blocker,
    BlockerKind,
    CheckEntry,
    Checkpoint,
    Gate,
    Item,
    ItemStatus,
    Route,
    StageStatus,
)
from tidegate.ledger.routes import FLOWS
from tidegate.text.numbers import DIGITS, whole_number

ITEM_ID = re.compile(r"^[A-Za-z][A-Za-z0-9._-]*$")
EVIDENCE_ID = re.compile(rf"^E-(?!0){DIGITS}$")
NONE = {"", "-", "none"}

LEDGER_COLUMNS = ("id", "title", "status", "assignee", "retries", "blocker", "evidence")
OPTIONAL_COLUMNS = ("required", "gate", "milestone")
CHECKPOINT_KEYS = ("route", "stage", "resume pointer", "next action", "latest evidence", "updated")
_STAGE = re.compile(r"^(?P<name>[a-z_]+)\s*\((?P<status>[^)]*)\)$")


def enum_error(what: str, value: str, allowed: list[str]) -> str:
    return f"unknown {what} {value!r} (expected one of: {', '.join(allowed)})"


def digest(lines: list[str]) -> str:
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return hashlib.sha256("\n".join(lines).encode("utf-8", "surrogateescape")).hexdigest()


# -- checkpoint.md ---------------------------------------------------------------------


def parse_checkpoint(file: TextFile) -> Checkpoint:
    keys = key_lines(file, set(CHECKPOINT_KEYS), file.preamble_end())
    for required in ("route", "stage", "resume pointer"):
        if required not in keys:
            raise file.error(
                0,
                f"missing '{required.title()}:' line"
                + (
                    " (write 'Resume Pointer: none' when no item is in progress)"
                    if required == "resume pointer"
                    else ""
                ),
            )
    route_line = keys["route"]
    try:
        route = Route(route_line.value)
    except ValueError:
        raise file.error(
            route_line.index, enum_error("route", route_line.value, [r.value for r in Route])
        ) from None
    stage, status = _stage(file, keys["stage"].index, keys["stage"].value, route)
    pointer = keys["resume pointer"].value.strip()
    if pointer.lower() not in NONE and not ITEM_ID.match(pointer):
        raise file.error(
            keys["resume pointer"].index, f"resume pointer {pointer!r} is not an item ID"
        )
    latest = keys["latest evidence"].value.strip() if "latest evidence" in keys else "none"
    if latest.lower() not in NONE and not EVIDENCE_ID.match(latest):
        raise file.error(keys["latest evidence"].index, f"latest evidence {latest!r} is not E-N")
    return Checkpoint(
        route=route,
        stage=stage,
        stage_status=status,
        resume_pointer=None if pointer.lower() in NONE else pointer,
        next_action=keys["next action"].value if "next action" in keys else "",
        latest_evidence=None if latest.lower() in NONE else latest,
        updated=keys["updated"].value if "updated" in keys else "",
        conditions=_checks(file, "Re-Execution Conditions"),
        triggers=_checks(file, "Promotion Triggers"),
        key_lines={k: v.index + 1 for k, v in keys.items()},
    )


def _stage(file: TextFile, index: int, value: str, route: Route) -> tuple[str, StageStatus]:
    m = _STAGE.match(value.strip())
    if m is None:
        raise file.error(
            index, f"stage {value!r} is not 'NAME (STATUS)', e.g. 'execute (in_progress)'"
        )
    if m.group("name") not in FLOWS[route]:
        raise file.error(
            index, enum_error(f"stage for route {route}", m.group("name"), list(FLOWS[route]))
        )
    try:
        return m.group("name"), StageStatus(m.group("status").strip())
    except ValueError:
        raise file.error(
            index, enum_error("stage status", m.group("status"), [s.value for s in StageStatus])
        ) from None


def _checks(file: TextFile, title: str) -> list[CheckEntry]:
    span = file.section(title)
    if span is None:
        return []
    return [CheckEntry(c.text, c.closed, c.index + 1) for c in checklist(file, *span)]


# -- ledger.md -------------------------------------------------------------------------


def item_table(file: TextFile) -> int:
    tables = find_tables(file, "id", 0, len(file))
    if not tables:
        raise file.error(0, "no item table (a table whose first column is 'ID')")
    if len(tables) > 1:
        raise file.error(
            tables[1], "a second item table (one table with an 'ID' column is allowed)"
        )
    return tables[0]


def parse_ledger(file: TextFile) -> tuple[list[Item], set[str]]:
    """The items, in table order, and the optional columns present."""
    table = parse_table(file, item_table(file))
    seen: set[str] = set()
    for col in table.columns:
        if col in seen:
            raise file.error(table.header, f"column {col!r} appears twice")
        seen.add(col)
    missing = [c for c in LEDGER_COLUMNS if c not in table.columns]
    if missing:
        raise file.error(
            table.header,
            f"missing column(s) {', '.join(repr(m) for m in missing)} "
            "(required: ID, Title, Status, Assignee, Retries, Blocker, Evidence)",
        )
    items: list[Item] = []
    first_line: dict[str, int] = {}
    for index, raw in table.rows:
        cells = {col: cell_text(c) for col, c in zip(table.columns, raw, strict=True)}
        item = _item(file, index, cells)
        if item.id in first_line:
            raise file.error(
                index, f"duplicate item ID {item.id!r} (first at line {first_line[item.id]})"
            )
        first_line[item.id] = index + 1
        items.append(item)
    return items, {c for c in OPTIONAL_COLUMNS if c in table.columns}


def _item(file: TextFile, index: int, cells: dict[str, str]) -> Item:
    item_id = cells["id"]
    if not ITEM_ID.match(item_id):
        raise file.error(
            index, f"item ID {item_id!r} must start with a letter (letters, digits, . _ -)"
        )
    try:
        status = ItemStatus(cells["status"])
    except ValueError:
        raise file.error(
            index, enum_error("status", cells["status"], [s.value for s in ItemStatus])
        ) from None
    retries = whole_number(cells["retries"])
    if retries is None:
        raise file.error(
            index, f"retries of {item_id} must be a whole number, got {cells['retries']!r}"
        )
    item = Item(
        id=item_id,
        title=cells["title"],
        status=status,
        assignee=None if cells["assignee"].lower() in NONE else cells["assignee"],
        retries=retries,
        blocker=_blocker(file, index, item_id, cells["blocker"]),
        evidence=_evidence_refs(file, index, cells["evidence"]),
        required=_required(file, index, cells.get("required", "yes")),
        gate=_gate(file, index, cells.get("gate", "-")),
        milestone=None if cells.get("milestone", "-").lower() in NONE else cells["milestone"],
        line=index + 1,
    )
    _check_item(file, index, item)
    return item


def _blocker(file: TextFile, index: int, item_id: str, text: str) -> Blocker | None:
    if text.lower() in NONE:
        return None
    kind, sep, rest = text.partition(":")
    kinds = [k.value for k in BlockerKind]
    if not sep or kind.strip() not in kinds:
        raise file.error(
            index,
            f"blocker of {item_id} must start with its kind ({', '.join(kinds)}), "
            "e.g. 'needs_user_decision: which license?'",
        )
    return Blocker(BlockerKind(kind.strip()), rest.strip())


def _evidence_refs(file: TextFile, index: int, text: str) -> list[str]:
    if text.lower() in NONE:
        return []
    refs = [r.strip() for r in text.split(",")]
    bad = [r for r in refs if not EVIDENCE_ID.match(r)]
    if bad:
        raise file.error(
            index, f"evidence refs must be E-N ids separated by commas, not {bad[0]!r}"
        )
    return refs


def _required(file: TextFile, index: int, text: str) -> bool:
    if text.lower() not in ("yes", "no"):
        raise file.error(index, f"Required must be yes or no, got {text!r}")
    return text.lower() == "yes"


def _gate(file: TextFile, index: int, text: str) -> Gate | None:
    if text.lower() in NONE:
        return None
    try:
        return Gate(text)
    except ValueError:
        raise file.error(index, enum_error("gate", text, ["-", *(g.value for g in Gate)])) from None


def _check_item(file: TextFile, index: int, item: Item) -> None:
    if item.status is ItemStatus.BLOCKED and item.blocker is None:
        raise file.error(index, f"{item.id} is blocked but its Blocker column is empty")
    if item.status is not ItemStatus.BLOCKED and item.blocker is not None:
        raise file.error(
            index, f"{item.id} is {item.status} but has a blocker (only blocked items have one)"
        )
    if item.status is ItemStatus.IN_PROGRESS and item.assignee is None:
        raise file.error(index, f"{item.id} is in_progress but has no assignee (its claim marker)")
