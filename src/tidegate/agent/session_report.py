"""The final report of a standalone agent session."""

from __future__ import annotations

from typing import Literal, Protocol

from tidegate.agent.session import AgentSession
from tidegate.errors import ErrorClass
from tidegate.records.report import FlowReport


def agent_report(session: AgentSession, outcome: LoopOutcomeLike) -> FlowReport:
    """The final report of a standalone session, for ``StoreRecorder.finish``.

    A paused or cancelled session, and one that failed with a resumable checkpoint
    (persistent context overflow), is reported ``paused`` so ``resume_ticket`` accepts
    it; the error class still says what happened."""
    status: Literal["succeeded", "failed", "paused"] = "failed"
    if outcome.status == "completed":
        status = "succeeded"
    elif outcome.status in ("paused", "cancelled") or outcome.resumable:
        status = "paused"
    error = outcome.error_class.value if outcome.error_class is not None else None
    summary = session.transcript.summary()
    notes = [
        f"{summary['steps']} model request(s), {summary['tool_calls']} tool call(s): "
        + ", ".join(str(t) for t in summary["tool_sequence"]),
    ]
    if outcome.guard:
        notes.append(f"{outcome.status} by the {outcome.guard} guard")
    if outcome.checkpoint:
        notes.append(f"checkpoint {outcome.checkpoint}")
    return FlowReport(
        status=status,
        mode=session.task.mode.value,
        run_id=session.run_id,
        repo=str(session.executor.context.root),
        attempts=1,
        max_attempts=1,
        failure_phase=None if status == "succeeded" else session.phase,
        error_class=error,
        message=outcome.reason or outcome.status,
        fs_mode="read-only" if session.options.read_only else "read-write",
        planner=f"model:{session.model.identity.label}",
        notes=notes,
    )


class LoopOutcomeLike(Protocol):
    """What :func:`agent_report` reads of a ``LoopOutcome`` (kept structural so this module
    does not import the loop)."""

    @property
    def status(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def guard(self) -> str | None: ...
    @property
    def error_class(self) -> ErrorClass | None: ...
    @property
    def checkpoint(self) -> str | None: ...
    @property
    def resumable(self) -> bool: ...
