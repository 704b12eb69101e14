"""Durable file replacement in a task directory, and the task directory's lock.

A task directory usually lives in a repository, so whatever is in it may have been put
there by someone else: every write goes through the directory's descriptor without
following a link (``tidegate.disk.linksafe``). ``write_into`` writes each file to a fresh,
unpredictably named temporary file, fsyncs it, renames it over the target within the same
directory and fsyncs the directory: a reader (or a crash) sees the old file or the new
one, never a mix. ``TaskLock`` serialises the commands that change a task directory.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType

from tidegate.disk.linksafe import TEMP_SUFFIX, entry_mode, held_lock, opened_dir, replace_file
from tidegate.errors import UsageError
from tidegate.ledger.errors import LedgerLockedError

LOCK_FILE = ".ledger.lock"


@contextlib.contextmanager
def write_into(task_dir: Path) -> Iterator[Callable[[str, bytes], None]]:
    """A writer ``write(name, data)`` that replaces ``task_dir/name`` atomically and
    durably, keeping its permissions; every write goes through one descriptor of the
    directory, opened when the block starts."""
    with opened_dir(task_dir) as dir_fd:

        def write(name: str, data: bytes) -> None:
            replace_file(dir_fd, name, data, shown=task_dir / name)

        yield write


def stale_temp_files(directory: Path) -> list[Path]:
    """Temporary files a killed writer left behind (``.NAME.X.tmp``, regular files)."""
    found = []
    with opened_dir(directory) as dir_fd:
        for name in os.listdir(dir_fd):
            if name.startswith(".") and name.endswith(TEMP_SUFFIX) and name.count(".") >= 3:
                kind = entry_mode(dir_fd, name)
                if kind is not None and stat.S_ISREG(kind):
                    found.append(directory / name)
    return sorted(found)


def remove_stale_temp_files(directory: Path) -> None:
    for stale in stale_temp_files(directory):
        stale.unlink(missing_ok=True)  # a name is unlinked, never followed


class TaskLock:
    """An exclusive ``flock`` on ``TASK_DIR/.ledger.lock`` (never through a link),
    released when the holder exits (or dies): a second writer is refused at once instead
    of waiting."""

    def __init__(self, task_dir: Path) -> None:
        self.path = task_dir / LOCK_FILE
        self._held: contextlib.ExitStack | None = None

    def __enter__(self) -> TaskLock:
        if not self.path.parent.is_dir():
            raise UsageError(
                f"{self.path.parent}: no such task directory (create one with `tidegate ledger init`)"
            )
        with contextlib.ExitStack() as stack:
            dir_fd = stack.enter_context(opened_dir(self.path.parent))
            try:
                stack.enter_context(held_lock(dir_fd, LOCK_FILE, blocking=False, shown=self.path))
            except BlockingIOError:
                raise LedgerLockedError(
                    f"{self.path.parent}: another ledger command is updating this task"
                ) from None
            self._held = stack.pop_all()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._held is not None:
            self._held.close()
            self._held = None
