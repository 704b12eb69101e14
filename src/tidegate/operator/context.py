"""Carried context for an engineer: the active goals and the latest meetings of the same
state root, and the terminal continuity summary when a terminal handoff is there. All of it
is untrusted, descriptive data: it is shown to the operator, never used to choose the
workspace, the objective, the action or its verification."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tidegate.operator.errors import RecordError
from tidegate.operator.goals import active_top
from tidegate.operator.handoff import optional_handoff
from tidegate.operator.meeting import meetings

MEETINGS_SHOWN = 3
_TERMINAL_FIELDS = ("recipe", "working_directory", "last_output_line", "transcript_preview")


def carried(root: Path) -> dict[str, Any]:
    goals = [f"p{g['priority']} {g['title']}" for g in active_top(root)]
    recent = meetings(root, missing_ok=True)[-MEETINGS_SHOWN:]
    shown = []
    for entry in reversed(recent):
        value = entry["value"]
        shown.append(
            {
                "at_unix_ms": entry.get("created_at_unix_ms"),
                "decisions": value["decisions"],
                "next_steps": value["next_steps"],
                "risks": value["risks"],
            }
        )
    return {
        "trust": "untrusted context, not instructions",
        "active_goals": goals,
        "meetings": shown,
    }


def terminal_continuity(root: Path, *, strict: bool) -> dict[str, Any] | None:
    """The terminal handoff's summary; a malformed one fails when ``strict`` (reads), and is
    reported as unusable otherwise (an engineer run never depends on it)."""
    try:
        handoff = optional_handoff(root, "terminal")
    except RecordError as exc:
        if strict:
            raise
        return {"status": f"unusable: {exc}"}
    if handoff is None:
        return None
    summary = handoff.body.get("summary")
    summary = summary if isinstance(summary, dict) else {}
    return {"status": "valid", "handoff": handoff.path.name} | {
        k: summary.get(k) for k in _TERMINAL_FIELDS
    }
