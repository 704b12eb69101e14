"""Improvement curation: approve or defer the proposals of the latest review artifact.

Objective lines::

    approve: prop-0123456789ab | priority=2
    defer: prop-ba9876543210 | reason=needs a design first

Approved proposals become active goals at their priority; deferred ones stay in the
decision record, inspectable. Nothing here changes code. An id that the latest artifact
does not hold is refused before anything is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tidegate.operator.errors import OperatorError, RecordError
from tidegate.operator.goals import apply_updates
from tidegate.operator.records import MEMORY_FILE, append_records, load_records, memory_record
from tidegate.text.numbers import whole_number

DECISION_KIND = "improvement-curation-record"


def parse_decisions(text: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    approved: list[dict[str, Any]] = []
    deferred: list[dict[str, Any]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"objective line {number}"
        verb, colon, rest = line.partition(":")
        if verb not in ("approve", "defer") or not colon:
            raise OperatorError(f"{where}: expected 'approve: ID | priority=N' or 'defer: ID ...'")
        pid, _, option = (p.strip() for p in rest.partition("|"))
        key, eq, value = (p.strip() for p in option.partition("="))
        if not pid:
            raise OperatorError(f"{where}: {verb}: needs a proposal id")
        if verb == "approve":
            priority = whole_number(value, 1, 1000) if key == "priority" and eq else None
            if priority is None:
                raise OperatorError(f"{where}: approve needs '| priority=N' (1-1000)")
            approved.append({"id": pid, "priority": priority})
        else:
            if key != "reason" or not eq or not value:
                raise OperatorError(f"{where}: defer needs '| reason=...'")
            deferred.append({"id": pid, "reason": value})
    if not approved and not deferred:
        raise OperatorError("the improvement-curation objective holds no approve/defer line")
    ids = [d["id"] for d in approved + deferred]
    if len(ids) != len(set(ids)):
        raise OperatorError("a proposal is decided twice in one objective")
    return approved, deferred


def curate(
    root: Path, artifact_path: Path, artifact: dict[str, Any], text: str, source: str
) -> dict[str, Any]:
    approved, deferred = parse_decisions(text)
    proposals = {p["id"]: p for p in artifact["proposals"]}
    unknown = [d["id"] for d in approved + deferred if d["id"] not in proposals]
    if unknown:
        raise OperatorError(
            f"unknown proposal id(s) {', '.join(unknown)}: the latest review artifact "
            f"({artifact_path.name}) holds {', '.join(proposals) or 'none'}"
        )
    updates = [
        {
            "title": proposals[d["id"]]["title"],
            "priority": d["priority"],
            "status": "active",
            "rationale": f"approved proposal {d['id']} of review run {artifact['run_id']}",
        }
        for d in approved
    ]
    changes = apply_updates(root, updates, source)
    decision = {
        "review_run_id": artifact["run_id"],
        "review_artifact": artifact_path.name,
        "approved": [{**d, "title": proposals[d["id"]]["title"]} for d in approved],
        "deferred": [{**d, "title": proposals[d["id"]]["title"]} for d in deferred],
        "goal_changes": len(changes),
    }
    entry = memory_record("improvement-curation", DECISION_KIND, DECISION_KIND, decision, source)
    append_records(root, MEMORY_FILE, "memory", [entry])
    return entry


def latest_decision(root: Path) -> dict[str, Any]:
    path = root / MEMORY_FILE
    entries = load_records(root, MEMORY_FILE, "memory", missing_ok=False)
    decisions = [e for e in entries if str(e.get("key", "")).endswith(DECISION_KIND)]
    if not decisions:
        raise RecordError(f"{path}: no improvement-curation decision record yet")
    latest = decisions[-1]
    value = latest.get("value")
    if not isinstance(value, dict) or not all(
        isinstance(value.get(k), list) for k in ("approved", "deferred")
    ):
        raise RecordError(f"{path}: the latest improvement decision record is malformed")
    return latest
