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

import dataclasses
import json
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import Any

from pydantic import BaseModel, ValidationError

from tidegate.errors import PersistenceError
from tidegate.exec.guard import Clearance, Origin
from tidegate.exec.sessions import SessionSupervisor
from tidegate.tools.adapters import default_adapters
from tidegate.tools.adapters.base import AdapterResult, Dispatch, ToolAdapter, ToolFailure
from tidegate.tools.arguments import ArgumentsRejected, argument_problem, parse_arguments
from tidegate.tools.batch import precheck, run_batch
from tidegate.tools.calls import (
    ApprovalRequest,
    BatchResult,
    Status,
    ToolCall,
    ToolError,
    ToolOutcomeUnknown,
    ToolResult,
)
from tidegate.tools.catalog import ToolDefinition, ToolRegistry, ToolSpec
from tidegate.tools.config_watch import config_change, config_snapshot
from tidegate.tools.context import ApprovalAnswer, ApprovalPort, CallRecorder, ToolContext
from tidegate.tools.effects import (
    HOST_CAPTURED_FIELDS,
    ApprovalEffect,
    DerivedMutation,
    Effects,
    EntryStateModel,
    WriteEffect,
    sha256_json,
    undeclared,
)
from tidegate.tools.guards import StaleEditGuard, state_key
from tidegate.tools.policy import (
    PATH_WRITERS,
    Allow,
    Ask,
    Deny,
    PolicyContext,
    check_examples,
    decide,
)


class _Unknown(Exception):
    """Internal: the outcome of the call in progress cannot be established."""

    def __init__(self, reason: str, effects: Effects | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.effects = effects


@dataclasses.dataclass
class _Observation:
    """The 'before' side of an independent capture."""

    target: str | None = None
    """The normalised target path (target_path capture)."""
    paths: dict[str, Any] = dataclasses.field(default_factory=dict)
    """EntryState of the target and of each of its parent directories."""
    inventory: Any = None  # fingerprint.Inventory
    capture: Any = None  # capture.CommandCapture (command.run: overlay or exact inventory)

    @property
    def target_state(self) -> Any:
        return None if self.target is None else self.paths[self.target]


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
        self._baseline: Any = None  # inventory kept while command sessions run
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self.last_capture: Any = None
        """How the last command.run's effects were captured (``capture.CaptureResult``:
        method, reason, changes), for reports and tests."""

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
        self._record(call, result)
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
        self._record(call, result)

    @property
    def calls_made(self) -> int:
        return self._calls

    def charge_calls(self, calls: int) -> None:
        """Count ``calls`` made elsewhere against this executor's call budget (a
        sub-agent's calls, drawn from the session's ``max_calls``)."""
        self._calls += max(0, calls)

    def _execute(self, call: ToolCall, started: float) -> ToolResult:
        if self.ended is not None:
            return self._fail(call, None, "run_ended", self.ended, started, retryable=False)
        spec = self.registry.spec(call.name)
        if call.call_id in self._seen:
            return self._fail(
                call,
                spec,
                "duplicate_call_id",
                f"call id {call.call_id!r} was already used",
                started,
            )
        self._seen.add(call.call_id)
        if spec is None:
            return self._fail(call, None, "unknown_tool", f"no tool named {call.name!r}", started)
        if not self.registry.is_active(spec.tool_id):
            return self._fail(call, spec, "inactive_tool", self._inactive_reason(spec), started)
        parsed = self._parse(call, spec, started)
        if isinstance(parsed, ToolResult):
            return parsed
        args = parsed
        limit = self.context.limits.max_calls
        if limit is not None and self._calls >= limit:
            return self._fail(
                call,
                spec,
                "budget_exhausted",
                f"the {limit}-call budget is used up",
                started,
                retryable=False,
            )
        self._calls += 1
        if self.context.cancel.is_set():
            return self._end(call, spec, "cancelled", "cancelled before dispatch", started)
        # decided on the validated arguments, defaults filled in: the same call always
        # gets the same decision and the same approval request ID
        approval = self._approve(call, spec, args.model_dump(mode="json"), started)
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

    def _parse(self, call: ToolCall, spec: ToolSpec, started: float) -> BaseModel | ToolResult:
        raw: Any = call.arguments
        try:
            if isinstance(raw, str):
                raw = parse_arguments(raw) if raw.strip() else {}
            else:
                problem = argument_problem(raw)
                if problem is not None:
                    raise ArgumentsRejected(problem)
        except json.JSONDecodeError as exc:
            return self._fail(
                call, spec, "invalid_arguments", f"arguments are not JSON: {exc}", started
            )
        except ArgumentsRejected as exc:
            return self._fail(
                call, spec, "invalid_arguments", f"arguments are not strict JSON: {exc}", started
            )
        if not isinstance(raw, dict):
            return self._fail(
                call, spec, "invalid_arguments", "arguments must be a JSON object", started
            )
        try:
            args = spec.input_model.model_validate(raw)
        except ValidationError as exc:
            problems = [
                f"{'.'.join(str(p) for p in e['loc']) or '(arguments)'}: {e['msg']}"
                for e in exc.errors()[:5]
            ]
            return self._fail(
                call,
                spec,
                "invalid_arguments",
                "; ".join(problems),
                started,
                details={"errors": problems},
            )
        return args

    # -- approval ------------------------------------------------------------------------

    def _approve(
        self, call: ToolCall, spec: ToolSpec, raw: dict[str, Any], started: float
    ) -> ApprovalEffect | ToolResult:
        ctx = self.context
        decision = decide(
            spec.tool_id,
            raw,
            ctx.mode,
            ctx.approval_profile,
            self.policy_context,
            self._write_target(spec.tool_id, raw),
        )
        if isinstance(decision, Allow):
            return ApprovalEffect(status="not_required")
        request_id = (
            "apr_"
            + sha256_json({"tool": spec.tool_id, "arguments": raw, "workspace": str(ctx.root)})[
                7:31
            ]
        )
        if isinstance(decision, Deny):
            return self._denied(call, spec, request_id, "policy", decision.reasons, started)
        assert isinstance(decision, Ask)
        if request_id in ctx.grants:
            return ApprovalEffect(
                status="granted",
                request_id=request_id,
                decided_by="grant",
                reasons=decision.reasons,
            )
        request = ApprovalRequest(
            request_id=request_id,
            call_id=call.call_id,
            tool=spec.tool_id,
            arguments=raw,
            reasons=decision.reasons,
        )
        if ctx.approver is None:
            return pending_approval(call, spec.tool_id, "call", request, started)
        answer = ask_within(ctx.approver, request, ctx.limits.approval_timeout_s)
        if answer is None:
            return self._denied(call, spec, request_id, "timeout", ("no answer in time",), started)
        if answer.request_id != request_id:
            return self._denied(
                call, spec, request_id, "approver", ("the answer named another request",), started
            )
        if not answer.granted:
            reasons = (answer.reason,) if answer.reason else decision.reasons
            return self._denied(call, spec, request_id, answer.by, reasons, started)
        return ApprovalEffect(
            status="granted", request_id=request_id, decided_by=answer.by, reasons=decision.reasons
        )

    def _write_target(self, tool: str, raw: Mapping[str, Any]) -> str | None:
        """Where a path-writing call would land, symlinked directories followed (None: not
        such a call, or a path the port refuses anyway when the call is dispatched)."""
        from tidegate.workspace.confine import PathRefused

        path = raw.get("path")
        if tool not in PATH_WRITERS or not isinstance(path, str):
            return None
        try:
            return self.context.workspace.resolved(path)
        except (PathRefused, OSError):
            return None

    def _denied(
        self,
        call: ToolCall,
        spec: ToolSpec,
        request_id: str,
        by: str,
        reasons: tuple[str, ...],
        started: float,
    ) -> ToolResult:
        return ToolResult(
            call_id=call.call_id,
            name=call.name,
            tool=spec.tool_id,
            ok=False,
            status="denied",
            error=ToolError(code="approval_denied", message="; ".join(reasons)),
            effects=Effects(
                approval=ApprovalEffect(
                    status="denied", request_id=request_id, decided_by=by, reasons=reasons
                )
            ),
            duration_ms=_ms(started),
        )

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
        lock is held throughout, so no other port write lands between the observations."""
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
            before = self._before(spec, target)
        except ToolFailure as failure:
            return self._failure_result(call, spec, failure, started)
        config_before = config_snapshot(self.context.root) if spec.capture == "inventory" else None
        guard_key = None
        if before.target is not None:
            state = before.target_state
            guard_key = (before.target, state_key(state.kind, state.sha256))
            if self.guard.blocked(*guard_key):
                return self._end(
                    call,
                    spec,
                    "paused",
                    f"{before.target} has had {self.guard.limit} failed edits in this state; "
                    "the run pauses instead of trying again",
                    started,
                    code="stale_edit_limit",
                )
        self._record_start(call, spec, args)
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
            outcome = adapter.run(args, dispatch)
        except ToolFailure as failure:
            outcome = failure
        except Exception as exc:
            thrown = exc
        try:
            try:
                writes, derived = self._after(before)
            except Exception as exc:
                raise _Unknown(
                    f"the workspace could not be observed after dispatch: {exc}"
                ) from exc
            finally:
                if before.capture is not None:
                    before.capture.close()
            observed = Effects(write=tuple(writes), derived=tuple(derived))
            if config_before is not None and (
                changed := config_change(config_before, config_snapshot(self.context.root))
            ):
                raise _Unknown(
                    f"the call changed tidegate's own configuration ({changed}); the session "
                    "stops: only you may change it, so look at what was written",
                    observed,
                )
            if thrown is not None:
                raise _Unknown(
                    f"the adapter raised {type(thrown).__name__} after dispatch: {thrown}",
                    observed,
                ) from thrown
            if isinstance(outcome, ToolFailure):
                if writes or derived:
                    raise _Unknown(
                        f"the call failed ({outcome.code}) but the workspace changed", observed
                    )
                if guard_key is not None:
                    self.guard.failed(*guard_key)
                return self._failure_result(call, spec, outcome, started)
            assert isinstance(outcome, AdapterResult)
            return self._success(call, spec, adapter, outcome, approval, observed, started)
        except _Unknown as unknown:
            raise self._unknown(call, spec, approval, unknown, started) from unknown

    def _before(self, spec: ToolSpec, target: str | None) -> _Observation:
        if spec.capture == "target_path" and target is not None:
            from tidegate.workspace.confine import PathRefused, check_relative

            try:
                rel = _canonical(self.context.root, check_relative(target))
                paths = [str(rel), *(str(p) for p in rel.parents if str(p) != ".")]
                states = {p: self.context.workspace.state(p) for p in paths}
            except PathRefused as exc:
                raise ToolFailure("path_refused", str(exc), details={"reason": exc.reason}) from exc
            return _Observation(target=str(rel), paths=states)
        if spec.capture == "inventory":
            from tidegate.tools.capture import CaptureUnavailable, CommandCapture
            from tidegate.workspace.fingerprint import take_inventory

            if self._baseline is not None:
                # a session ran since the last observation: start from that observation so
                # what it wrote in between is not lost
                return _Observation(inventory=self._baseline)
            try:
                if self._overlay_capturable(spec) and not self.sessions.any_running:
                    try:
                        return _Observation(capture=CommandCapture.start(self.context.root))
                    except CaptureUnavailable as exc:  # required and unusable: nothing ran
                        raise ToolFailure("capture_unavailable", str(exc), retryable=False) from exc
                return _Observation(
                    inventory=take_inventory(
                        self.context.root, exact=True, view=self.context.git_view
                    )
                )
            except OSError as exc:
                raise ToolFailure(
                    "capture_failed",
                    f"the workspace could not be inventoried: {exc}",
                    retryable=False,
                ) from exc
        return _Observation()

    def _overlay_capturable(self, spec: ToolSpec) -> bool:
        """Only the host's own command.run adapter writes nothing but through the command
        it spawns (with the capture's hook); any other adapter could write the workspace
        itself, past an overlay, so its effects come from inventories."""
        from tidegate.tools.adapters.command import CommandRun

        adapter = self.adapters[spec.tool_id]
        return type(adapter) is CommandRun and adapter.label is None

    def _after(self, before: _Observation) -> tuple[list[WriteEffect], list[DerivedMutation]]:
        if before.target is not None:
            writes = []
            # parents first (shallowest first), then the target: the order they changed in
            for path in sorted(before.paths, key=lambda p: (p.count("/"), p)):
                after = self.context.workspace.state(path)
                if after != before.paths[path]:
                    self._patch_baseline(path, after)
                    writes.append(_write(path, before.paths[path], after))
            return writes, []
        if before.capture is not None:
            captured = self.last_capture = before.capture.finish()
            self._note_changed(c.path for c in captured.changes)
            writes = [_write(c.path, c.before, c.after, c.before_mode, c.after_mode)
                      for c in captured.changes]  # fmt: skip
            derived = [DerivedMutation(path=d.path, before=d.before, after=d.after)
                       for d in captured.derived]  # fmt: skip
            return writes, derived
        if before.inventory is not None:
            from tidegate.workspace.fingerprint import diff_inventory, take_inventory

            after_inv = take_inventory(
                self.context.root, previous=before.inventory, exact=True, view=self.context.git_view
            )
            changes, derived_dirs = diff_inventory(before.inventory, after_inv)
            self._note_changed(c.path for c in changes)
            self._baseline = after_inv if self.sessions.any_running else None
            writes = [_write(c.path, c.before, c.after, c.before_mode, c.after_mode)
                      for c in changes]  # fmt: skip
            derived = [
                DerivedMutation(
                    path=d,
                    before=before.inventory.derived.get(d),
                    after=after_inv.derived.get(d),
                )
                for d in derived_dirs
            ]
            return writes, derived
        return [], []

    def _note_changed(self, paths: Iterable[str]) -> None:
        """Tell the contained commands' secret mask which paths a command changed: their
        directories are listed again before the next command (it is exact without it)."""
        self.context.workspace.secrets.note_changed(self.context.root, list(paths))

    def _patch_baseline(self, path: str, state: Any) -> None:
        """Keep a running session's baseline in step with writes other tools made."""
        if self._baseline is None:
            return
        entries = dict(self._baseline.entries)
        modes = dict(self._baseline.modes)
        if state.kind == "missing":
            entries.pop(path, None)
        else:
            entries[path] = state
        modes.pop(path, None)
        if state.kind in ("file", "dir"):  # exact inventories record their permission bits
            import os
            import stat

            modes[path] = stat.S_IMODE(os.lstat(self.context.root / path).st_mode)
        self._baseline = dataclasses.replace(self._baseline, entries=entries, modes=modes)

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
        if outcome.tool != spec.tool_id:
            raise _Unknown(f"the adapter answered as {outcome.tool}, not {spec.tool_id}", observed)
        forged = sorted(set(outcome.claims.present()) & HOST_CAPTURED_FIELDS)
        if forged:
            raise _Unknown(f"the adapter claimed host-only evidence: {', '.join(forged)}", observed)
        try:
            raw_output = (
                outcome.output.model_dump(mode="json")
                if isinstance(outcome.output, BaseModel)
                else dict(outcome.output)
            )
            output = spec.output_model.model_validate(raw_output).model_dump(mode="json")
        except (ValidationError, TypeError, ValueError) as exc:
            raise _Unknown(
                f"the output does not match {spec.tool_id}'s schema: {exc}", observed
            ) from exc
        advanced = bool(observed.write or observed.derived or outcome.state_changed)
        effects = outcome.claims.model_copy(
            update={"approval": approval, "write": observed.write, "derived": observed.derived}
        )
        bad = undeclared(spec.tool_id, effects)
        if bad:
            raise _Unknown(f"{spec.tool_id} may not report {', '.join(bad)}", observed)
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
            duration_ms=_ms(started),
        )

    def _unknown(
        self,
        call: ToolCall,
        spec: ToolSpec,
        approval: ApprovalEffect,
        unknown: _Unknown,
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
            duration_ms=_ms(started),
        )
        self.ended = f"an earlier call ({call.call_id}) ended with an unknown outcome"
        self._record(call, result)
        return ToolOutcomeUnknown(result, unknown.reason)

    # -- results ---------------------------------------------------------------------------

    def _failure_result(
        self, call: ToolCall, spec: ToolSpec, failure: ToolFailure, started: float
    ) -> ToolResult:
        return self._fail(
            call,
            spec,
            failure.code,
            failure.message,
            started,
            retryable=failure.retryable,
            details=failure.details,
        )

    def _fail(
        self,
        call: ToolCall,
        spec: ToolSpec | None,
        code: str,
        message: str,
        started: float,
        *,
        retryable: bool = True,
        details: Mapping[str, Any] | None = None,
    ) -> ToolResult:
        return ToolResult(
            call_id=call.call_id,
            name=call.name,
            tool=spec.tool_id if spec else None,
            ok=False,
            status="error",
            error=ToolError(
                code=code, message=message, retryable=retryable, details=dict(details or {})
            ),
            duration_ms=_ms(started),
        )

    def _end(
        self,
        call: ToolCall,
        spec: ToolSpec,
        status: Status,
        message: str,
        started: float,
        code: str | None = None,
    ) -> ToolResult:
        return ToolResult(
            call_id=call.call_id,
            name=call.name,
            tool=spec.tool_id,
            ok=False,
            status=status,
            error=ToolError(code=code or status, message=message, retryable=False),
            duration_ms=_ms(started),
        )

    def _record_start(self, call: ToolCall, spec: ToolSpec, args: BaseModel) -> None:
        start = getattr(self.recorder, "record_start", None)
        if start is None:
            return
        try:
            start(call, spec.tool_id, sha256_json(args.model_dump(mode="json")))
        except Exception as exc:
            raise PersistenceError(
                f"tool call {call.call_id} could not be recorded before dispatch: {exc}"
            ) from exc

    def _record(self, call: ToolCall, result: ToolResult) -> None:
        if self.recorder is None:
            return
        if result.error is not None and result.error.code == "duplicate_call_id":
            return  # the first call with this ID is the one on record
        try:
            self.recorder.record_call(call, result)
        except Exception as exc:
            raise PersistenceError(
                f"tool call {call.call_id} ({result.status}) could not be recorded: {exc}"
            ) from exc


def _canonical(root: Path, rel: PurePosixPath) -> PurePosixPath:
    """``rel`` with symlinked directories inside the root resolved, as the port names the
    paths it changes; the lexical form when a parent does not exist yet."""
    from tidegate.workspace.confine import RootHandle

    with RootHandle(root) as handle:
        try:
            where = handle.resolve(rel)
        except (FileNotFoundError, NotADirectoryError):
            return rel
        where.close()
        return where.rel


def _write(
    path: str,
    before: Any,
    after: Any,
    before_mode: int | None = None,
    after_mode: int | None = None,
) -> WriteEffect:
    return WriteEffect(
        path=path,
        before=EntryStateModel(kind=before.kind, sha256=before.sha256, mode=_octal(before_mode)),
        after=EntryStateModel(kind=after.kind, sha256=after.sha256, mode=_octal(after_mode)),
    )


def _octal(mode: int | None) -> str | None:
    return None if mode is None else f"{mode:04o}"


def ask_within(
    approver: ApprovalPort, request: ApprovalRequest, timeout_s: float
) -> ApprovalAnswer | None:
    """The approver's answer, or None when none came within ``timeout_s``.

    The approver runs in a daemon worker thread and the executor waits at most
    ``timeout_s`` for it, so an approver that ignores its timeout (a person who walked
    away, a hung remote service) cannot hold the call, or the run, open. A late answer is
    dropped: the call has already ended as a timed-out denial and nothing was dispatched.
    An approver that raises raises here.
    """
    done = threading.Event()
    outcome: list[ApprovalAnswer | None] = []
    failure: list[BaseException] = []

    def ask() -> None:
        try:
            outcome.append(approver.request(request, timeout_s))
        except BaseException as exc:  # handed to the waiting thread
            failure.append(exc)
        finally:
            done.set()

    worker = threading.Thread(
        target=ask, name=f"tidegate-approval-{request.request_id}", daemon=True
    )
    worker.start()
    if not done.wait(max(timeout_s, 0.0)):
        return None
    if failure:
        raise failure[0]
    return outcome[0]


def pending_approval(
    call: ToolCall, tool_id: str, what: str, request: ApprovalRequest, started: float
) -> ToolResult:
    """The answer to a ``call`` of ``tool_id`` that needs an approval nobody here can give
    (no approver: MCP over stdio, a non-interactive run): the request, for a later grant."""
    return ToolResult(
        call_id=call.call_id,
        name=call.name,
        tool=tool_id,
        ok=False,
        status="pending_approval",
        error=ToolError(
            code="approval_pending",
            message=f"this {what} needs approval: " + "; ".join(request.reasons),
            retryable=False,
        ),
        approval_request=request,
        duration_ms=_ms(started),
    )


def _ms(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 3)


def _clearance(origin: Origin, approval: ApprovalEffect) -> Clearance:
    """What the runner's guard is told: the context's origin, and the approval this call
    was granted, if any (an Allow needs none: the policy allows a command without
    approval only under verified containment)."""
    if approval.status != "granted":
        return Clearance(origin)
    return Clearance(origin, f"{approval.decided_by} (approval {approval.request_id})")
