"""The per-repository run lock.

One tidegate run (or recovery) at a time per work tree. The lock is an ``flock`` on
``<git-dir>/tidegate/run.lock``: the kernel releases it when the holder dies, so a lock
file left by a killed process is simply taken over. The file also names its holder, so a
refused run can say who holds the lock.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import time
from pathlib import Path
from types import TracebackType

from tidegate.disk.linksafe import open_lock_file, opened_dir
from tidegate.errors import RepositoryLockedError, TidegateError


class LockFileError(TidegateError):
    """The lock file cannot be created or opened (a read-only or foreign-owned runtime
    directory): no run can start here, and none is running."""

    exit_code = 1


class RunLock:
    def __init__(self, runtime_dir: Path, run_id: str) -> None:
        self.path = runtime_dir / "run.lock"
        self.run_id = run_id
        self._fd: int | None = None
        self.took_over: dict[str, object] | None = None

    def acquire(self) -> RunLock:
        runtime = self.path.parent
        try:
            # Never through a link planted at the directory or the lock's name: the lock
            # file is truncated and rewritten below.
            with opened_dir(runtime.parent, runtime.name, create=True, mode=0o777) as dir_fd:
                fd = open_lock_file(dir_fd, self.path.name, shown=self.path)
        except OSError as exc:
            why = errno.errorcode.get(exc.errno, str(exc.errno)) if exc.errno else "error"
            raise LockFileError(
                f"cannot open the run lock {self.path}: {why} ({exc.strerror}); tidegate "
                f"needs to write its runtime directory {self.path.parent}"
            ) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            who = f"run {holder.get('run_id', '?')} (pid {holder.get('pid', '?')})"
            raise RepositoryLockedError(
                f"another tidegate run holds the repository lock: {who}; lock file {self.path}"
            ) from None
        previous = _read_holder(fd)
        if previous.get("pid"):
            # The file named a holder but nobody held the flock: that process is gone.
            self.took_over = previous
        record = json.dumps({"pid": os.getpid(), "run_id": self.run_id, "since": time.time()})
        os.ftruncate(fd, 0)
        os.pwrite(fd, record.encode(), 0)
        self._fd = fd
        return self

    def release(self, *, restore_took_over: bool = False) -> None:
        """Unlock. ``restore_took_over``: name the dead holder this lock took over again, so
        that whoever takes the lock next still reports it (a head start that was dropped)."""
        if self._fd is None:
            return
        os.ftruncate(self._fd, 0)
        if restore_took_over and self.took_over:
            os.pwrite(self._fd, json.dumps(self.took_over).encode(), 0)
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def _read_holder(fd: int) -> dict[str, object]:
    raw = os.pread(fd, 4096, 0)
    try:
        data = json.loads(raw.decode()) if raw.strip() else {}
    except (ValueError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}
