"""Durable file replacement and the task directory's lock.

``write_atomic`` writes a temporary file next to the target, fsyncs it, renames it over the
target and fsyncs the directory: a reader (or a crash) sees the old file or the new one,
never a mix. ``TaskLock`` serialises the commands that change a task directory.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from pathlib import Path
from types import TracebackType

from tidegate.errors import UsageError
from tidegate.ledger.errors import LedgerLockedError

LOCK_FILE = ".ledger.lock"


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably, keeping its permissions."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = 0o644
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fchmod(fd, mode)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def stale_temp_files(directory: Path) -> list[Path]:
    """Temporary files a killed writer left behind (``.NAME.PID.tmp``)."""
    return sorted(p for p in directory.glob(".*.tmp") if p.name.count(".") >= 3)


class TaskLock:
    """An exclusive ``flock`` on ``TASK_DIR/.ledger.lock``, released when the holder exits
    (or dies): a second writer is refused at once instead of waiting."""

    def __init__(self, task_dir: Path) -> None:
        self.path = task_dir / LOCK_FILE
        self._fd: int | None = None

    def __enter__(self) -> TaskLock:
        if not self.path.parent.is_dir():
            raise UsageError(
                f"{self.path.parent}: no such task directory (create one with `tidegate ledger init`)"
            )
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise LedgerLockedError(
                f"{self.path.parent}: another ledger command is updating this task"
            ) from None
        self._fd = fd
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
