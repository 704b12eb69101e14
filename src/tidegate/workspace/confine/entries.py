"""Entries beneath a directory descriptor, looked at without following them: the open
flags, races told apart from errors, and an entry's typed state."""

from __future__ import annotations

import errno
import os
import stat

from tidegate.workspace.confine.refusal import PathRefused
from tidegate.workspace.states import DIRECTORY, MISSING, EntryState, hash_fd

MAX_RETRIES = 16  # a component that flips between kinds while we look at it

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a fifo swapped in for a file must not block the open; it has no effect on
# reading regular files.
FILE_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def is_race(exc: OSError) -> bool:
    return exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT)


def entry_state(dir_fd: int, name: str) -> EntryState:
    """The typed state of ``name`` in ``dir_fd``, never following it."""
    for _ in range(MAX_RETRIES):
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return MISSING
        if stat.S_ISDIR(st.st_mode):
            return DIRECTORY
        if stat.S_ISLNK(st.st_mode):
            try:
                return EntryState.symlink(os.fsencode(os.readlink(name, dir_fd=dir_fd)))
            except (FileNotFoundError, OSError):
                continue
        if not stat.S_ISREG(st.st_mode):
            return EntryState.special(st)
        try:
            fd = os.open(name, FILE_READ_FLAGS, dir_fd=dir_fd)
        except OSError as exc:
            if is_race(exc):
                continue
            raise
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            return EntryState("file", hash_fd(fd))
        finally:
            os.close(fd)
    raise PathRefused(name, "unstable")
