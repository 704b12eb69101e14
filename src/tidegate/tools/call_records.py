"""Handing calls to the session's recorder: the intent before dispatch, the result after.
A recorder that fails makes the call a PersistenceError."""

from __future__ import annotations

from typing import Any

from tidegate.errors import PersistenceError
from tidegate.tools.calls import ToolCall, ToolResult
from tidegate.tools.context import CallRecorder
from tidegate.tools.effects import sha256_json


def record_start(
    recorder: CallRecorder | None, call: ToolCall, tool_id: str, arguments: dict[str, Any]
) -> None:
    """Record that ``call`` of ``tool_id`` with its validated ``arguments`` is about to be
    dispatched (recorders without ``record_start`` record results only)."""
    start = getattr(recorder, "record_start", None)
    if start is None:
        return
    try:
        start(call, tool_id, sha256_json(arguments))
    except Exception as exc:
        raise PersistenceError(
            f"tool call {call.call_id} could not be recorded before dispatch: {exc}"
        ) from exc


def record_call(recorder: CallRecorder | None, call: ToolCall, result: ToolResult) -> None:
    """Record ``call``'s result (not a duplicate call ID's: the first call is on record)."""
    if recorder is None:
        return
    if result.error is not None and result.error.code == "duplicate_call_id":
        return  # the first call with this ID is the one on record
    try:
        recorder.record_call(call, result)
    except Exception as exc:
        raise PersistenceError(
            f"tool call {call.call_id} ({result.status}) could not be recorded: {exc}"
        ) from exc
