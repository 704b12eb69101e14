"""Meeting mode: capture an agenda, updates, decisions, risks, next steps, open questions
and goal lines from a structured objective, as one durable meeting record. It never
touches a repository.

Lines (blank lines and ``#`` comments are ignored; anything else is refused by number)::

    agenda: ...        update: ...        decision: ...
    risk: ...          next-step: ...     open-question: ...
    goal: Title | priority=1 | status=active | rationale=why
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tidegate.operator.errors import OperatorError, RecordError
from tidegate.operator.records import (
    MEMORY_FILE,
    append_records,
    load_records,
    memory_record,
)
from tidegate.text.numbers import whole_number

FIELDS = {
    "agenda": "agenda",
    "update": "updates",
    "decision": "decisions",
    "risk": "risks",
    "next-step": "next_steps",
    "open-question": "open_questions",
}
ORDER = ("agenda", "updates", "decisions", "risks", "next_steps", "open_questions", "goals")
GOAL_STATUSES = ("active", "proposed", "done", "dropped")
MEETING_KIND = "meeting-decision"
_LINE = re.compile(r"^([a-z-]+):\s*(.*)$")


def parse_goal(text: str, where: str) -> dict[str, Any]:
    """``Title | priority=N | status=S | rationale=...`` -> a goal update."""
    parts = [p.strip() for p in text.split("|")]
    title = parts[0]
    if not title:
        raise OperatorError(f"{where}: a goal needs a title before the first '|'")
    goal: dict[str, Any] = {"title": title, "priority": None, "status": "proposed", "rationale": ""}
    for part in parts[1:]:
        key, eq, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not eq:
            raise OperatorError(f"{where}: goal field {part!r} is not key=value")
        if key == "priority":
            goal["priority"] = whole_number(value, 1, 1000)
            if goal["priority"] is None:
                raise OperatorError(f"{where}: priority must be a whole number from 1 to 1000")
        elif key == "status":
            if value not in GOAL_STATUSES:
                raise OperatorError(f"{where}: status must be one of {', '.join(GOAL_STATUSES)}")
            goal["status"] = value
        elif key == "rationale":
            goal["rationale"] = value
        else:
            raise OperatorError(
                f"{where}: unknown goal field {key!r} (priority, status, rationale)"
            )
    if goal["priority"] is None:
        raise OperatorError(f"{where}: a goal needs priority=N")
    return goal


def parse_meeting(text: str) -> dict[str, Any]:
    record: dict[str, Any] = {name: [] for name in ORDER}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _LINE.match(line)
        where = f"objective line {number}"
        if match is None or (match.group(1) not in FIELDS and match.group(1) != "goal"):
            raise OperatorError(
                f"{where}: expected one of {', '.join([*FIELDS, 'goal'])} followed by ':'"
            )
        key, value = match.group(1), match.group(2).strip()
        if not value:
            raise OperatorError(f"{where}: {key}: needs text")
        if key == "goal":
            record["goals"].append(parse_goal(value, where))
        else:
            record[FIELDS[key]].append(value)
    if not any(record[name] for name in ORDER):
        raise OperatorError("the meeting objective holds no structured line")
    return record


def record_meeting(root: Path, record: dict[str, Any], source: str) -> dict[str, Any]:
    entry = memory_record("meeting", MEETING_KIND, "meeting-record", record, source)
    append_records(root, MEMORY_FILE, "memory", [entry])
    return entry


def is_meeting_record(entry: dict[str, Any]) -> bool:
    return entry.get("kind") == MEETING_KIND


def check_meeting(entry: dict[str, Any], path: Path) -> dict[str, Any]:
    value = entry.get("value")
    if not isinstance(value, dict) or set(value) != set(ORDER):
        raise RecordError(f"{path}: a meeting record is malformed")
    for name in ORDER[:-1]:
        if not isinstance(value[name], list) or not all(isinstance(v, str) for v in value[name]):
            raise RecordError(f"{path}: meeting record field {name!r} is malformed")
    if not isinstance(value["goals"], list) or not all(isinstance(g, dict) for g in value["goals"]):
        raise RecordError(f"{path}: meeting record goals are malformed")
    return entry


def meetings(root: Path, *, missing_ok: bool) -> list[dict[str, Any]]:
    """Every persisted meeting record, oldest first, each validated."""
    path = root / MEMORY_FILE
    entries = load_records(root, MEMORY_FILE, "memory", missing_ok=missing_ok)
    return [check_meeting(e, path) for e in entries if is_meeting_record(e)]
