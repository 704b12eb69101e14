"""Fault injection for crash tests. Inert unless ``TIDEGATE_FAULT`` names a point.

``TIDEGATE_FAULT=apply_back.after_write:2`` kills the process with SIGKILL right after the
second file write of an apply-back; ``TIDEGATE_FAULT=phase.VERIFY`` kills it as VERIFY
starts (``phase.VERIFY:2``: in attempt 2). Points are named where ``maybe_crash`` is called.
"""

from __future__ import annotations

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
