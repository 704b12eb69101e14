"""The tool executor: one call from a model's request to a host-attested result.

For each call, in this order, and nothing is dispatched before the last check passes:

1. resolve the name (model-facing or canonical) and refuse unknown, inactive or reused
   call IDs; parse the arguments as strict JSON (``arguments``: no NaN, no infinities,
   64-bit integers, bounded nesting, Unicode text) and validate them against the tool's
   input model;
2. cancellation and the session's call budget;
3. approval: ``policy.decide`` (pure); Ask goes to a grant, the approver (waited for at
   most ``ToolLimits.approval_timeout_s``, then a timed-out denial), or becomes a
   pending approval; Deny ends the call with only the denial as its effect;
4. the stale-edit guard (a path whose state has collected too many failed edits pauses);
5. capture the "before" state independently of the adapter: the typed state of the target
   path, or an inventory of the whole workspace;
6. dispatch to the adapter; then capture "after" and derive write and derived-mutation
   effects from the two observations alone;
7. check the adapter's answer: output schema, that it answered for this tool, that it
   claims no host-only evidence, that every effect is in the profile, and that a failure
   carries no effect. Any breach, an adapter throw, or a failed "after" capture makes the
   outcome unknown: the result is recorded and ToolOutcomeUnknown ends the run. An unknown
   outcome is never returned as a retryable error, and the executor refuses every later
   call.

Every finished call goes to the recorder (if any) before it is returned. Batches are in
``batch.py``.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path
from types import TracebackType
from typing import Any

from pydantic import BaseModel

from tidegate.exec.guard import Clearance, Origin
from tidegate.exec.sessions import SessionSupervisor
from tidegate.tools.adapters import default_adapters
from tidegate.tools.adapters.base import AdapterResult, Dispatch, ToolAdapter, ToolFailure
from tidegate.tools.answer import UnknownOutcome, check_answer
from tidegate.tools.approval import approve
from tidegate.tools.batch import precheck, run_batch
from tidegate.tools.call_input import parse_call
from tidegate.tools.call_records import record_call, record_start
from tidegate.tools.calls import (
    BatchResult,
    ToolCall,
    ToolError,
    ToolOutcomeUnknown,
    ToolResult,
)
from tidegate.tools.catalog import ToolDefinition, ToolRegistry, ToolSpec
from tidegate.tools.config_watch import config_change, config_snapshot
from tidegate.tools.context import CallRecorder, ToolContext
from tidegate.tools.effects import (
    ApprovalEffect,
    Effects,
)
from tidegate.tools.guards import StaleEditGuard, state_key
from tidegate.tools.observe import Observation, Observer
from tidegate.tools.policy import (
    PolicyContext,
    check_examples,
)
from tidegate.tools.results import elapsed_ms, ended, failed, failure_result
from tidegate.tools.undo_keep import CallKeeper, read_regular


class ToolExecutor:
    """Runs tool calls for one session against one workspace.

    ``adapters`` replaces the default adapter set entirely; ``overrides`` replaces single
    tools and must be labelled (a double or a test adapter says what it is). ``doubles``
    registers the shipped deterministic doubles for the tools without a real backend.
    ``activate_all`` starts with every available tool active (the CLI and the MCP server;
    an agent loop keeps lazy activation).
    """

    def __init__(
        self,
        context: ToolContext,
        *,
        recorder: CallRecorder | None = None,
        adapters: Mapping[str, ToolAdapter] | None = None,
        overrides: Mapping[str, ToolAdapter] | None = None,
        doubles: bool = False,
        activate_all: bool = False,
    ) -> None:
        check_examples()
        self.context = context
        self.recorder = recorder
        chosen = dict(adapters) if adapters is not None else default_adapters(context, doubles)
        for tool, adapter in (overrides or {}).items():
            if not adapter.label:
                raise ValueError(f"an adapter overriding {tool} must carry a label")
            if adapter.tool_id != tool:
                raise ValueError(f"adapter for {adapter.tool_id} registered as {tool}")
            chosen[tool] = adapter
        self.adapters: Mapping[str, ToolAdapter] = chosen
        self.registry = ToolRegistry(chosen, mode=context.mode, activate_all=activate_all)
        self.state_version = 0
        self.guard = StaleEditGuard(context.limits.stale_edit_limit)
        self.sessions = SessionSupervisor(context.limits.max_sessions)
        self.ended: str | None = None
        """Why the executor refuses further calls (an unknown outcome ended the run)."""
        self._seen: set[str] = set()
        self._calls = 0
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self.observer = Observer(context, self.sessions, chosen)
        self.keeper: CallKeeper | None = None
        self.keep_failures: list[str] = []
        """Keeps the bytes each call replaces or deletes, for ``tidegate undo --call``."""

    def keep_bytes(self, keeper: CallKeeper | None) -> None:
        """Keep (or stop keeping) the bytes every later call replaces or deletes."""
        self.keeper = keeper
        if keeper is None:
            self.observer.keep = None
            return
        root = self.context.root

        def read(rel: str) -> bytes | None:
            return read_regular(root, rel) if keeper.wants(rel) else None

        self.observer.keep = read

    # -- lifecycle -----------------------------------------------------------------------

    def close(self) -> None:
        self.sessions.close()
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None

    def __enter__(self) -> ToolExecutor:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def scratch_dir(self) -> Path:
        if self.context.scratch_dir is not None:
            return self.context.scratch_dir
        if self._scratch is None:
            self._scratch = tempfile.TemporaryDirectory(prefix="tidegate-tools-")
        return Path(self._scratch.name)

    @property
    def last_capture(self) -> Any:
        """How the last command.run's effects were captured (``capture.CaptureResult``:
        method, reason, changes), for reports and tests."""
        return self.observer.last_capture

    # -- what the model sees -------------------------------------------------------------

    def definitions(self) -> list[ToolDefinition]:
        return self.registry.definitions()

    @cached_property
    def policy_context(self) -> PolicyContext:
        ctx = self.context
        verified = False
        if ctx.containment != "none":
            from tidegate.exec.containment import probe

            verified = probe().verified
        return PolicyContext(
            containment_verified=verified,
            network=ctx.network,
            write_access=ctx.write_access,
            protected=ctx.protected,
        )

    # -- one call ------------------------------------------------------------------------

    def execute(self, call: ToolCall) -> ToolResult:
        """Run one call; raises ToolOutcomeUnknown when its side effects are unknown and
        PersistenceError when the recorder fails."""
        started = time.monotonic()
        result = self._execute(call, started)
        record_call(self.recorder, call, result)
        return result

    def execute_batch(self, calls: Sequence[ToolCall]) -> BatchResult:
        return run_batch(self, calls)

    def precheck_batch(self, calls: Sequence[ToolCall]) -> str | None:
        return precheck(self, calls)

    def skipped(self, call: ToolCall, reason: str) -> ToolResult:
        spec = self.registry.spec(call.name)
        return ToolResult(
            call_id=call.call_id,
            name=call.name,
            tool=spec.tool_id if spec else None,
            ok=False,
            status="skipped",
            error=ToolError(code="skipped", message=reason),
        )

    def seen(self, call_id: str) -> bool:
        return call_id in self._seen

    def mark_seen(self, call_id: str) -> None:
        self._seen.add(call_id)

    def record(self, call: ToolCall, result: ToolResult) -> None:
        """Hand a result to the recorder (PersistenceError when it fails)."""
        record_call(self.recorder, call, result)

    @property
    def calls_made(self) -> int:
        return self._calls

    def charge_calls(self, calls: int) -> None:
        """Count ``calls`` made elsewhere against this executor's call budget (a
        sub-agent's calls, drawn from the session's ``max_calls``)."""
        self._calls += max(0, calls)

    def _execute(self, call: ToolCall, started: float) -> ToolResult:
        if self.ended is not None:
            return failed(call, None, "run_ended", self.ended, started, retryable=False)
        spec = self.registry.spec(call.name)
        if call.call_id in self._seen:
            return failed(
                call,
                spec,
                "duplicate_call_id",
                f"call id {call.call_id!r} was already used",
                started,
            )
        self._seen.add(call.call_id)
        if spec is None:
            return failed(call, None, "unknown_tool", f"no tool named {call.name!r}", started)
        if not self.registry.is_active(spec.tool_id):
            return failed(call, spec, "inactive_tool", self._inactive_reason(spec), started)
        parsed = parse_call(call, spec, started)
        if isinstance(parsed, ToolResult):
            return parsed
        args = parsed
        limit = self.context.limits.max_calls
        if limit is not None and self._calls >= limit:
            return failed(
                call,
                spec,
                "budget_exhausted",
                f"the {limit}-call budget is used up",
                started,
                retryable=False,
            )
        self._calls += 1
        if self.context.cancel.is_set():
            return ended(call, spec, "cancelled", "cancelled before dispatch", started)
        # decided on the validated arguments, defaults filled in: the same call always
        # gets the same decision and the same approval request ID
        approval = approve(
            self.context, self.policy_context, call, spec, args.model_dump(mode="json"), started
        )
        if isinstance(approval, ToolResult):
            return approval
        return self._dispatch(call, spec, args, approval, started)

    def _inactive_reason(self, spec: ToolSpec) -> str:
        if spec.tool_id in self.registry.available:
            return f"{spec.model_name} is not active; find it with catalog_search first"
        if self.context.mode.read_only and spec.writes:
            return (
                f"{spec.model_name} may write and the {self.context.mode.value} mode is read-only"
            )
        return f"{spec.model_name} is not available on this host"

    # -- dispatch and capture --------------------------------------------------------------

    def _dispatch(
        self,
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
            return self._observed_dispatch(call, spec, args, approval, started)
        with self.context.workspace.exclusive():
            return self._observed_dispatch(call, spec, args, approval, started)

    def _observed_dispatch(
        self,
        call: ToolCall,
        spec: ToolSpec,
        args: BaseModel,
        approval: ApprovalEffect,
        started: float,
    ) -> ToolResult:
        adapter = self.adapters[spec.tool_id]
        target = getattr(args, "path", None) if spec.capture == "target_path" else None
        try:
            before = self.observer.before(spec, target)
        except ToolFailure as failure:
            return failure_result(call, spec, failure, started)
        config_before = config_snapshot(self.context.root) if spec.capture == "inventory" else None
        guard_key = _guard_key(before)
        if guard_key is not None and self.guard.blocked(*guard_key):
            return ended(
                call,
                spec,
                "paused",
                f"{before.target} has had {self.guard.limit} failed edits in this state; "
                "the run pauses instead of trying again",
                started,
                code="stale_edit_limit",
            )
        record_start(self.recorder, call, spec.tool_id, args.model_dump(mode="json"))
        dispatch = Dispatch(
            call.call_id,
            self.context,
            self.registry,
            self.sessions,
            self.scratch_dir,
            spawn_hook=before.capture,
            clearance=_clearance(self.context.origin, approval),
        )
        outcome: AdapterResult | ToolFailure | None = None
        thrown: Exception | None = None
        try:
            with self.observer.running(before):
                outcome = adapter.run(args, dispatch)
        except ToolFailure as failure:
            outcome = failure
        except Exception as exc:
            thrown = exc
        try:
            try:
                observed = self._observed_effects(before, config_before, thrown)
            except UnknownOutcome as unknown:
                self._keep(call, spec, before, unknown.effects)
                raise
            self._keep(call, spec, before, observed)
            if isinstance(outcome, ToolFailure):
                if observed.write or observed.derived:
                    raise UnknownOutcome(
                        f"the call failed ({outcome.code}) but the workspace changed", observed
                    )
                if guard_key is not None:
                    self.guard.failed(*guard_key)
                return failure_result(call, spec, outcome, started)
            assert isinstance(outcome, AdapterResult)
            return self._success(call, spec, adapter, outcome, approval, observed, started)
        except UnknownOutcome as unknown:
            raise self._unknown(call, spec, approval, unknown, started) from unknown

    def _keep(
        self, call: ToolCall, spec: ToolSpec, before: Observation, observed: Effects | None
    ) -> None:
        """Index the call's writes and keep the bytes they replaced (never fails the call:
        the workspace has changed already; a store that cannot be written keeps nothing)."""
        if self.keeper is None or observed is None or not observed.write:
            return
        try:
            self.keeper.keep(
                call.call_id, spec.tool_id, observed.write, before.kept, before.method or "call"
            )
        except Exception as exc:  # the call has happened; report, never undo it
            self.keep_failures.append(f"{call.call_id}: {exc}")

    def _observed_effects(
        self, before: Observation, config_before: Any, thrown: Exception | None
    ) -> Effects:
        """The effects observed after dispatch; UnknownOutcome when they cannot be observed, when
        the call changed tidegate's own configuration, or when the adapter raised."""
        try:
            writes, derived = self.observer.after(before)
        except Exception as exc:
            raise UnknownOutcome(
                f"the workspace could not be observed after dispatch: {exc}"
            ) from exc
        finally:
            if before.capture is not None:
                before.capture.close()
        observed = Effects(write=tuple(writes), derived=tuple(derived))
        if config_before is not None and (
            changed := config_change(config_before, config_snapshot(self.context.root))
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
        self,
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
            self.state_version += 1
            effects = effects.model_copy(update={"state_version": self.state_version})
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
        self,
        call: ToolCall,
        spec: ToolSpec,
        approval: ApprovalEffect,
        unknown: UnknownOutcome,
        started: float,
    ) -> ToolOutcomeUnknown:
        observed = unknown.effects or Effects()
        effects = observed.model_copy(update={"approval": approval})
        if observed.write or observed.derived:
            self.state_version += 1
            effects = effects.model_copy(update={"state_version": self.state_version})
        result = ToolResult(
            call_id=call.call_id,
            name=call.name,
            tool=spec.tool_id,
            ok=False,
            status="unknown_outcome",
            error=ToolError(code="unknown_outcome", message=unknown.reason, retryable=False),
            effects=effects,
            label=self.registry.label(spec.tool_id),
            duration_ms=elapsed_ms(started),
        )
        self.ended = f"an earlier call ({call.call_id}) ended with an unknown outcome"
        record_call(self.recorder, call, result)
        return ToolOutcomeUnknown(result, unknown.reason)


def _clearance(origin: Origin, approval: ApprovalEffect) -> Clearance:
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
