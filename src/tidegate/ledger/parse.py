"""Reading the task files into records. Strict: anything malformed raises
``LedgerFormatError`` naming the file and line; nothing is guessed or repaired.

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
    Evidence,
    EvidenceKind,
    FailureType,
    Gate,
    Item,
    ItemStatus,
    LogEntry,
    PlanSection,
    ReviewReport,
    Route,
    StageStatus,
    Verdict,
)
from tidegate.ledger.routes import FLOWS
from tidegate.text.numbers import DIGITS, whole_number

ITEM_ID = re.compile(r"^[A-Za-z][A-Za-z0-9._-]*$")
EVIDENCE_ID = re.compile(rf"^E-(?!0){DIGITS}$")
NONE = {"", "-", "none"}

LEDGER_COLUMNS = ("id", "title", "status", "assignee", "retries", "blocker", "evidence")
OPTIONAL_COLUMNS = ("required", "gate", "milestone")
EVIDENCE_COLUMNS = ("id", "item", "attempt", "kind", "result", "ref", "fingerprint")
CHECKPOINT_KEYS = ("route", "stage", "resume pointer", "next action", "latest evidence", "updated")
DECISION_FIELDS: dict[str, tuple[str, ...]] = {
    "route_change": ("from", "to"),
    "discard": ("item",),
    "user_decision": ("item",),
    "scope_revision": ("item",),
    "unblock": ("item", "blocker"),
    "ship": (),
}
FAILURE_FIELDS = ("item", "attempt", "outcome", "plan")
TAIL_KEYS = ("reason", "decision")
_LOG = re.compile(r"^\s*[-*+]\s+(?P<tag>[DF])-(?P<num>\d+)(?P<rest>.*)$")
_LOG_FIELD = re.compile(r"\s+([a-z_]+)=")
_STAGE = re.compile(r"^(?P<name>[a-z_]+)\s*\((?P<status>[^)]*)\)$")
_PLAN_HEADING = re.compile(r"^(?P<id>[A-Za-z][A-Za-z0-9._-]*):\s*(?P<title>.*)$")
_VERIFY = re.compile(r"^\s*(?:[-*+]\s+)?(?:\*\*)?Verify:(?:\*\*)?\s*(?P<cmd>.+?)\s*$")
_DEPENDS = re.compile(r"^\s*(?:[-*+]\s+)?(?:\*\*)?Depends on:(?:\*\*)?\s*(?P<ids>.*?)\s*$", re.I)


def _enum_error(what: str, value: str, allowed: list[str]) -> str:
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
            route_line.index, _enum_error("route", route_line.value, [r.value for r in Route])
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
            index, _enum_error(f"stage for route {route}", m.group("name"), list(FLOWS[route]))
        )
    try:
        return m.group("name"), StageStatus(m.group("status").strip())
    except ValueError:
        raise file.error(
            index, _enum_error("stage status", m.group("status"), [s.value for s in StageStatus])
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
            index, _enum_error("status", cells["status"], [s.value for s in ItemStatus])
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
        raise file.error(
            index, _enum_error("gate", text, ["-", *(g.value for g in Gate)])
        ) from None


def _check_item(file: TextFile, index: int, item: Item) -> None:
    if item.status is ItemStatus.BLOCKED and item.blocker is None:
        raise file.error(index, f"{item.id} is blocked but its Blocker column is empty")
    if item.status is not ItemStatus.BLOCKED and item.blocker is not None:
        raise file.error(
            index, f"{item.id} is {item.status} but has a blocker (only blocked items have one)"
        )
    if item.status is ItemStatus.IN_PROGRESS and item.assignee is None:
        raise file.error(index, f"{item.id} is in_progress but has no assignee (its claim marker)")


# -- implementation-notes.md -----------------------------------------------------------


def parse_notes(file: TextFile) -> tuple[list[Evidence], list[LogEntry], list[LogEntry]]:
    """Evidence index rows, decisions (D-N) and failures (F-N)."""
    return (
        _evidence_index(file),
        _log(file, "Decisions", "D", DECISION_FIELDS),
        _log(file, "Failures", "F", {t.value: FAILURE_FIELDS for t in FailureType}),
    )


def evidence_table(file: TextFile) -> int | None:
    span = file.section("Evidence Index")
    if span is None:
        return None
    tables = find_tables(file, "id", span[0], span[1])
    if len(tables) > 1:
        raise file.error(tables[1], "a second evidence table in 'Evidence Index'")
    return tables[0] if tables else None


def _evidence_index(file: TextFile) -> list[Evidence]:
    header = evidence_table(file)
    if header is None:
        return []
    table = parse_table(file, header)
    missing = [c for c in EVIDENCE_COLUMNS if c not in table.columns]
    if missing:
        raise file.error(header, f"evidence table is missing column(s) {', '.join(missing)}")
    found: list[Evidence] = []
    first: dict[str, int] = {}
    for index, raw in table.rows:
        cells = {col: cell_text(c) for col, c in zip(table.columns, raw, strict=True)}
        ev = _evidence_row(file, index, cells)
        if ev.id in first:
            raise file.error(index, f"duplicate evidence ID {ev.id} (first at line {first[ev.id]})")
        first[ev.id] = index + 1
        found.append(ev)
    return found


def _evidence_row(file: TextFile, index: int, cells: dict[str, str]) -> Evidence:
    if not EVIDENCE_ID.match(cells["id"]):
        raise file.error(index, f"evidence ID {cells['id']!r} is not E-N")
    attempt = whole_number(cells["attempt"], 1)
    if attempt is None:
        raise file.error(index, f"attempt must be a number from 1, got {cells['attempt']!r}")
    try:
        kind = EvidenceKind(cells["kind"])
    except ValueError:
        raise file.error(
            index, _enum_error("evidence kind", cells["kind"], [k.value for k in EvidenceKind])
        ) from None
    if cells["result"] not in ("pass", "fail"):
        raise file.error(index, f"result must be pass or fail, got {cells['result']!r}")
    if not cells["ref"]:
        raise file.error(index, f"{cells['id']} has an empty Ref")
    if not re.fullmatch(r"[0-9a-f]{8,64}", cells["fingerprint"]):
        raise file.error(index, f"fingerprint of {cells['id']} is not hex")
    return Evidence(
        id=cells["id"],
        item=cells["item"],
        attempt=attempt,
        kind=kind,
        passed=cells["result"] == "pass",
        ref=cells["ref"],
        fingerprint=cells["fingerprint"],
        line=index + 1,
    )


def _log(file: TextFile, title: str, tag: str, kinds: dict[str, tuple[str, ...]]) -> list[LogEntry]:
    span = file.section(title)
    if span is None:
        return []
    entries: list[LogEntry] = []
    first: dict[int, int] = {}
    for i in range(span[0] + 1, span[1]):
        m = _LOG.match(file.lines[i])
        if m is None or file.fenced(i) or m.group("tag") != tag:
            continue
        number = whole_number(m.group("num"))
        if number is None:
            shown = m.group("num")[:12] + ("..." if len(m.group("num")) > 12 else "")
            raise file.error(i, f"{tag}-{shown}: N must be a whole number (ASCII digits)")
        entry = _log_entry(file, i, number, m.group("rest"), kinds)
        if entry.number in first:
            raise file.error(
                i, f"duplicate {tag}-{entry.number} (first at line {first[entry.number]})"
            )
        first[entry.number] = i + 1
        entries.append(entry)
    return entries


def _log_entry(
    file: TextFile, index: int, number: int, rest: str, kinds: dict[str, tuple[str, ...]]
) -> LogEntry:
    kind_m = re.match(r"\s+([a-z_]+)", rest)
    if kind_m is None or kind_m.group(1) not in kinds:
        raise file.error(
            index, _enum_error("entry kind", (kind_m.group(1) if kind_m else ""), list(kinds))
        )
    kind, pos = kind_m.group(1), kind_m.end()
    fields: dict[str, str] = {}
    text = ""
    while pos < len(rest):
        fm = _LOG_FIELD.match(rest, pos)
        if fm is None:
            raise file.error(index, f"expected 'key=value' at {rest[pos:].strip()[:30]!r}")
        key = fm.group(1)
        if key in TAIL_KEYS:
            text = rest[fm.end() :].strip()
            fields[key] = text
            break
        vm = re.compile(r"\S*").match(rest, fm.end())
        assert vm is not None
        fields[key], pos = vm.group(0), vm.end()
    missing = [k for k in kinds[kind] if not fields.get(k)]
    if missing:
        raise file.error(index, f"{kind} entry needs {', '.join(k + '=' for k in missing)}")
    return LogEntry(number, kind, fields, text, index + 1)


# -- plan.md / brief.md ----------------------------------------------------------------


def parse_plan(file: TextFile, item_ids: set[str], whole_for: str | None) -> dict[str, PlanSection]:
    """The sections headed ``ID: title`` for known items. ``whole_for``: an item that the
    whole file describes when it has no section of its own (the one item of a small task)."""
    sections: dict[str, PlanSection] = {}
    heads = file.headings()
    for n, (start, level, title) in enumerate(heads):
        m = _PLAN_HEADING.match(title.strip())
        if m is None or m.group("id") not in item_ids:
            continue
        item = m.group("id")
        if item in sections:
            raise file.error(
                start, f"second plan section for {item} (first at line {sections[item].line})"
            )
        end = next((i for i, lvl, _ in heads[n + 1 :] if lvl <= level), len(file))
        sections[item] = _section(file, item, start, end)
    if whole_for is not None and whole_for not in sections:
        sections[whole_for] = _section(file, whole_for, 0, len(file))
    return sections


def _section(file: TextFile, item: str, start: int, end: int) -> PlanSection:
    blocks: list[tuple[int, str]] = []
    for fence in file.fences:
        if not start <= fence.open < end or fence.info != "tidegate":
            continue
        if fence.close is None or fence.close >= end:
            raise file.error(fence.open, "```tidegate block opened here is never closed")
        body = file.lines[fence.open + 1 : fence.close]
        blocks.append((fence.open + 2, "".join(line + "\n" for line in body)))
    verify = depends = None
    for i in range(start, end):
        if file.fenced(i):
            continue
        vm, dm = _VERIFY.match(file.lines[i]), _DEPENDS.match(file.lines[i])
        if vm and verify is None:
            verify = vm.group("cmd").strip().strip("`").strip()
        if dm and depends is None:
            depends = tuple(d for d in re.split(r"[\s,]+", dm.group("ids")) if d and d not in NONE)
    return PlanSection(
        item=item,
        line=start + 1,
        digest=digest(file.lines[start:end]),
        edit_blocks=tuple(blocks),
        verify=verify or None,
        depends_on=depends or (),
    )


# -- review-report.md, roadmap.md ------------------------------------------------------


def parse_review(file: TextFile) -> ReviewReport:
    keys = key_lines(file, {"verdict", "refs"}, file.preamble_end())
    if "verdict" not in keys:
        raise file.error(
            0, "missing 'Verdict:' line (pending, approved, changes_requested, blocked)"
        )
    line = keys["verdict"]
    try:
        verdict = Verdict(line.value.strip())
    except ValueError:
        raise file.error(
            line.index, _enum_error("verdict", line.value, [v.value for v in Verdict])
        ) from None
    raw = keys["refs"].value if "refs" in keys else ""
    refs = tuple(r for r in re.split(r"[\s,]+", raw) if r and r.lower() not in NONE)
    return ReviewReport(verdict, refs, line.index + 1)


def parse_roadmap(file: TextFile) -> tuple[str, ...]:
    found: dict[str, int] = {}
    for index, level, title in file.headings():
        m = _PLAN_HEADING.match(title.strip())
        if level != 2 or m is None:
            continue
        if m.group("id") in found:
            raise file.error(
                index,
                f"milestone {m.group('id')} listed twice (first at line {found[m.group('id')]})",
            )
        found[m.group("id")] = index + 1
    return tuple(found)
