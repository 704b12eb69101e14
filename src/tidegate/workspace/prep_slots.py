"""Preparation slots: a repository's runs take turns at their own CPU-bound start.

Before its VERIFY a run mostly computes: T0's scan of the whole work tree, the shadow's
cleaning or checkout, its phases and checkpoints. Then it mostly waits (on its VERIFY, a
model, an agent). Eight runs started at once on two cores, shared fairly by the kernel,
all finish preparing together, eight preparations later, and then all wait together:
nobody's waiting overlaps anybody's work. With one slot per core (``make``'s jobserver,
for the same reason) the first runs reach VERIFY after their own preparation and the
later ones prepare while the earlier ones verify: the first results come sooner, the
last as soon or a little sooner (``bench/concurrent_runs.py``).

A slot is an exclusive ``flock`` on one of N files ``<git-dir>/tidegate/prep/slot-<i>.lock``
(N: the cores this process may use, or ``TIDEGATE_PREP_SLOTS``; 0 turns slots off). A run
holds one from before T0 until the first phase that may wait on anything outside tidegate
(a model, an agent, VERIFY, the landing lock), and never after (``held_through``). A
slot is only ever a matter of speed, never of correctness:

- The wait is bounded (``PREP_WAIT_S``): a holder that is stopped (Ctrl-Z) or stuck
  delays the others that long at most, then they go ahead without a slot.
- A slot file that cannot be opened safely (a link planted at its name or at ``prep/``,
  a runtime directory tidegate cannot write) means no slot: the run goes ahead.
- The kernel releases the ``flock`` of a killed holder.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from tidegate.disk.linksafe import WriteRefused, open_lock_file, opened_dir
from tidegate.records.modes import Phase
from tidegate.workspace.lock import RunLock, seconds_setting

SLOTS_ENV = "TIDEGATE_PREP_SLOTS"
WAIT_ENV = "TIDEGATE_PREP_WAIT_S"
PREP_DIR = "prep"
QUEUED = "QUEUED"
"""The phase ``tidegate status`` shows for a run waiting for a slot."""
PREP_WAIT_S = 10.0
"""How long a run waits for a slot before it goes ahead without one (``TIDEGATE_PREP_WAIT_S``
overrides it)."""
MAX_SLOTS = 64

OWN_PHASES = frozenset(
    {
        Phase.PREFLIGHT,
        Phase.CONTEXT,
        Phase.EXPLORE,
        Phase.VALIDATE,
        Phase.AST_VALIDATE,
        Phase.APPLY,
    }
)
"""Phases that only ever do tidegate's own work: the slot may stay held through them."""
LOCAL_PLANNERS = frozenset({"structured", "scripted", "given", "rebase"})
"""Planners whose PLAN and PATCH read files and compute, without a model or an agent."""


def held_through(phase: Phase, planner: str) -> bool:
    """Whether a run may keep its slot through ``phase`` with ``planner`` (its name)."""
    if phase in (Phase.PLAN, Phase.PATCH):
        return planner in LOCAL_PLANNERS
    return phase in OWN_PHASES


def slot_count() -> int:
    """How many runs of one repository prepare at once: the cores this process may use,
    or ``TIDEGATE_PREP_SLOTS`` (0: no slots; anything unreadable: the default)."""
    raw = os.environ.get(SLOTS_ENV, "").strip()
    if raw.isdigit():
        return min(int(raw), MAX_SLOTS)
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_SLOTS))


def wait_limit() -> float:
    """``PREP_WAIT_S``, or ``TIDEGATE_PREP_WAIT_S`` when that is a number of seconds >= 0."""
    return seconds_setting(WAIT_ENV, PREP_WAIT_S)


class PrepSlot:
    """One preparation slot, or none (``held`` False): taken by ``take``, given back by
    ``release`` (idempotent, and by the kernel when the process dies)."""

    def __init__(self) -> None:
        self._fd: int | None = None
        self.waited_s = 0.0
        self.queued = False
        """True when it had to wait (``waiting`` was called)."""
        self.gave_up = False
        """True when every slot stayed taken for ``PREP_WAIT_S``: the run went ahead."""

    @property
    def held(self) -> bool:
        return self._fd is not None

    @classmethod
    def take(
        cls,
        runtime_dir: Path,
        *,
        slots: int | None = None,
        wait_s: float | None = None,
        waiting: Callable[[], object] | None = None,
        stop: threading.Event | None = None,
    ) -> PrepSlot:
        """A free slot of the repository whose runtime directory is ``runtime_dir``,
        waiting at most ``wait_s`` (``wait_limit()``) for one; ``waiting`` is called once
        if it has to wait; ``stop`` set ends the wait at once, without a slot. Never raises
        for a slot it cannot have."""
        slot = cls()
        count = slot_count() if slots is None else slots
        limit = wait_limit() if wait_s is None else wait_s
        if count <= 0:
            return slot
        fds = _open_slots(runtime_dir, count)
        if not fds:
            return slot
        start = time.monotonic()
        pause = 0.001
        try:
            while slot._fd is None:
                slot._fd = _first_free(fds, os.getpid() % len(fds))
                if slot._fd is not None:
                    break
                if time.monotonic() - start >= limit:
                    slot.gave_up = True
                    break
                if not slot.queued:
                    slot.queued = True
                    if waiting is not None:
                        waiting()
                if stop is None:
                    time.sleep(pause)
                elif stop.wait(pause):
                    break
                pause = min(pause * 2, 0.02)
        finally:
            for fd in fds:
                if fd != slot._fd:
                    os.close(fd)
        slot.waited_s = time.monotonic() - start
        return slot

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def take_for(lock: RunLock, runtime_dir: Path, stop: threading.Event | None = None) -> PrepSlot:
    """A slot for the run registered by ``lock``: ``tidegate status`` shows the run
    ``QUEUED`` while it waits, then ``BOOTSTRAP``. ``stop``: as ``PrepSlot.take``."""
    slot = PrepSlot.take(runtime_dir, waiting=lambda: lock.describe(phase=QUEUED), stop=stop)
    if slot.queued:
        lock.describe(phase="BOOTSTRAP")
    return slot


def _open_slots(runtime_dir: Path, count: int) -> list[int]:
    """The ``count`` slot files, opened never through a link; [] when any cannot be."""
    fds: list[int] = []
    try:
        with opened_dir(runtime_dir.parent, runtime_dir.name, PREP_DIR, create=True) as dir_fd:
            for i in range(count):
                fds.append(open_lock_file(dir_fd, f"slot-{i}.lock"))
    except (OSError, WriteRefused):
        for fd in fds:
            os.close(fd)
        return []
    return fds


def _first_free(fds: list[int], first: int) -> int | None:
    """The first of ``fds`` (from index ``first`` on, round) whose lock was free: now held."""
    for k in range(len(fds)):
        fd = fds[(first + k) % len(fds)]
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue
        return fd
    return None
