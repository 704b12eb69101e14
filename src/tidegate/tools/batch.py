"""Batches: the calls of one model round, run in the order the model emitted them.

Before the first call is dispatched the whole batch is checked, and refused as a whole
(nothing dispatched, every call ``skipped``, ``rejected`` says why) when:

* two calls share a call ID, or a call ID was already used in this session;
* a call names an unknown tool, or a tool that is not active when the batch starts (a
  tool activated by a ``catalog_search`` in the same batch is not callable until the next
  round);
* the round has more calls than ``max_batch_calls``, or more than the session's remaining
  call budget.

Then the calls run one by one. A structured failure (bad arguments, stale precondition,
denial) does not stop the batch: later calls are independent. A pending approval, a pause,
a cancellation or an unknown outcome does: the remaining calls are not dispatched and are
reported as ``skipped``. An unknown outcome is raised (ToolOutcomeUnknown, with ``batch``
set) after the batch is assembled, because it ends the run.

A refused batch is not passed to the recorder call by call (its IDs may be duplicates);
the caller records the BatchResult. Skipped calls of a stopped batch are recorded.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Protocol

from tidegate.tools.calls import STOPPING, BatchResult, ToolCall, ToolOutcomeUnknown, ToolResult
from tidegate.tools.catalog import ToolRegistry
from tidegate.tools.context import ToolContext


class ToolExecutor(Protocol):
    """What a batch needs of ``tools.executor.ToolExecutor``."""

    context: ToolContext
    registry: ToolRegistry

    @property
    def calls_made(self) -> int: ...

    def execute(self, call: ToolCall) -> ToolResult: ...

    def skipped(self, call: ToolCall, reason: str) -> ToolResult: ...

    def seen(self, call_id: str) -> bool: ...

    def mark_seen(self, call_id: str) -> None: ...

    def record(self, call: ToolCall, result: ToolResult) -> None: ...


def precheck(executor: ToolExecutor, calls: Sequence[ToolCall]) -> str | None:
    """Why the batch must be refused before any side effect; None when it may run."""
    limits = executor.context.limits
    if len(calls) > limits.max_batch_calls:
        return f"{len(calls)} calls exceed the limit of {limits.max_batch_calls} per round"
    if limits.max_calls is not None and executor.calls_made + len(calls) > limits.max_calls:
        left = limits.max_calls - executor.calls_made
        return f"{len(calls)} calls exceed the remaining budget of {left}"
    dupes = sorted(cid for cid, n in Counter(c.call_id for c in calls).items() if n > 1)
    if dupes:
        return f"duplicate call ids in one round: {', '.join(dupes)}"
    reused = [c.call_id for c in calls if executor.seen(c.call_id)]
    if reused:
        return f"call ids already used: {', '.join(reused)}"
    for call in calls:
        spec = executor.registry.spec(call.name)
        if spec is None:
            return f"{call.call_id}: no tool named {call.name!r}"
        if not executor.registry.is_active(spec.tool_id):
            return f"{call.call_id}: {spec.model_name} is not active at the start of this round"
    return None


def run_batch(executor: ToolExecutor, calls: Sequence[ToolCall]) -> BatchResult:
    reason = precheck(executor, calls)
    if reason is not None:
        return BatchResult(
            results=[executor.skipped(c, f"batch refused: {reason}") for c in calls],
            rejected=reason,
        )
    results: list[ToolResult] = []
    for index, call in enumerate(calls):
        try:
            result = executor.execute(call)
        except ToolOutcomeUnknown as unknown:
            results.append(unknown.result)
            results += _skip_rest(executor, calls[index + 1 :], call, "unknown_outcome")
            unknown.batch = BatchResult(
                results=results, stopped="unknown_outcome", stopped_at=call.call_id
            )
            raise
        results.append(result)
        stop = result.status if result.status in STOPPING else None
        if stop is None and executor.context.cancel.is_set() and index + 1 < len(calls):
            stop = "cancelled"
        if stop is not None:
            results += _skip_rest(executor, calls[index + 1 :], call, stop)
            return BatchResult(results=results, stopped=stop, stopped_at=call.call_id)
    return BatchResult(results=results)


def _skip_rest(
    executor: ToolExecutor, rest: Sequence[ToolCall], stopper: ToolCall, why: str
) -> list[ToolResult]:
    skipped = []
    for call in rest:
        result = executor.skipped(call, f"not run: {stopper.call_id} ended with {why}")
        executor.mark_seen(call.call_id)
        executor.record(call, result)
        skipped.append(result)
    return skipped
