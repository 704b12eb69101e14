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
5. **The round** (``tidegate.agent.round``). The batch is prechecked by the executor (duplicate ids, unknown or
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
from typing import Any

from msgspec.structs import replace

from tidegate.agent.compaction import (
    rounds,
)
from tidegate.agent.guards import (
    Finalize,
    Pause,
    Stop,
)
from tidegate.agent.loop_outcome import LoopOutcome, Status
from tidegate.agent.round import RoundCancelled, RoundUnknown, Stopper, ToolRound
from tidegate.agent.session import AgentSession
from tidegate.agent.session_compaction import compact_session
from tidegate.agent.session_options import FINALIZE_NOTE
from tidegate.agent.transcript import TurnRecord, text_digest
from tidegate.errors import ErrorClass, PersistenceError
from tidegate.models.envelope import ModelRequest
from tidegate.models.errors import (
    ContextOverflow,
    MalformedModelOutput,
    ModelCancelled,
    ModelError,
)
from tidegate.models.events import Finished, ModelEvent, ModelResponse, check_order
from tidegate.models.messages import UserMessage

AnswerCheck = Callable[[str], str | None]
"""Returns None for an acceptable final answer, or what to tell the model to repair."""
EventSink = Callable[[ModelEvent], None]


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


class _Loop:
    def __init__(
        self, session: AgentSession, answer_check: AnswerCheck | None, on_event: EventSink | None
    ) -> None:
        self.s = session
        self.settings = session.options.settings
        self.round = ToolRound(session)
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
            decision = self.round.run(response)
            s.refresh_prompt()
            self._after_round(decision, changed=s.executor.state_version != version)

    # -- before a request ------------------------------------------------------------------

    def _fit_context(self) -> None:
        s, settings = self.s, self.settings
        if s.output_chars > settings.accumulated_output_chars:
            s.checkpoint("tool-output")
            compact_session(self.s, "tool-output", keep=0)
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
            compact_session(self.s, "context-budget", keep=keep)
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
            compact_session(self.s, "provider-overflow", keep=keep)

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
        results = [self.round.not_run(call, "rejected", why) for call in response.tool_calls]
        s.messages += [response.as_message(), *results]
        s.event("agent.rejected", {"calls": len(results), "rejections": self.rejections})
        if self.rejections > self.settings.max_finalization_rejections:
            raise _Ended(
                self._pause(
                    Pause("finalization", "the model kept calling tools in a tool-free turn")
                )
            )

    def _after_round(self, decision: Stopper | None, *, changed: bool) -> None:
        """Stop, pause, finalize or go on after a round; a round that changed host state
        is checkpointed, so a resume finds its writes in the record."""
        s = self.s
        if isinstance(decision, Stop):
            s.checkpoint("stopped")
            raise _Ended(self._end("stopped", decision.reason, guard=decision.guard))
        if isinstance(decision, Pause):
            raise _Ended(self._pause(decision))
        if isinstance(decision, RoundCancelled):
            s.checkpoint("cancelled")
            raise _Ended(self._end("cancelled", decision.reason, ErrorClass.CANCELLED))
        if isinstance(decision, RoundUnknown):
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
