"""The commit lock of a workspace root: a thread lock and an ``flock`` held together."""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import ClassVar


class RootLock:
    """One per workspace root and process: a reentrant thread lock, and an ``flock`` on a
    descriptor of the root held while any thread is inside (so other tidegate processes
    serialise too). Shared by every port on the root, so nesting never self-deadlocks."""

    _all: ClassVar[dict[str, RootLock]] = {}
    _guard: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, real_root: str) -> None:
        self._lock = threading.RLock()
        self._fd = os.open(real_root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self._depth = 0

    @classmethod
    def of(cls, real_root: str) -> RootLock:
        with cls._guard:
            if real_root not in cls._all:
                cls._all[real_root] = cls(real_root)
            return cls._all[real_root]

    @contextmanager
    def released(self) -> Iterator[None]:
        """Inside the outermost ``held`` of this thread: let other threads and processes
        in meanwhile, and hold the lock again after. Nested deeper, it stays held."""
        if self._depth != 1:
            yield
            return
        self._depth = 0
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        self._lock.release()
        try:
            yield
        finally:
            self._lock.acquire()
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            self._depth = 1

    @contextmanager
    def held(self) -> Iterator[None]:
        with self._lock:
            self._depth += 1
            try:
                if self._depth == 1:
                    fcntl.flock(self._fd, fcntl.LOCK_EX)
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)
