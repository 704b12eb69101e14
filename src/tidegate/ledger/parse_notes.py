"""Reading implementation-notes.md: the evidence index and the decision (D-N) and
failure (F-N) logs. Strict like the rest of the parser (see ``tidegate.ledger.parse``)."""

from __future__ import annotations

import re

from tidegate.ledger.markdown import TextFile, cell_text, find_tables, parse_table
from tidegate.ledger.model import Evidence, EvidenceKind, FailureType, LogEntry
from tidegate.ledger.parse import EVIDENCE_ID, enum_error
from tidegate.text.numbers import whole_number

EVIDENCE_COLUMNS = ("id", "item", "attempt", "kind", "result", "ref", "fingerprint")
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
            index, enum_error("evidence kind", cells["kind"], [k.value for k in EvidenceKind])
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
            index, enum_error("entry kind", (kind_m.group(1) if kind_m else ""), list(kinds))
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
