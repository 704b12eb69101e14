"""One admitted call, run between two observations: steps 4 to 7 of ``executor.py``.

The call has passed the name, argument, budget and approval checks. Here the stale-edit
guard is asked, the "before" state is captured independently of the adapter, the adapter
runs, the "after" state is captured, and the write and derived-mutation effects are
derived from the two observations alone. Then the adapter's answer is checked
(``answer.check_answer``). An adapter throw, a failed "after" capture, a change to
tidegate's own configuration, a failure that changed the workspace, or a breach of the
answer's contract makes the outcome unknown: the result is recorded, the executor refuses
every later call, and ToolOutcomeUnknown is raised.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel

from tidegate.exec.guard import Clearance, Origin
from tidegate.exec.sessions import SessionSupervisor
from tidegate.tools.adapters.base import AdapterResult, Dispatch, ToolAdapter, ToolFailure
from tidegate.tools.answer import UnknownOutcome, check_answer
from tidegate.tools.call_records import record_call, record_start
from tidegate.tools.calls import ToolCall, ToolError, ToolOutcomeUnknown, ToolResult
from tidegate.tools.catalog import ToolRegistry, ToolSpec
from tidegate.tools.config_watch import config_change, config_snapshot
from tidegate.tools.context import CallRecorder, ToolContext
from tidegate.tools.effects import ApprovalEffect, Effects
from tidegate.tools.guards import StaleEditGuard, state_key
from tidegate.tools.observe import Observation, Observer
from tidegate.tools.results import elapsed_ms, ended, failure_result
from tidegate.tools.undo_keep import CallKeeper


class ToolExecutor(Protocol):
    """What an observed call needs of ``tools.executor.ToolExecutor``."""

    context: ToolContext
    registry: ToolRegistry
    adapters: Mapping[str, ToolAdapter]
    sessions: SessionSupervisor
    observer: Observer
    guard: StaleEditGuard
    recorder: CallRecorder | None
    keeper: CallKeeper | None
    keep_failures: list[str]
    state_version: int
    ended: str | None

    @property
    def scratch_dir(self) -> Path: ...


def run_observed(
    ex: ToolExecutor,
    call: ToolCall,
    spec: ToolSpec,
    args: BaseModel,
    approval: ApprovalEffect,
    started: float,
) -> ToolResult:
    """Capture, dispatch, capture. For tools that may write, the workspace port's commit
    lock is held throughout, so no other port write lands between the observations --
    but while a command runs in an overlay (``Observer.running``)."""
    if spec.capture == "none":
        return _observed_dispatch(ex, call, spec, args, approval, started)
    with ex.context.workspace.exclusive():
        return _observed_dispatch(ex, call, spec, args, approval, started)


def _observed_dispatch(
    ex: ToolExecutor,
    call: ToolCall,
    spec: ToolSpec,
    args: BaseModel,
    approval: ApprovalEffect,
    started: float,
) -> ToolResult:
    adapter = ex.adapters[spec.tool_id]
    target = getattr(args, "path", None) if spec.capture == "target_path" else None
    try:
        before = ex.observer.before(spec, target)
    except ToolFailure as failure:
        return failure_result(call, spec, failure, started)
    config_before = config_snapshot(ex.context.root) if spec.capture == "inventory" else None
    guard_key = _guard_key(before)
    if guard_key is not None and ex.guard.blocked(*guard_key):
        return ended(
            call,
            spec,
            "paused",
            f"{before.target} has had {ex.guard.limit} failed edits in this state; "
            "the run pauses instead of trying again",
            started,
            code="stale_edit_limit",
        )
    record_start(ex.recorder, call, spec.tool_id, args.model_dump(mode="json"))
    outcome, thrown = _run_adapter(ex, call, adapter, args, approval, before)
    try:
        try:
            observed = _observed_effects(ex, before, config_before, thrown)
        except UnknownOutcome as unknown:
            _keep(ex, call, spec, before, unknown.effects)
            raise
        _keep(ex, call, spec, before, observed)
        if isinstance(outcome, ToolFailure):
            if observed.write or observed.derived:
                raise UnknownOutcome(
                    f"the call failed ({outcome.code}) but the workspace changed", observed
                )
            if guard_key is not None:
                ex.guard.failed(*guard_key)
            return failure_result(call, spec, outcome, started)
        assert isinstance(outcome, AdapterResult)
        return _success(ex, call, spec, adapter, outcome, approval, observed, started)
    except UnknownOutcome as unknown:
        raise _unknown(ex, call, spec, approval, unknown, started) from unknown


def _run_adapter(
    ex: ToolExecutor,
    call: ToolCall,
    adapter: ToolAdapter,
    args: BaseModel,
    approval: ApprovalEffect,
    before: Observation,
) -> tuple[AdapterResult | ToolFailure | None, Exception | None]:
    """The adapter's answer (a result or a structured failure), or what it threw instead:
    a throw is judged after the "after" capture, never before."""
    dispatch = Dispatch(
        call.call_id,
        ex.context,
        ex.registry,
        ex.sessions,
        ex.scratch_dir,
        spawn_hook=before.capture,
        clearance=clearance(ex.context.origin, approval),
    )
    try:
        with ex.observer.running(before):
            return adapter.run(args, dispatch), None
    except ToolFailure as failure:
        return failure, None
    except Exception as exc:
        return None, exc


def _keep(
    ex: ToolExecutor, call: ToolCall, spec: ToolSpec, before: Observation, observed: Effects | None
) -> None:
    """Index the call's writes and keep the bytes they replaced (never fails the call:
    the workspace has changed already; a store that cannot be written keeps nothing)."""
    if ex.keeper is None or observed is None or not observed.write:
        return
    try:
        ex.keeper.keep(
            call.call_id, spec.tool_id, observed.write, before.kept, before.method or "call"
        )
    except Exception as exc:  # the call has happened; report, never undo it
        ex.keep_failures.append(f"{call.call_id}: {exc}")


def _observed_effects(
    ex: ToolExecutor, before: Observation, config_before: Any, thrown: Exception | None
) -> Effects:
    """The effects observed after dispatch; UnknownOutcome when they cannot be observed, when
    the call changed tidegate's own configuration, or when the adapter raised."""
    try:
        writes, derived = ex.observer.after(before)
    except Exception as exc:
        raise UnknownOutcome(f"the workspace could not be observed after dispatch: {exc}") from exc
    finally:
        if before.capture is not None:
            before.capture.close()
    observed = Effects(write=tuple(writes), derived=tuple(derived))
    if config_before is not None and (
        changed := config_change(config_before, config_snapshot(ex.context.root))
    ):
        raise UnknownOutcome(
            f"the call changed tidegate's own configuration ({changed}); the session "
            "stops: only you may change it, so look at what was written",
            observed,
        )
    if thrown is not None:
        raise UnknownOutcome(
            f"the adapter raised {type(thrown).__name__} after dispatch: {thrown}",
            observed,
        ) from thrown
    return observed


def _success(
    ex: ToolExecutor,
    call: ToolCall,
    spec: ToolSpec,
    adapter: ToolAdapter,
    outcome: AdapterResult,
    approval: ApprovalEffect,
    observed: Effects,
    started: float,
) -> ToolResult:
    output, effects = check_answer(spec, outcome, approval, observed)
    advanced = bool(observed.write or observed.derived or outcome.state_changed)
    if advanced:
        ex.state_version += 1
        effects = effects.model_copy(update={"state_version": ex.state_version})
    return ToolResult(
        call_id=call.call_id,
        name=call.name,
        tool=spec.tool_id,
        ok=True,
        status="ok",
        output=output,
        effects=effects,
        label=adapter.label,
        duration_ms=elapsed_ms(started),
    )


def _unknown(
    ex: ToolExecutor,
    call: ToolCall,
    spec: ToolSpec,
    approval: ApprovalEffect,
    unknown: UnknownOutcome,
    started: float,
) -> ToolOutcomeUnknown:
    observed = unknown.effects or Effects()
    effects = observed.model_copy(update={"approval": approval})
    if observed.write or observed.derived:
        ex.state_version += 1
        effects = effects.model_copy(update={"state_version": ex.state_version})
    result = ToolResult(
        call_id=call.call_id,
        name=call.name,
        tool=spec.tool_id,
        ok=False,
        status="unknown_outcome",
        error=ToolError(code="unknown_outcome", message=unknown.reason, retryable=False),
        effects=effects,
        label=ex.registry.label(spec.tool_id),
        duration_ms=elapsed_ms(started),
    )
    ex.ended = f"an earlier call ({call.call_id}) ended with an unknown outcome"
    record_call(ex.recorder, call, result)
    return ToolOutcomeUnknown(result, unknown.reason)


def clearance(origin: Origin, approval: ApprovalEffect) -> Clearance:
    """What the runner's guard is told: the context's origin, and the approval this call
    was granted, if any (an Allow needs none: the policy allows a command without
    approval only under verified containment)."""
    if approval.status != "granted":
        return Clearance(origin)
    return Clearance(origin, f"{approval.decided_by} (approval {approval.request_id})")


def _guard_key(before: Observation) -> tuple[str, str] | None:
    """The stale-edit guard's key for a call on a target path: the path and its state."""
    if before.target is None:
        return None
    state = before.target_state
    return before.target, state_key(state.kind, state.sha256)
