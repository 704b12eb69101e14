"""Bridging the executor's CallRecorder to the run store's tool-call trace.

``StoreCallRecorder`` wraps anything with the run store recorder's two tool-call methods
(``tool_call_requested`` before dispatch, buffered; ``tool_call_finished`` after, flushed
durably) -- ``tidegate.store.recorder.StoreRecorder`` has them. The executor calls
``record_start`` just before an adapter is dispatched, so a crash mid-call leaves a
requested-but-unfinished call that a resumed run treats as an unknown outcome rather than
running the mutation again. Calls that never reached dispatch are recorded as requested
and finished together.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from tidegate.tools.calls import ToolCall, ToolResult
from tidegate.tools.effects import sha256_json

STORE_STATUS = {"ok": "succeeded", "denied": "denied", "unknown_outcome": "unknown"}
"""Result status -> store status; every other status is ``failed``."""


class ToolCallLog(Protocol):
    def tool_call_requested(
        self, tool_call_id: str, canonical_tool: str, input_sha256: str
    ) -> None: ...

    def tool_call_finished(
        self,
        tool_call_id: str,
        status: str,
        effects: Mapping[str, object] | None,
        *,
        result_sha256: str | None = None,
    ) -> None: ...


def input_digest(arguments: Any) -> str:
    return sha256_json(arguments)


class StoreCallRecorder:
    """A CallRecorder (with the optional ``record_start``) over a ToolCallLog."""

    def __init__(self, log: ToolCallLog) -> None:
        self.log = log
        self._started: set[str] = set()

    def record_start(self, call: ToolCall, tool: str, input_sha256: str) -> None:
        self.log.tool_call_requested(call.call_id, tool, input_sha256)
        self._started.add(call.call_id)

    def record_call(self, call: ToolCall, result: ToolResult) -> None:
        if call.call_id not in self._started:
            self.log.tool_call_requested(
                call.call_id, result.tool or call.name, input_digest(call.arguments)
            )
        self._started.discard(call.call_id)
        data = result.to_json()
        self.log.tool_call_finished(
            call.call_id,
            STORE_STATUS.get(result.status, "failed"),
            data["effects"],
            result_sha256=sha256_json(data),
        )
