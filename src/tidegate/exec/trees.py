"""Removing a scratch tree that a command (or an agent) may have made hard to remove, now
or in the background (``remove_later``: deleting directories costs milliseconds each on
ext4, which no command step needs to wait for)."""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import threading
from pathlib import Path


def remove_tree(path: Path) -> None:
    """Remove ``path`` even where read-only directories were left in it: every directory
    (not following symlinks) is made writable first; what still resists is left behind
    rather than raised, since a scratch tree's removal must not mask the real outcome."""
    for dirpath, dirnames, _files in os.walk(path):
        for name in dirnames:
            child = os.path.join(dirpath, name)
            if not os.path.islink(child):
                with contextlib.suppress(OSError):
                    os.chmod(child, 0o700)
    shutil.rmtree(path, ignore_errors=True)


_LATER: dict[int, queue.SimpleQueue[Path | threading.Event]] = {}
_LATER_LOCK = threading.Lock()


def remove_later(path: Path | threading.Event) -> None:
    """``remove_tree(path)`` in this process's one background thread, in order (an event:
    set once everything handed in before it is removed)."""
    pid = os.getpid()
    with _LATER_LOCK:
        work = _LATER.get(pid)
        if work is None:  # first use in this process (a forked child has no thread)
            work = _LATER[pid] = queue.SimpleQueue()
            thread = threading.Thread(
                target=_remove_in_order, args=(work,), name="tidegate-reaper", daemon=True
            )
            thread.start()
    work.put(path)


def removed_so_far(timeout: float = 30.0) -> bool:
    """Wait until every tree handed to ``remove_later`` so far is removed."""
    done = threading.Event()
    remove_later(done)
    return done.wait(timeout)


def _remove_in_order(work: queue.SimpleQueue[Path | threading.Event]) -> None:
    while True:
        item = work.get()
        if isinstance(item, threading.Event):
            item.set()
        else:
            remove_tree(item)
