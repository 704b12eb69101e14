"""The port a run's record is written through: trace events, checkpoints and tool calls.

``store.recorder.StoreRecorder`` is the store's implementation; the agent loop writes
through this port (``tidegate.agent.LoopRecorder``), and a test double may stand in for
it. Light on purpose: importing it loads neither SQLite nor the run store.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol


class Recorder(Protocol):
    """Where a run's trace, checkpoints and tool calls go. ``event`` may buffer;
    ``checkpoint`` and ``tool_call_finished`` are durable when they return."""

    def event(
        self,
        kind: str,
        *,
        attempt: int | None = None,
        phase: str | None = None,
        payload: Mapping[str, object] | None = None,
        meta: Mapping[str, object] | None = None,
    ) -> None: ...

    def checkpoint(self, reason: str, state: Mapping[str, object]) -> None: ...

    def tool_call_requested(
        self,
        tool_call_id: str,
        canonical_tool: str,
        input_sha256: str,
        *,
        attempt: int | None = None,
    ) -> None: ...

    def tool_call_finished(
        self,
        tool_call_id: str,
        status: str,
        effects: Mapping[str, object] | None,
        *,
        result_sha256: str | None = None,
        attempt: int | None = None,
    ) -> None: ...
