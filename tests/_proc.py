"""Processes as the tests see them through ``/proc``."""

from __future__ import annotations

from pathlib import Path


def running(pid: int) -> bool:
    """``pid`` is a process that has not exited (a zombie, exited but not yet reaped,
    is not running)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
