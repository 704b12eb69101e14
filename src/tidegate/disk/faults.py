"""Fault injection for crash tests. Inert unless ``TIDEGATE_FAULT`` names a point.

``TIDEGATE_FAULT=apply_back.after_write:2`` kills the process with SIGKILL right after the
second file write of an apply-back; ``TIDEGATE_FAULT=phase.VERIFY`` kills it as VERIFY
starts (``phase.VERIFY:2``: in attempt 2). Points are named where ``maybe_crash`` is called.

A fault may name what happens instead of SIGKILL, after ``=``:

* ``=term``: the process sends itself SIGTERM (what ``kill PID`` does);
* ``=EACCES``, ``=ENOSPC``, ``=EROFS``, ``=EPERM``, ...: ``maybe_crash`` raises that
  ``OSError``, as the write at that point would have;
* ``=run``: the shell command in ``TIDEGATE_FAULT_RUN`` runs (in the process's working
  directory) and the process goes on: someone else touching files at the worst moment.

``TIDEGATE_FAULT=apply_back.before_write:2=ENOSPC`` makes the second write of an
apply-back fail as if the disk were full. Several faults may be armed at once, separated
by commas.

``maybe_fail`` is the non-kill kind: at its point it raises ``OSError(EIO)`` instead
(``TIDEGATE_FAULT=overlay.mount``: the overlay cannot be mounted for a command), or the
errno named after ``=`` (``TIDEGATE_FAULT=state_root.key_write=ENOSPC``): a failure the
caller must handle like a real one.
"""

from __future__ import annotations

import errno
import os
import signal
from collections.abc import Callable

ENV = "TIDEGATE_FAULT"
RUN_ENV = "TIDEGATE_FAULT_RUN"

run_command: Callable[[str], None] | None = None
"""How a ``=run`` fault runs its command: set by ``tidegate.exec.runner`` when it loads
(the one runner; this module sits below it and starts nothing itself)."""


def maybe_crash(point: str, count: int = 1) -> None:
    for spec in os.environ.get(ENV, "").split(","):
        target, _, kind = spec.strip().partition("=")
        name, _, nth = target.partition(":")
        if name == point and (not nth or int(nth) == count):
            _trigger(point, kind)


def _trigger(point: str, kind: str) -> None:
    if not kind or kind == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif kind == "term":
        os.kill(os.getpid(), signal.SIGTERM)
    elif kind == "run":
        if run_command is None:
            raise RuntimeError(f"{ENV}: =run at {point}, but tidegate.exec.runner is not loaded")
        run_command(os.environ.get(RUN_ENV, "true"))
    else:
        code = getattr(errno, kind, None)
        if not isinstance(code, int):
            raise ValueError(f"{ENV}: unknown fault kind {kind!r}")
        raise OSError(code, os.strerror(code), f"fault point {point}")


def maybe_fail(point: str) -> None:
    """When ``TIDEGATE_FAULT`` names ``point`` (no count), raise ``OSError(EIO)``, or do
    the kind named after ``=`` as ``maybe_crash`` does (an errno name raises that errno)."""
    for spec in os.environ.get(ENV, "").split(","):
        name, _, kind = spec.strip().partition("=")
        if name != point:
            continue
        if not kind:
            raise OSError(errno.EIO, f"injected fault at {point}")
        _trigger(point, kind)
