"""How a loop ended (:class:`LoopOutcome`): the record the loop returns and sub-sessions,
``agent_dispatch`` and the planners read."""

from __future__ import annotations

from typing import Literal

import msgspec

from tidegate.errors import ErrorClass

Status = Literal["completed", "paused", "stopped", "failed", "cancelled"]


class LoopOutcome(msgspec.Struct, frozen=True):
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
