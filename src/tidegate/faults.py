"""Fault injection for crash tests. Inert unless ``TIDEGATE_FAULT`` names a point.

``TIDEGATE_FAULT=apply_back.after_write:2`` kills the process with SIGKILL right after the
second file write of an apply-back; ``TIDEGATE_FAULT=phase.VERIFY`` kills it as VERIFY
starts (``phase.VERIFY:2``: in attempt 2). Points are named where ``maybe_crash`` is called.
``maybe_fail`` is the non-kill kind: at its point it raises ``OSError(EIO)`` instead
(``TIDEGATE_FAULT=overlay.mount``: the overlay cannot be mounted for a command).
"""

from __future__ import annotations

import errno
import os
import signal

ENV = "TIDEGATE_FAULT"


def maybe_crash(point: str, count: int = 1) -> None:
    spec = os.environ.get(ENV)
    if not spec:
        return
    name, _, nth = spec.partition(":")
    if name == point and (not nth or int(nth) == count):
        os.kill(os.getpid(), signal.SIGKILL)


def maybe_fail(point: str) -> None:
    """Raise ``OSError(EIO)`` when ``TIDEGATE_FAULT`` names ``point`` (no count)."""
    if os.environ.get(ENV) == point:
        raise OSError(errno.EIO, f"injected fault at {point}")
