"""What a dispatch records in the parent's trace: its start and, in a read-only parent,
the forced dry run and the tools filtered out (both before the sub-agent exists); a
refusal with its code; how the sub-agent's run finished. ``depth`` is the sub-agent's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tidegate.agent.session_tools import SessionToolRun
from tidegate.agent.sub_result import error_result
from tidegate.agent.sub_settings import TIDEGATE
from tidegate.tools.calls import ToolCall as HostCall
from tidegate.tools.calls import ToolResult as HostResult

if TYPE_CHECKING:
    from tidegate.agent.session import AgentSession
    from tidegate.agent.sub_profile import FilteredProfile

FORCED_ISOLATED = "sub_agent.dispatch.read_only_forced_isolated"
TOOL_GUARD_FILTERED = "sub_agent.dispatch.read_only_tool_guard_filtered"


def refused(
    session: AgentSession, call: HostCall, depth: int, code: str, why: str, started: float
) -> SessionToolRun:
    """The refusal recorded, and the error result the model sees."""
    session.event(
        "sub_agent.dispatch.refused",
        {"call_id": call.call_id, "depth": depth, "code": code},
        {"reason": why[:300]},
    )
    return SessionToolRun(error_result(call, code, why, started, retryable=False))


def dispatch_started(
    session: AgentSession,
    call: HostCall,
    depth: int,
    agent: str,
    profile: FilteredProfile,
    read_only: bool,
) -> None:
    """The trace says what was enforced before the sub-agent exists."""
    base = {"call_id": call.call_id, "depth": depth, "agent": agent}
    session.event(
        "sub_agent.dispatch.started",
        {**base, "read_only": read_only, "workspace_strategy": "isolated-copy"},
    )
    if not read_only:
        return
    session.event(
        FORCED_ISOLATED,
        {
            **base,
            "dry_run": True,
            "workspace_strategy": "isolated-copy",
            "parent_phase": session.phase,
            "enforced_by": "filtered tools + write access denied"
            if agent == TIDEGATE
            else "read-only containment of its tree",
        },
    )
    session.event(
        TOOL_GUARD_FILTERED,
        {
            **base,
            "removed": list(profile.removed),
            "kept": list(profile.kept),
            "reasons": [f"{t}: {why}" for t, why in profile.why],
        },
    )


def dispatch_finished(
    session: AgentSession, call: HostCall, depth: int, result: HostResult
) -> None:
    out = result.output or {}
    session.event(
        "sub_agent.dispatch.finished",
        {
            "call_id": call.call_id,
            "depth": depth,
            "agent": out.get("agent"),
            "status": out.get("status"),
            "diff_sha256": out.get("diff_sha256"),
            "changed_paths": out.get("changed_paths"),
        },
        {"duration_ms": round(result.duration_ms)},
    )
