"""The resume ticket: a verified checkpoint a paused or interrupted run continues from."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec


class ResumeTicket(msgspec.Struct, frozen=True):
    """A verified checkpoint to resume from."""

    run_id: str
    task_id: str
    status: str
    """``paused`` or ``interrupted``."""
    checkpoint_seq: int
    checkpoint_hash: str
    state: Mapping[str, Any]
