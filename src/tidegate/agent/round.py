"""One round of tool calls: the batch prechecked, then call by call in the order the model
emitted them -- the guards decide before dispatch, the executor (or the session, for a
session tool) runs the call, and host-attested effects feed the evidence ledger and the
guards. Results go back with their call ids, in emitted order."""

from __future__ import annotations

import msgspec

from tidegate.agent.compaction import render_result, result_summary
from tidegate.agent.guards import (
    Block,
    Decision,
    Finalize,
    Pause,
    Stop,
    mutation_family,
)
from tidegate.agent.guards import ToolCall as GuardCall
from tidegate.agent.session import AgentSession
from tidegate.agent.session_options import phase_tools
from tidegate.agent.transcript import ToolRecord
from tidegate.models.events import ModelResponse
from tidegate.models.messages import ToolCall as ModelCall
from tidegate.models.messages import ToolResult
from tidegate.prompt.hashing import sha256_json, sha256_text
from tidegate.tools.calls import ToolCall as HostCall
from tidegate.tools.calls import ToolOutcomeUnknown
from tidegate.tools.calls import ToolResult as HostResult
from tidegate.tools.effects import EntryStateModel

_STORE_STATUS = {"ok": "succeeded", "denied": "denied", "unknown_outcome": "unknown"}


class RoundCancelled(msgspec.Struct, frozen=True):
    """A call came back cancelled: the round stops and the session ends cancelled."""

    reason: str


class RoundUnknown(msgspec.Struct, frozen=True):
    """A call's outcome is unknown: the round stops and the session ends for good."""

    reason: str


Stopper = Decision | RoundCancelled | RoundUnknown


def state_token(state: EntryStateModel) -> str | None:
    """A typed entry state as the ledger and guards compare it (None: absent)."""
    if state.kind == "missing":
        return None
    if state.kind == "file":
        return state.sha256
    return f"{state.kind}:{state.sha256 or '-'}"


class ToolRound:
    """Runs the tool calls of one model response for a session."""

    def __init__(self, session: AgentSession) -> None:
        self.s = session
        self.settings = session.options.settings

    def run(self, response: ModelResponse) -> Stopper | None:
        s = self.s
        calls = response.tool_calls
        fresh = [c for c in calls if s.record_id(c.id) not in s.completed]
        refusal = self._outside_phase(fresh) or self._session_precheck(fresh)
        host = [_host_call(c) for c in fresh if s.session_tool(c.name) is None]
        if refusal is None and host:
            refusal = s.executor.precheck_batch(host)
        if refusal is not None:
            s.event("agent.batch_refused", {"reason": refusal, "calls": len(calls)})
        results: list[ToolResult] = []
        stop: Stopper | None = None
        try:
            for call in calls:
                if s.record_id(call.id) in s.completed:
                    results.append(
                        self.not_run(
                            call,
                            "already-completed",
                            "not run again: this call already ran before the session "
                            "resumed; its effects are in the host summary",
                        )
                    )
                elif refusal is not None:
                    results.append(self.not_run(call, "refused", f"batch refused: {refusal}"))
                elif stop is not None:
                    s.executor.mark_seen(call.id)
                    why = getattr(stop, "reason", "the round stopped")
                    results.append(self.not_run(call, "skipped", f"not run: {why}"))
                else:
                    result, stop = self._call(call)
                    results.append(result)
        finally:
            s.messages += [response.as_message(), *results]
        return stop

    def _outside_phase(self, calls: list[ModelCall]) -> str | None:
        """A call to a tool the phase does not expose refuses the round before anything
        runs, even when the executor could carry it out."""
        s = self.s
        allowed = phase_tools(s.phase)
        if allowed is None:
            return None
        for call in calls:
            spec = s.executor.registry.spec(call.name)
            if spec is not None and spec.tool_id not in allowed:
                return f"{call.id}: {spec.tool_id} is not available in the {s.phase} phase"
        return None

    def _session_precheck(self, calls: list[ModelCall]) -> str | None:
        """Session-tool calls share the round's id checks with the executor's calls: an id
        used twice in the round, or used before, refuses the round."""
        s = self.s
        ids = [c.id for c in calls]
        for call in calls:
            if s.session_tool(call.name) is None:
                continue
            if ids.count(call.id) > 1:
                return f"duplicate call ids in one round: {call.id}"
            if s.executor.seen(call.id):
                return f"call ids already used: {call.id}"
        return None

    def _call(self, call: ModelCall) -> tuple[ToolResult, Stopper | None]:
        s = self.s
        guard_call = self._guard_call(call)
        decision = s.guards.check_call(guard_call, evidence_complete=s.evidence_complete())
        if isinstance(decision, Block):
            s.executor.mark_seen(call.id)
            reason = f"blocked by the {decision.guard} guard before dispatch: {decision.reason}"
            return self.not_run(call, "blocked", reason), None
        if isinstance(decision, Finalize | Pause | Stop):
            s.executor.mark_seen(call.id)
            return self.not_run(call, "not-run", f"not run: {decision.reason}"), decision
        return self._dispatch(call, guard_call)

    def _guard_call(self, call: ModelCall) -> GuardCall:
        s = self.s
        spec = s.executor.registry.spec(call.name)
        own = s.session_tool(call.name)
        if own is not None:
            return GuardCall(
                tool=own.definition.canonical_id,
                arguments=dict(call.arguments),
                workspace_state=s.workspace_state(),
            )
        family = None
        path = call.arguments.get("path")
        if spec is not None and spec.capture == "target_path" and isinstance(path, str):
            try:
                current = s.executor.context.workspace.state(path)
                token = None if current.kind == "missing" else current.sha256 or current.kind
                family = mutation_family(path, token)
            except Exception:  # a refused path: the executor reports it; no family
                family = None
        return GuardCall(
            tool=spec.tool_id if spec is not None else call.name,
            arguments=dict(call.arguments),
            workspace_state=s.workspace_state(),
            family=family,
        )

    def _dispatch(
        self, call: ModelCall, guard_call: GuardCall
    ) -> tuple[ToolResult, Stopper | None]:
        s = self.s
        record_id = s.record_id(call.id)
        input_sha = sha256_json([guard_call.tool, dict(call.arguments)])
        if s.recorder is not None:
            s.recorder.tool_call_requested(
                record_id, guard_call.tool, input_sha, attempt=s.options.attempt
            )
        state_before = guard_call.workspace_state
        unknown: ToolOutcomeUnknown | None = None
        halt: Decision | None = None
        own = s.session_tool(call.name)
        try:
            if own is not None:
                s.executor.mark_seen(call.id)  # the id is taken, as an executor call's is
                ran = own.run(s, _host_call(call))
                result, halt = ran.result, ran.halt
            else:
                result = s.executor.execute(_host_call(call))
        except ToolOutcomeUnknown as exc:
            unknown, result = exc, exc.result
        content = render_result(result, self.settings.tool_result_chars)
        result_sha = sha256_text(content)
        if s.recorder is not None:
            s.recorder.tool_call_finished(
                record_id,
                _STORE_STATUS.get(result.status, "failed"),
                result.effects.to_json(),
                result_sha256=result_sha,
                attempt=s.options.attempt,
            )
        seq = s.next_seq()
        decision = self._observe(guard_call, result, seq, state_before)
        s.completed.add(record_id)
        s.output_chars += len(content)
        s.transcript.add_tool(
            ToolRecord(
                seq=seq,
                call_id=call.id,
                record_id=record_id,
                name=call.name,
                tool=result.tool,
                phase=s.phase,
                status=result.status,
                ok=result.ok,
                dispatched=True,
                input_sha256=input_sha,
                result_sha256=result_sha,
                summary=result_summary(result),
                effects=result.effects.to_json(),
                duration_us=round(result.duration_ms * 1000),
            )
        )
        if unknown is not None:
            why = f"the outcome of {result.tool} call {call.id} is unknown: {unknown.reason}"
            return ToolResult(call.id, content, is_error=True), RoundUnknown(why)
        stop = decision or (halt if halt is not None and halt.kind != "allow" else None)
        return ToolResult(call.id, content, is_error=not result.ok), stop or _stopping(result)

    def _observe(
        self, guard_call: GuardCall, result: HostResult, seq: int, state_before: str
    ) -> Decision | None:
        """Feed host-attested effects to the ledger and the guards."""
        s = self.s
        s.guards.record_call(guard_call, ok=result.ok)
        decision: Decision | None = None
        effects = result.effects
        if effects.write or effects.derived:
            s.workspace_version += 1
        for write in effects.write:
            before, after = state_token(write.before), state_token(write.after)
            if before == after:
                continue  # a directory appearing or vanishing: no content to certify
            s.ledger.record_write(seq, write.path, before, after)
            found = s.guards.record_write(
                write.path, before, after, evidence_complete=s.evidence_complete()
            )
            decision = decision or _not_allow(found)
        validation = effects.validate_
        if validation is not None:
            passed = validation.status == "passed"
            s.ledger.record_validation(validation.validation_id, passed, seq)
            found = s.guards.record_validation(state_before, passed=passed)
            decision = decision or _not_allow(found)
        if effects.diff_review is not None:
            s.ledger.record_diff(
                effects.diff_review.diff_sha256, seq, complete=True, scope="workspace"
            )
        if result.ok and effects.inspect:
            s.inspections += 1
        return decision

    def not_run(self, call: ModelCall, status: str, why: str) -> ToolResult:
        s = self.s
        spec = s.executor.registry.spec(call.name)
        own = s.session_tool(call.name)
        tool = spec.tool_id if spec is not None else None
        s.transcript.add_tool(
            ToolRecord(
                seq=s.seq,
                call_id=call.id,
                record_id=s.record_id(call.id),
                name=call.name,
                tool=own.definition.canonical_id if own is not None else tool,
                phase=s.phase,
                status=status,
                ok=False,
                dispatched=False,
                input_sha256=sha256_json([call.name, dict(call.arguments)]),
                result_sha256=None,
                summary=why[:240],
            )
        )
        return ToolResult(call.id, why, is_error=True)


def _not_allow(decision: Decision) -> Decision | None:
    return None if decision.kind == "allow" else decision


def _stopping(result: HostResult) -> Stopper | None:
    """A status that stops the round: pending approval and executor pauses pause the
    session (resumable), cancellation cancels it."""
    if result.status == "pending_approval":
        request = result.approval_request
        ident = request.request_id if request is not None else "?"
        return Pause("approval", f"{result.tool} needs approval (request {ident})")
    if result.status == "paused":
        message = result.error.message if result.error else "the executor paused the call"
        return Pause("stale-edit", message)
    if result.status == "cancelled":
        return RoundCancelled("the call was cancelled before dispatch")
    return None


def _host_call(call: ModelCall) -> HostCall:
    return HostCall(call_id=call.id, name=call.name, arguments=dict(call.arguments))
