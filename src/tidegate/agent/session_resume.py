"""A session continued from its checkpoint (format ``tidegate.agent/1``).

:func:`resume_session` refuses a checkpoint whose prompt contract or workspace differs,
restores every counter (optionally under larger limits), never runs a recorded call
again, and starts from the task plus a host-written summary of the evidence: when that
evidence already completes the task, the first request offers no tools at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec.structs import replace

from tidegate.agent.compaction import context_summary
from tidegate.agent.evidence import EvidenceLedger
from tidegate.agent.guards import GuardLimits, LoopGuards
from tidegate.agent.session import FORMAT, AgentSession
from tidegate.agent.session_options import FINALIZE_NOTE, ResumeRefused, SessionOptions
from tidegate.agent.transcript import Transcript
from tidegate.models.messages import UserMessage
from tidegate.prompt import PromptHashes, require_resume_compatible
from tidegate.tools.executor import ToolExecutor


def resume_session(
    saved: Mapping[str, Any],
    *,
    limits: GuardLimits | None = None,
    completed: set[str] | None = None,
    **kwargs: Any,
) -> AgentSession:
    """Continue from checkpoint state ``saved``; ``kwargs`` are :class:`AgentSession`'s.
    ``limits`` replaces the recorded guard limits (a larger budget) while every counter is
    kept; ``completed`` adds record ids the store knows finished
    (``StoreRecorder.completed_tool_calls``)."""
    if saved.get("format") != FORMAT:
        raise ResumeRefused(f"cannot resume: not an agent checkpoint ({saved.get('format')!r})")
    executor: ToolExecutor = kwargs["executor"]
    executor.registry.activate(saved["active_tools"])
    guards = LoopGuards.from_json(str(saved["guards"]), limits)
    options: SessionOptions = kwargs.pop("options")
    options = replace(
        options,
        run_id=str(saved["run_id"]),
        phase=str(saved["phase"]),
        guard_limits=guards.limits,
    )
    session = AgentSession(
        options=options,
        guards=guards,
        ledger=EvidenceLedger.from_json(str(saved["ledger"])),
        transcript=Transcript.from_json(saved["transcript"]),
        **kwargs,
    )
    _require_resumable(session, saved)
    _restore_counters(session, saved["counters"], completed)
    _open_resumed(session, saved)
    return session


def _require_resumable(s: AgentSession, saved: Mapping[str, Any]) -> None:
    """Refuse a checkpoint whose prompt contract or workspace differs from this one."""
    require_resume_compatible(PromptHashes(**saved["hashes"]), s.hashes)
    recorded = saved.get("workspace_fingerprint")
    if recorded is not None:
        current = s.fingerprint()
        if current != recorded:
            raise ResumeRefused(
                "cannot resume: the workspace changed since the checkpoint "
                f"({str(recorded)[:19]} then, {current[:19]} now)"
            )


def _restore_counters(
    s: AgentSession, counters: Mapping[str, Any], completed: set[str] | None
) -> None:
    s.seq = int(counters["seq"])
    s.state_base = int(counters["state_version"])
    s.workspace_version = int(counters["workspace_version"])
    s.compactions = int(counters["compactions"])
    s.inspections = int(counters["inspections"])
    s.completed = s.transcript.completed_ids() | (completed or set())
    s.finalizing = "resumed with completion evidence" if s.evidence_ready() else None


def _open_resumed(s: AgentSession, saved: Mapping[str, Any]) -> None:
    """Start the resumed conversation from a host-written summary of the evidence, and
    record the resume."""
    heading = "The session resumes from a checkpoint; earlier turns are not repeated."
    summary = context_summary(
        s.transcript,
        s.ledger,
        expect_changes=s.expect_changes,
        heading=heading,
    )
    if s.finalizing:
        summary += "\n" + FINALIZE_NOTE.format(reason=s.finalizing) + "\n"
    s.messages.append(UserMessage(summary))
    s.event(
        "agent.resumed",
        {**s.started_facts(), "checkpoint_reason": saved.get("reason")},
        {"runtime": s.runtime().to_json()},
    )
