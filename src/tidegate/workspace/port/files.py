"""The file steps of a commit: new content in an fsynced temp file beside its target, and
whole reads and rehashes through a descriptor."""

from __future__ import annotations

import itertools
import os
from contextlib import suppress

from tidegate.workspace.states import hash_fd

_TMP_COUNTER = itertools.count()


def temp_name(name: str) -> str:
    return f".{name[:80]}.tidegate-{os.getpid()}-{next(_TMP_COUNTER)}.tmp"


def write_temp(
    dir_fd: int, name: str, data: bytes, mode: int, owner: tuple[int, int] | None
) -> str:
    """A new file beside ``name`` holding ``data``, fsynced; returns its name."""
    tmp = temp_name(name)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o600, dir_fd=dir_fd)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if owner is not None and os.geteuid() == 0:
            with suppress(OSError):
                os.fchown(fd, *owner)
        os.fchmod(fd, mode)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    os.close(fd)
    return tmp


def fsync_dir(dir_fd: int) -> None:
    with suppress(OSError):
        os.fsync(dir_fd)


def read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def rehash(fd: int) -> str:
    os.lseek(fd, 0, os.SEEK_SET)
    return hash_fd(fd)
