"""The store's side of a run: ``StoreRecorder`` (the engine's ``RunRecorder``, and the
``ports.Recorder`` the agent loop writes through) and the verified ``ResumeTicket`` that
``tidegate resume`` starts from.

The recorder numbers trace events as they come, and at every checkpoint flushes them with
the checkpoint in one transaction. The final report is stored with the replay hash of the
whole trace (every execution of the run), and only an acknowledged report counts.

Tool calls (for the agent loop): ``tool_call_requested`` is buffered like any event;
``tool_call_finished`` flushes at once, so a write's effects are durable before the loop
goes on, and ``tool_calls`` (also in every checkpoint) tells a resumed loop which calls
already ran, so a recorded write is never executed twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tidegate.errors import UsageError
from tidegate.records.report import FlowReport
from tidegate.records.resume import ResumeTicket
from tidegate.store.checkpoints import Checkpoint, verify_committed
from tidegate.store.corrupt import CorruptRecord
from tidegate.store.db import RESUMABLE, TERMINAL, RunStart, RunStore
from tidegate.store.ports import Recorder
from tidegate.store.replay import replay_hash
from tidegate.store.trace import Trace, TraceEvent, new_execution_id

TOOL_STATUSES = frozenset({"succeeded", "failed", "denied", "unknown"})


class StoreRecorder(Recorder):
    """Records one run (one execution of it) in a ``RunStore``."""

    def __init__(
        self,
        store: RunStore,
        *,
        task_id: str | None = None,
        kind: str = "engine",
        pausable: bool = True,
    ) -> None:
        self.store = store
        self.task_id = task_id
        self.kind = kind
        self.pausable = pausable
        self.trace: Trace | None = None
        self.last_checkpoint: Checkpoint | None = None

    @property
    def run_id(self) -> str:
        return self._trace().run_id

    def _trace(self) -> Trace:
        if self.trace is None:
            raise RuntimeError("the recorder has not begun a run")
        return self.trace

    def begin(
        self, run_id: str, repo: str, mode: str, request: Mapping[str, object], *, resumed: bool
    ) -> None:
        execution = new_execution_id()
        task = self.task_id or run_id
        first = self.store.begin_run(
            RunStart(run_id, repo, task, mode, execution, self.kind, request), resumed=resumed
        )
        self.trace = Trace(run_id, task, execution, first_seq=first)
        self.last_checkpoint = None  # a recorder may record one run after another (a rebase)

    def event(
        self,
        kind: str,
        *,
        attempt: int | None = None,
        phase: str | None = None,
        payload: Mapping[str, object] | None = None,
        meta: Mapping[str, object] | None = None,
    ) -> None:
        self._trace().append(kind, attempt=attempt, phase=phase, payload=payload, meta=meta)

    def flush(self) -> None:
        """Make every buffered event durable now."""
        trace = self._trace()
        pending = trace.pending()
        if pending:
            self.store.flush(trace.run_id, pending)
            trace.mark_flushed(pending[-1].seq)

    def checkpoint(self, reason: str, state: Mapping[str, object]) -> None:
        trace = self._trace()
        trace.append("checkpoint", payload={"reason": reason})
        pending = trace.pending()
        self.last_checkpoint = self.store.flush(trace.run_id, pending, checkpoint=(reason, state))
        trace.mark_flushed(pending[-1].seq)

    def finish(self, report: FlowReport) -> FlowReport:
        if self.trace is None:  # refused before it began (lock, bootstrap): no trace yet
            self.trace = Trace(report.run_id, self.task_id or report.run_id, new_execution_id())
        trace = self.trace
        trace.append(
            "run.finished",
            payload={
                "status": report.status,
                "error_class": report.error_class,
                "failure_phase": report.failure_phase,
                "attempts": report.attempts,
                "diff_sha256": report.diff_sha256,
                "changed": [
                    [f.path, f.action, f.before_sha256, f.after_sha256]
                    for f in report.changed_files
                ],
            },
            meta={"duration_ms": round(report.duration_s * 1000), "message": report.message},
        )
        pending = trace.pending()
        earlier = [e for e in self._stored_events(trace.run_id) if e.seq < pending[0].seq]
        hashed = report.model_copy(update={"replay_hash": replay_hash([*earlier, *pending])})
        stored = self.store.finish(trace.run_id, hashed, pending)
        trace.mark_flushed(pending[-1].seq)
        return stored

    def _stored_events(self, run_id: str) -> list[TraceEvent]:
        return self.store.events(run_id)

    # -- tool calls ---------------------------------------------------------------------

    def tool_call_requested(
        self,
        tool_call_id: str,
        canonical_tool: str,
        input_sha256: str,
        *,
        attempt: int | None = None,
    ) -> None:
        self._trace().append(
            "tool.requested",
            attempt=attempt,
            tool_call_id=tool_call_id,
            payload={"canonical_tool": canonical_tool, "input_sha256": input_sha256},
        )

    def tool_call_finished(
        self,
        tool_call_id: str,
        status: str,
        effects: Mapping[str, object] | None,
        *,
        result_sha256: str | None = None,
        attempt: int | None = None,
    ) -> None:
        """Record how a call ended (``succeeded``, ``failed``, ``denied``, ``unknown``) with
        its host-attested effects, durably, before the caller goes on."""
        if status not in TOOL_STATUSES:
            raise ValueError(f"unknown tool call status {status!r}")
        self._trace().append(
            "tool.finished",
            attempt=attempt,
            tool_call_id=tool_call_id,
            payload={
                "status": status,
                "effects": dict(effects) if effects is not None else None,
                "result_sha256": result_sha256,
            },
        )
        self.flush()

    def tool_calls(self) -> list[dict[str, object]]:
        """Every recorded tool call of the run, in request order, with its status
        (``requested`` means dispatched but never finished: an unknown outcome).
        ``tool_call_finished`` flushes at once, so every finished call is here."""
        return [
            {
                "tool_call_id": c.tool_call_id,
                "canonical_tool": c.canonical_tool,
                "input_sha256": c.input_sha256,
                "status": c.status,
                "effects": c.effects,
                "result_sha256": c.result_sha256,
            }
            for c in self.store.tool_calls(self.run_id)
        ]

    def completed_tool_calls(self) -> list[dict[str, object]]:
        """The finished ones of ``tool_calls``."""
        return [c for c in self.tool_calls() if c["status"] != "requested"]


def resume_ticket(store: RunStore, run_id: str) -> ResumeTicket:
    """The run's last checkpoint, after checking the run can resume and its whole
    checkpoint chain verifies (``CheckpointRefused`` otherwise)."""
    run = store.get(run_id)
    if run.problem is not None:
        raise CorruptRecord(
            f"cannot resume run {run.run_id}: it is corrupt in the store: {run.problem}"
        )
    if run.status in TERMINAL:
        raise UsageError(f"run {run.run_id} already ended ({run.status}); nothing to resume")
    if run.status not in RESUMABLE:
        holder = run.holder
        where = "?" if holder is None else str(holder.pid)
        if holder is not None and not holder.local():
            where += f" on host {holder.host}"
        raise UsageError(
            f"run {run.run_id} is still running (pid {where}); Ctrl-C pauses it, then resume it"
        )
    if run.kind == "ledger":
        raise UsageError(
            f"run {run.run_id} belongs to ledger item {run.task_id}; continue it with "
            "`tidegate ledger run` (which records its evidence), not `tidegate resume`"
        )
    if run.kind in ("tools", "mcp"):
        raise UsageError(
            f"run {run.run_id} is a `tidegate {'tools call' if run.kind == 'tools' else 'mcp serve'}`"
            " record: tool runs keep no checkpoints and cannot be resumed (`tidegate read` "
            "shows which calls finished)"
        )
    checkpoints = store.checkpoints(run.run_id)
    head = store.checkpoint_head(run.run_id)
    if not checkpoints and head is None:
        raise UsageError(f"run {run.run_id} has no checkpoint to resume from")
    if store.key is None:
        raise UsageError(f"no checkpoint key in the state root; cannot verify run {run.run_id}")
    verify_committed(run.run_id, checkpoints, head, store.key)
    store.events(run.run_id)  # a corrupt trace is named here, before anything continues it
    last = checkpoints[-1]
    state: dict[str, Any] = last.state
    return ResumeTicket(
        run_id=run.run_id,
        task_id=run.task_id,
        status=run.status,
        checkpoint_seq=last.seq,
        checkpoint_hash=last.hash,
        state=state,
    )
