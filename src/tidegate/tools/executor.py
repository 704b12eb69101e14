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
   effects from the two observations alone (steps 4 to 7: ``observed_call.py``);
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

from tidegate.exec.sessions import SessionSupervisor
from tidegate.tools.adapters import default_adapters
from tidegate.tools.adapters.base import ToolAdapter
from tidegate.tools.approval import approve
from tidegate.tools.batch import precheck, run_batch
from tidegate.tools.call_input import parse_call
from tidegate.tools.call_records import record_call
from tidegate.tools.calls import BatchResult, ToolCall, ToolError, ToolResult
from tidegate.tools.catalog import ToolDefinition, ToolRegistry, ToolSpec
from tidegate.tools.context import CallRecorder, ToolContext
from tidegate.tools.guards import StaleEditGuard
from tidegate.tools.observe import Observer
from tidegate.tools.observed_call import run_observed
from tidegate.tools.policy import PolicyContext, check_examples
from tidegate.tools.results import ended, failed
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
        return run_observed(self, call, spec, args, approval, started)

    def _inactive_reason(self, spec: ToolSpec) -> str:
        if spec.tool_id in self.registry.available:
            return f"{spec.model_name} is not active; find it with catalog_search first"
        if self.context.mode.read_only and spec.writes:
            return (
                f"{spec.model_name} may write and the {self.context.mode.value} mode is read-only"
            )
        return f"{spec.model_name} is not available on this host"
