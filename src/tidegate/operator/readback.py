"""The read-only audit surfaces: each builds a view from what is persisted under a state
root, in a fixed order, and fails with one line on missing, malformed, symlinked or
tampered data. None of them writes, repairs, resumes or runs anything."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tidegate.operator.context import terminal_continuity
from tidegate.operator.errors import RecordError
from tidegate.operator.goals import TOP, load_register, ranked
from tidegate.operator.handoff import check_metadata, read_handoff
from tidegate.operator.improvement import latest_decision
from tidegate.operator.meeting import ORDER, meetings
from tidegate.operator.records import EVIDENCE_FILE, MEMORY_FILE, load_records
from tidegate.operator.review import latest_artifact


def _record_counts(root: Path, mode: str, handoff_body: dict[str, Any]) -> dict[str, Any]:
    memory = load_records(root, MEMORY_FILE, "memory", missing_ok=False)
    evidence = load_records(root, EVIDENCE_FILE, "evidence", missing_ok=False)
    counts: dict[str, Any] = {
        "handoff_memory_records": len(handoff_body["memory"]),
        "handoff_evidence_records": len(handoff_body["evidence"]),
        "stored_memory_records": sum(1 for r in memory if r.get("mode") == mode),
        "stored_evidence_records": sum(1 for r in evidence if r.get("mode") == mode),
    }
    stored_last = [r for r in evidence if r.get("mode") == mode][-len(handoff_body["evidence"]) :]
    if handoff_body["evidence"] and stored_last != handoff_body["evidence"]:
        counts["note"] = (
            "the standalone record files disagree with the handoff's snapshot; "
            "the handoff's values are shown"
        )
    return counts


def engineer_read(root: Path, topology: str) -> dict[str, Any]:
    handoff = read_handoff(root, "engineer")
    body = handoff.body
    summary = body.get("summary")
    if not isinstance(summary, dict) or not all(
        isinstance(summary.get(k), dict)
        for k in ("repo_grounding", "carried_context", "action", "verification")
    ):
        raise RecordError(f"{handoff.path}: malformed engineer summary")
    if body["selection"].get("topology") != topology:
        raise RecordError(
            f"{handoff.path}: recorded for topology {body['selection'].get('topology')!r}, "
            f"not {topology!r}"
        )
    meetings(root, missing_ok=False)  # carried meeting state must still be valid records
    counts = _record_counts(root, "engineer", body)
    return {
        "selection": body["selection"],
        "handoff": {
            "file": handoff.path.name,
            "compatibility_fallback": handoff.fallback,
            "session_phase": body["session_phase"],
            "objective": check_metadata(body["objective_metadata"], handoff.path),
            "written_at_unix_ms": body.get("written_at_unix_ms"),
        },
        "repo_grounding": summary["repo_grounding"],
        "carried_context": summary["carried_context"],
        "terminal_continuity": terminal_continuity(root, strict=True),
        "action": summary["action"],
        "verification": summary["verification"],
        "records": counts,
    }


def meeting_read(root: Path) -> dict[str, Any]:
    recorded = meetings(root, missing_ok=False)
    if not recorded:
        raise RecordError(f"{root / MEMORY_FILE}: no meeting record yet")
    latest = recorded[-1]
    value = latest["value"]
    view: dict[str, Any] = {name: value[name] for name in ORDER}
    view["record"] = {
        "created_at_unix_ms": latest.get("created_at_unix_ms"),
        "source": latest.get("source"),
        "meetings_recorded": len(recorded),
    }
    return view


def goals_read(root: Path) -> dict[str, Any]:
    register = load_register(root)
    goals = register["goals"]
    return {
        "active_top": ranked(goals, "active")[:TOP],
        "backlog": {s: ranked(goals, s) for s in ("active", "proposed", "done", "dropped")},
        "changes": register["changes"],
    }


def improvement_read(root: Path) -> dict[str, Any]:
    path, artifact = latest_artifact(root)
    decision = latest_decision(root)
    goals = load_register(root)["goals"]
    return {
        "review_artifact": {"file": path.name, "run_id": artifact["run_id"]},
        "approved": decision["value"]["approved"],
        "deferred": decision["value"]["deferred"],
        "active_goals": ranked(goals, "active")[:TOP],
        "proposed_goals": ranked(goals, "proposed"),
        "latest_decision": decision,
    }


def review_read(root: Path) -> dict[str, Any]:
    path, artifact = latest_artifact(root)
    return {
        "artifact": path.name,
        "run_id": artifact["run_id"],
        "reviewed_at_unix_ms": artifact["reviewed_at_unix_ms"],
        "selection": artifact.get("selection"),
        "status": artifact.get("status"),
        "findings": artifact["findings"],
        "proposals": artifact["proposals"],
    }


def terminal_read(root: Path, topology: str) -> dict[str, Any]:
    """The latest terminal session, in the fixed order: header, handoff, adapter, shell,
    steps and checkpoints, transcript, continuation guidance, record counts."""
    handoff = read_handoff(root, "terminal")
    body = handoff.body
    summary = body.get("summary")
    needed = ("shell", "counts", "steps", "checkpoints", "last_output_line", "transcript_preview")
    if not isinstance(summary, dict) or any(k not in summary for k in needed):
        raise RecordError(f"{handoff.path}: malformed terminal summary")
    if not isinstance(summary["steps"], list) or not all(
        isinstance(s, dict) for s in summary["steps"]
    ):
        raise RecordError(f"{handoff.path}: malformed terminal steps")
    if body["selection"].get("topology") != topology:
        raise RecordError(
            f"{handoff.path}: recorded for topology {body['selection'].get('topology')!r}, "
            f"not {topology!r}"
        )
    view: dict[str, Any] = {
        "selection": body["selection"],
        "handoff": {
            "file": handoff.path.name,
            "compatibility_fallback": handoff.fallback,
            "session_phase": body["session_phase"],
            "objective": check_metadata(body["objective_metadata"], handoff.path),
            "written_at_unix_ms": body.get("written_at_unix_ms"),
        },
        "adapter": {
            "implementation": body["selection"].get("implementation"),
            "recipe": summary.get("recipe"),
            "working_directory": summary.get("working_directory"),
        },
        "shell": summary["shell"],
        "audit": {
            "counts": summary["counts"],
            "steps": summary["steps"],
            "checkpoints": summary["checkpoints"],
            "outcome": summary.get("outcome"),
            "failure": summary.get("failure"),
        },
        "transcript": {
            "last_output_line": summary["last_output_line"],
            "preview": summary["transcript_preview"],
            "file": summary.get("transcript_file"),
        },
    }
    if isinstance(summary.get("agent"), dict):
        view["agent_submit"] = summary["agent"]
    view["next_step"] = summary.get("next_step")
    view["records"] = _record_counts(root, "terminal", body)
    return view
