"""The goal register: every goal ever named, its current state, and every change that got
it there, so that a read shows how the register came to be.

A goal is keyed by its title (case and surrounding space ignored). Updates come from
meeting goal lines, goal-curation objectives and approved improvement proposals; each
update that changes something appends one change record. The active top five are the
``active`` goals by priority (1 first), ties broken by title and then id, so the list is
the same on every machine.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from tidegate.disk.faults import maybe_crash
from tidegate.operator.errors import OperatorError, RecordError
from tidegate.operator.meeting import GOAL_STATUSES, parse_goal
from tidegate.operator.records import (
    FAULT_READ_MODIFY_WRITE,
    GOALS_FILE,
    load_document,
    now_ms,
    records_locked,
    schema_name,
    write_json,
)
from tidegate.text.sanitize import redact

TOP = 5
_FIELDS = ("priority", "status", "rationale")


def goal_id(title: str) -> str:
    """The id of the goal titled ``title``, derived from the title as the register stores
    it (a secret-shaped part redacted, as every record is written), so that the stored
    record's id checks against its stored title."""
    stored = redact(title.strip()).strip()
    return "goal-" + hashlib.sha256(stored.lower().encode()).hexdigest()[:10]


def load_register(root: Path) -> dict[str, Any]:
    path = root / GOALS_FILE
    if not path.exists() and not path.is_symlink():
        return {"schema": schema_name("goals"), "goals": [], "changes": []}
    register = load_document(path, "goals")
    goals, changes = register.get("goals"), register.get("changes")
    if not isinstance(goals, list) or not isinstance(changes, list):
        raise RecordError(f"{path}: malformed goal register")
    for goal in goals:
        if (
            not isinstance(goal, dict)
            or not isinstance(goal.get("title"), str)
            or goal.get("status") not in GOAL_STATUSES
            or not isinstance(goal.get("priority"), int)
            or goal.get("id") != goal_id(goal["title"])
        ):
            raise RecordError(f"{path}: malformed goal record {goal!r:.80}")
    return register


def apply_updates(root: Path, updates: list[dict[str, Any]], source: str) -> list[dict[str, Any]]:
    """Merge goal updates into the register (under the state root's record lock, so a
    concurrent update is never lost); returns the change records it appended."""
    with records_locked(root):
        return _merge(root, updates, source)


def _merge(root: Path, updates: list[dict[str, Any]], source: str) -> list[dict[str, Any]]:
    register = load_register(root)
    by_id = {g["id"]: g for g in register["goals"]}
    appended: list[dict[str, Any]] = []
    for update in updates:
        gid = goal_id(update["title"])
        before = dict(by_id[gid]) if gid in by_id else None
        after = dict(before or {"id": gid, "title": redact(update["title"].strip()).strip()})
        after.update({k: update[k] for k in _FIELDS})
        if before is not None and all(before.get(k) == after[k] for k in _FIELDS):
            continue
        after["updated_at_unix_ms"] = now_ms()
        after["source"] = source
        by_id[gid] = after
        change = {"goal_id": gid, "source": source, "at_unix_ms": now_ms()}
        change["before"] = None if before is None else {k: before[k] for k in _FIELDS}
        change["after"] = {k: after[k] for k in _FIELDS}
        appended.append(change)
    if appended:
        register["goals"] = sorted(by_id.values(), key=lambda g: g["id"])
        register["changes"] = [*register["changes"], *appended]
        maybe_crash(FAULT_READ_MODIFY_WRITE)
        write_json(root / GOALS_FILE, register)
    return appended


def parse_goal_objective(text: str) -> list[dict[str, Any]]:
    """A goal-curation objective: ``goal:`` lines (blank lines and ``#`` comments ignored)."""
    updates = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, colon, value = line.partition(":")
        if key.strip() != "goal" or not colon:
            raise OperatorError(f"objective line {number}: expected 'goal: Title | priority=N ...'")
        updates.append(parse_goal(value.strip(), f"objective line {number}"))
    if not updates:
        raise OperatorError("the goal-curation objective holds no goal line")
    return updates


def ranked(goals: list[dict[str, Any]], status: str) -> list[dict[str, Any]]:
    chosen = [g for g in goals if g["status"] == status]
    return sorted(chosen, key=lambda g: (g["priority"], g["title"].lower(), g["id"]))


def active_top(root: Path) -> list[dict[str, Any]]:
    return ranked(load_register(root)["goals"], "active")[:TOP]
