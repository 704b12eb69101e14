"""The tool-calling loop: one path for every model, streaming or not.

Each step, in this order:

1. **Context.** Tool output shown since the last compaction above its limit, or a request
   above its share of the input budget, is checkpointed and compacted first
   (``tidegate.agent.compaction``); a request that still does not fit ends the session
   with CONTEXT_BUDGET and a resumable checkpoint, before anything is sent.
2. **Budgets.** The guards see the projected cost of the request: crossing the hard dollar
   cap stops the session *before* the request; a soft budget (steps, tokens, wall time,
   dollars) pauses it.
3. **The request.** ``ModelPort.stream`` is the only call; every event passes the order
   check. A provider overflow checkpoints, compacts, recounts and asks again; overflows
   that persist after ``max_overflow_compactions`` compactions end the session with
   CONTEXT_BUDGET and a resumable checkpoint. Cancellation checkpoints and ends.
4. **The answer.** No tool calls: the text is the final answer (after an optional format
   check that may ask once or twice for a repair). Tool calls during a finalization turn
   are answered with refusals and never dispatched.
5. **The round.** The batch is prechecked by the executor (duplicate ids, unknown or
   inactive tools, budget: refused before the first side effect). Then, call by call in
   the order the model emitted them, the guards decide before dispatch (a Block is
   answered without dispatching; Finalize, Pause and Stop end the round) and the executor
   runs the call under the session's runtime (a session tool -- ``agent_dispatch`` --
   is run by the session instead, under the same guards, ids and records). Host-attested
   effects feed the evidence ledger and the guards; results go back with their call ids,
   in emitted order.
6. **After the round.** Semantic progress is reported to the guards; once a change has
   been made and certified (passing validation and a complete diff after the last
   write), the next request offers no tools.

Storage failures end the session with PERSISTENCE_ERROR (never mistaken for a provider
failure); an unknown tool outcome ends it with UNKNOWN_OUTCOME.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

from tidegate.agent.compaction import (
    compact,
    context_summary,
    kept_call_ids,
    render_result,
    result_summary,
    rounds,
)
from tidegate.agent.guards import (
    Block,
    Decision,
    Finalize,
    Pause,
    Stop,
    mutation_family,
)
from tidegate.agent.guards import ToolCall as GuardCall
from tidegate.agent.session import FINALIZE_NOTE, AgentSession
from tidegate.agent.session_options import phase_tools
from tidegate.agent.transcript import ToolRecord, TurnRecord, text_digest
from tidegate.errors import ErrorClass, PersistenceError
from tidegate.models.envelope import ModelRequest
from tidegate.models.errors import (
    ContextOverflow,
    MalformedModelOutput,
    ModelCancelled,
    ModelError,
)
from tidegate.models.events import Finished, ModelEvent, ModelResponse, check_order
from tidegate.models.messages import ToolCall as ModelCall
from tidegate.models.messages import ToolResult, UserMessage
from tidegate.prompt.hashing import sha256_json, sha256_text
from tidegate.tools.calls import ToolCall as HostCall
from tidegate.tools.calls import ToolOutcomeUnknown
from tidegate.tools.calls import ToolResult as HostResult
from tidegate.tools.effects import EntryStateModel

Status = Literal["completed", "paused", "stopped", "failed", "cancelled"]
AnswerCheck = Callable[[str], str | None]
"""Returns None for an acceptable final answer, or what to tell the model to repair."""
EventSink = Callable[[ModelEvent], None]

_STORE_STATUS = {"ok": "succeeded", "denied": "denied", "unknown_outcome": "unknown"}


@dataclass(frozen=True)
class LoopOutcome:
    """How a loop ended. ``checkpoint`` is the hash of the checkpoint written for the
    ending (None when the session does not own checkpoints or storage failed)."""

    status: Status
    text: str = ""
    reason: str = ""
    guard: str | None = None
    error_class: ErrorClass | None = None
    checkpoint: str | None = None
    resumable: bool = False
    finalized: bool = False
    """The answer came from a tool-free finalization turn."""


@dataclass(frozen=True)
class _Cancelled:
    """A call came back cancelled: the round stops and the session ends cancelled."""

    reason: str


@dataclass(frozen=True)
class _Unknown:
    """A call's outcome is unknown: the round stops and the session ends for good."""

    reason: str


Stopper = Decision | _Cancelled | _Unknown


class _Ended(Exception):
    def __init__(self, outcome: LoopOutcome) -> None:
        super().__init__(outcome.reason)
        self.outcome = outcome


def run_loop(
    session: AgentSession,
    *,
    answer_check: AnswerCheck | None = None,
    on_event: EventSink | None = None,
) -> LoopOutcome:
    """Drive ``session`` until it answers, pauses, stops or fails."""
    return _Loop(session, answer_check, on_event).run()


def state_token(state: EntryStateModel) -> str | None:
    """A typed entry state as the ledger and guards compare it (None: absent)."""
    if state.kind == "missing":
        return None
    if state.kind == "file":
        return state.sha256
    return f"{state.kind}:{state.sha256 or '-'}"


class _Loop:
    def __init__(
        self, session: AgentSession, answer_check: AnswerCheck | None, on_event: EventSink | None
    ) -> None:
        self.s = session
        self.settings = session.options.settings
        self.answer_check = answer_check
        self.on_event = on_event
        self.repairs = 0
        self.rejections = 0
        self.overflows = 0
        self.malformed = 0
        self.transient = 0

    # -- the loop --------------------------------------------------------------------------

    def run(self) -> LoopOutcome:
        try:
            return self._steps()
        except _Ended as ended:
            return ended.outcome
        except PersistenceError as exc:
            return self._finish(
                LoopOutcome(
                    "failed",
                    reason=f"the session's record could not be stored durably: {exc}",
                    error_class=ErrorClass.PERSISTENCE_ERROR,
                )
            )

    def _steps(self) -> LoopOutcome:
        s = self.s
        while True:
            self._fit_context()
            try:
                request = s.build_request()
                tokens = s.meter.request_tokens(request)
                self._check_budget(tokens)
                response, elapsed_ms = self._ask(request)
            except ContextOverflow as exc:
                self._overflowed(exc)
                continue
            except ModelCancelled as exc:
                s.checkpoint("cancelled")
                return self._end("cancelled", str(exc), ErrorClass.CANCELLED)
            except MalformedModelOutput as exc:
                self._malformed(exc)
                continue
            except ModelError as exc:
                if exc.retry_turn and self.transient < self.settings.max_transient_retries:
                    self.transient += 1
                    s.event("agent.retry", {"error": type(exc).__name__})
                    continue
                s.checkpoint("model-error")
                return self._end("failed", f"the model failed: {exc}", exc.error_class)
            self.overflows = self.transient = 0
            self._account(request, response, elapsed_ms)
            if not response.tool_calls:
                repair = self.answer_check(response.text) if self.answer_check else None
                if repair is not None and self.repairs < self.settings.max_format_repairs:
                    self.repairs += 1
                    s.messages += [response.as_message(), UserMessage(repair)]
                    s.event("agent.repair", {"repairs": self.repairs})
                    continue
                s.messages.append(response.as_message())
                return self._finish(
                    LoopOutcome("completed", text=response.text, finalized=bool(s.finalizing))
                )
            if s.finalizing:
                self._reject(response)
                continue
            version = s.executor.state_version
            decision = self._round(response)
            s.refresh_prompt()
            self._after_round(decision, changed=s.executor.state_version != version)

    # -- before a request ------------------------------------------------------------------

    def _fit_context(self) -> None:
        s, settings = self.s, self.settings
        if s.output_chars > settings.accumulated_output_chars:
            s.checkpoint("tool-output")
            self._compact("tool-output", keep=0)
        limit = s.input_budget
        tokens = s.meter.request_tokens(s.build_request())
        if tokens <= settings.context_headroom * limit:
            return
        saved = False
        for keep in (settings.keep_recent_rounds, 0):
            if len(rounds(s.messages, s.head)) <= keep:
                continue  # nothing to drop at this depth
            if not saved:
                s.checkpoint("context-budget")
                saved = True
            self._compact("context-budget", keep=keep)
            tokens = s.meter.request_tokens(s.build_request())
            if tokens <= settings.context_headroom * limit:
                return
        if tokens > limit:
            digest = s.checkpoint("context-budget-exceeded")
            raise _Ended(
                self._end(
                    "failed",
                    f"the request needs about {tokens} input tokens after compaction; the "
                    f"model accepts {limit}",
                    ErrorClass.CONTEXT_BUDGET,
                    resumable=digest is not None,
                )
            )

    def _compact(self, reason: str, *, keep: int) -> None:
        """Replace all but the newest ``keep`` rounds by the host summary."""
        s = self.s
        before = s.meter.request_tokens(s.build_request())
        summary = context_summary(
            s.transcript,
            s.ledger,
            expect_changes=s.expect_changes,
            exclude=kept_call_ids(s.messages, s.head, keep),
        )
        if s.last_checkpoint_hash:
            summary += f"\nLast checkpoint: {s.last_checkpoint_hash}\n"
        if s.finalizing:
            summary += "\n" + FINALIZE_NOTE.format(reason=s.finalizing) + "\n"
        s.messages = compact(s.messages, s.head, summary, keep)
        s.meter.forget(s.messages)
        s.compactions += 1
        s.output_chars = 0
        after = s.meter.request_tokens(s.build_request())
        s.event(
            "agent.compacted",
            {
                "reason": reason,
                "compactions": s.compactions,
                "kept_rounds": keep,
                "tokens_before": before,
                "tokens_after": after,
                "checkpoint": s.last_checkpoint_hash,
            },
        )

    def _check_budget(self, tokens: int) -> None:
        s = self.s
        decision = s.guards.check_model_request(s.projected_dollars(tokens))
        if isinstance(decision, Stop):
            s.checkpoint("stopped")
            raise _Ended(self._end("stopped", decision.reason, guard=decision.guard))
        if isinstance(decision, Pause):
            raise _Ended(self._pause(decision))

    # -- the request -----------------------------------------------------------------------

    def _ask(self, request: ModelRequest) -> tuple[ModelResponse, int]:
        started = time.monotonic()
        response: ModelResponse | None = None
        stream = self.s.model.stream(request, self.s.executor.context.cancel)
        for event in check_order(stream):
            if self.on_event is not None:
                self.on_event(event)
            if isinstance(event, Finished):
                response = event.response
        if response is None:
            raise MalformedModelOutput("the model's event stream ended without a response")
        return response, round((time.monotonic() - started) * 1000)

    def _overflowed(self, exc: ContextOverflow) -> None:
        s = self.s
        self.overflows += 1
        digest = s.checkpoint("context-overflow")
        s.event("agent.overflow", {"overflows": self.overflows})
        if self.overflows > self.settings.max_overflow_compactions:
            raise _Ended(
                self._end(
                    "failed",
                    f"the provider still reports a context overflow after {self.overflows - 1} "
                    f"compaction(s): {exc}",
                    ErrorClass.CONTEXT_BUDGET,
                    resumable=digest is not None,
                )
            )
        held = len(rounds(s.messages, s.head))
        keep = 0
        if self.overflows == 1:  # first try: keep the newest rounds, but always drop one
            keep = max(0, min(self.settings.keep_recent_rounds, held - 1))
        if held > keep:
            self._compact("provider-overflow", keep=keep)

    def _malformed(self, exc: MalformedModelOutput) -> None:
        s = self.s
        self.malformed += 1
        s.guards.record_usage(steps=1)
        s.event("agent.malformed", {"count": self.malformed, "error": str(exc)[:200]})
        if self.malformed > self.settings.max_malformed_outputs:
            s.checkpoint("malformed-output")
            raise _Ended(
                self._end(
                    "failed",
                    f"the model's output kept breaking the protocol: {exc}",
                    exc.error_class,
                )
            )

    def _account(self, request: ModelRequest, response: ModelResponse, elapsed_ms: int) -> None:
        s = self.s
        cost = s.pricing.cost(response.usage)
        s.account(response.usage, cost)
        digest, chars = text_digest(response.text)
        usage = response.usage
        turn = TurnRecord(
            step=len(s.transcript.turns) + 1,
            phase=s.phase,
            stop_reason=response.stop_reason.value,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cached_input_tokens=usage.cached_input_tokens,
            usage_exact=usage.exact,
            cost_usd=None if cost is None else str(cost),
            tools_offered=len(request.tools),
            tool_calls=tuple(c.name for c in response.tool_calls),
            text_sha256=digest,
            text_chars=chars,
            duration_ms=elapsed_ms,
        )
        s.transcript.add_turn(turn)
        payload = {k: v for k, v in turn.to_json().items() if k not in ("duration_ms", "phase")}
        s.event(
            "agent.turn",
            {**payload, "finalizing": s.finalizing is not None},
            {"duration_ms": elapsed_ms, "request": request.fingerprint()},
        )

    # -- answers and rounds ----------------------------------------------------------------

    def _reject(self, response: ModelResponse) -> None:
        """Tool calls in a finalization turn: refused, never dispatched."""
        s = self.s
        self.rejections += 1
        why = (
            "not run: this turn offers no tools because the host already has the evidence "
            "it needs; give your final answer"
        )
        results = [self._not_run(call, "rejected", why) for call in response.tool_calls]
        s.messages += [response.as_message(), *results]
        s.event("agent.rejected", {"calls": len(results), "rejections": self.rejections})
        if self.rejections > self.settings.max_finalization_rejections:
            raise _Ended(
                self._pause(
                    Pause("finalization", "the model kept calling tools in a tool-free turn")
                )
            )

    def _round(self, response: ModelResponse) -> Stopper | None:
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
                        self._not_run(
                            call,
                            "already-completed",
                            "not run again: this call already ran before the session "
                            "resumed; its effects are in the host summary",
                        )
                    )
                elif refusal is not None:
                    results.append(self._not_run(call, "refused", f"batch refused: {refusal}"))
                elif stop is not None:
                    s.executor.mark_seen(call.id)
                    why = getattr(stop, "reason", "the round stopped")
                    results.append(self._not_run(call, "skipped", f"not run: {why}"))
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
            return self._not_run(call, "blocked", reason), None
        if isinstance(decision, Finalize | Pause | Stop):
            s.executor.mark_seen(call.id)
            return self._not_run(call, "not-run", f"not run: {decision.reason}"), decision
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
            return ToolResult(call.id, content, is_error=True), _Unknown(why)
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

    def _not_run(self, call: ModelCall, status: str, why: str) -> ToolResult:
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

    def _after_round(self, decision: Stopper | None, *, changed: bool) -> None:
        """Stop, pause, finalize or go on after a round; a round that changed host state
        is checkpointed, so a resume finds its writes in the record."""
        s = self.s
        if isinstance(decision, Stop):
            s.checkpoint("stopped")
            raise _Ended(self._end("stopped", decision.reason, guard=decision.guard))
        if isinstance(decision, Pause):
            raise _Ended(self._pause(decision))
        if isinstance(decision, _Cancelled):
            s.checkpoint("cancelled")
            raise _Ended(self._end("cancelled", decision.reason, ErrorClass.CANCELLED))
        if isinstance(decision, _Unknown):
            s.checkpoint("unknown-outcome")
            raise _Ended(
                self._end("failed", decision.reason, ErrorClass.UNKNOWN_OUTCOME, resumable=False)
            )
        if isinstance(decision, Finalize):
            self._finalize(f"{decision.guard}: {decision.reason}")
        else:
            found = s.guards.record_turn(
                s.ledger.progress_version, evidence_complete=s.evidence_complete()
            )
            if isinstance(found, Pause):
                raise _Ended(self._pause(found))
            if isinstance(found, Finalize):
                self._finalize(f"{found.guard}: {found.reason}")
            elif s.finalizing is None and s.evidence_ready():
                self._finalize("a passing validation and a complete diff follow the last write")
        if changed:
            s.checkpoint("round")

    def _finalize(self, reason: str) -> None:
        s = self.s
        s.finalizing = reason
        s.messages.append(UserMessage(FINALIZE_NOTE.format(reason=reason)))
        s.event("agent.finalizing", {"reason": reason})

    # -- endings ---------------------------------------------------------------------------

    def _pause(self, decision: Pause) -> LoopOutcome:
        self.s.checkpoint("pause")
        return self._end("paused", decision.reason, guard=decision.guard)

    def _end(
        self,
        status: Status,
        reason: str,
        error_class: ErrorClass | None = None,
        *,
        guard: str | None = None,
        resumable: bool | None = None,
    ) -> LoopOutcome:
        """An ending whose checkpoint (if any) was already written."""
        outcome = LoopOutcome(
            status,
            reason=reason,
            guard=guard,
            error_class=error_class,
            checkpoint=self.s.last_checkpoint_hash if self.s.options.checkpoints else None,
            resumable=(status in ("paused", "cancelled")) if resumable is None else resumable,
        )
        return self._finish(outcome)

    def _finish(self, outcome: LoopOutcome) -> LoopOutcome:
        """Record the ending; a completed session also gets its final checkpoint."""
        s = self.s
        facts: dict[str, Any] = {
            "status": outcome.status,
            "guard": outcome.guard,
            "error_class": outcome.error_class.value if outcome.error_class else None,
            "finalized": outcome.finalized,
            **s.transcript.summary(),
        }
        try:
            s.event("agent.finished", facts, {"reason": outcome.reason[:500]})
            if outcome.status == "completed":
                digest = s.checkpoint("completed")
                outcome = replace(outcome, checkpoint=digest)
        except PersistenceError as exc:
            if outcome.error_class is ErrorClass.PERSISTENCE_ERROR:
                return outcome
            return LoopOutcome(
                "failed",
                reason=f"the session's record could not be stored durably: {exc}",
                error_class=ErrorClass.PERSISTENCE_ERROR,
            )
        return outcome


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
        return _Cancelled("the call was cancelled before dispatch")
    return None


def _host_call(call: ModelCall) -> HostCall:
    return HostCall(call_id=call.id, name=call.name, arguments=dict(call.arguments))
