"""Writing where someone else could have planted a link.

A repository, a task or a command can put a symbolic link (or a hard link, or a FIFO) at
any name tidegate is about to write in a directory they can write: a task directory, the
work tree's ``.tidegate/``, a gym or spill directory. Every primitive here works through a
directory descriptor, so nothing planted sends a write elsewhere:

* ``open_dir(base, *parts)``: ``base`` is opened as given (its caller trusts it: a path the
  user named, or one tidegate validated); each of ``parts`` is opened relative to the one
  before with ``O_NOFOLLOW | O_DIRECTORY`` (made first, with ``mkdirat``, when ``create``).
* ``replace_file(dir_fd, name, data)``: a temporary file with an unpredictable name,
  created ``O_CREAT | O_EXCL | O_NOFOLLOW`` in that directory, written and fsynced, renamed
  over ``name`` within the same descriptor, then the directory fsynced. A reader (or a
  crash) sees the old file or the new one, never a mix; a hard link to ``name`` elsewhere
  keeps the old bytes.
* ``fresh_file(dir_fd, name)``: whatever is at ``name`` is unlinked (never followed) and a
  new file is created there with ``O_EXCL | O_NOFOLLOW``.
* ``open_lock_file(dir_fd, name)`` / ``held_lock(dir_fd, name)``: a lock file opened
  without following links, which must be a regular file (and an ``flock`` held on it).

A name that is a symlink or not the kind of file it must be is refused with
``WriteRefused``: one line naming the path, exit 2. The fault point ``write.half_written``
(``tidegate.disk.faults``) kills the process halfway through ``replace_file``'s temporary file.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

from tidegate.disk.faults import maybe_crash
from tidegate.errors import UsageError

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
TEMP_SUFFIX = ".tmp"
FAULT_HALF_WRITTEN = "write.half_written"


class WriteRefused(UsageError):
    """tidegate would have written through a symlink, or into something that is not a
    plain directory or file, or at a name that is not one path component."""


def check_name(name: str) -> str:
    """``name`` if it is one path component (not empty, ``.``, ``..``; no ``/`` or NUL)."""
    if name in ("", ".", "..") or "/" in name or "\0" in name:
        raise WriteRefused(f"{name!r}: not a single file name")
    return name


def open_dir(base: Path, *parts: str, create: bool = False, mode: int = 0o700) -> int:
    """A descriptor of ``base/parts...``; every part opened without following a link. The
    caller closes it."""
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    shown = base
    try:
        for part in parts:
            shown = shown / check_name(part)
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, mode, dir_fd=fd)
            try:
                child = os.open(part, DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise WriteRefused(f"{shown}: {_not_a_dir(fd, part)}") from exc
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def opened_dir(base: Path, *parts: str, create: bool = False, mode: int = 0o700) -> Iterator[int]:
    """``open_dir`` as a context: the descriptor is closed on the way out."""
    fd = open_dir(base, *parts, create=create, mode=mode)
    try:
        yield fd
    finally:
        os.close(fd)


def temp_name(name: str) -> str:
    """``.NAME.<random>.tmp``: unpredictable, so nothing can be planted at it in advance."""
    return f".{name[:100]}.{secrets.token_hex(8)}{TEMP_SUFFIX}"


def replace_file(
    dir_fd: int, name: str, data: bytes, *, mode: int | None = None, shown: Path | str = ""
) -> None:
    """Atomically and durably replace ``name`` in ``dir_fd`` with ``data``. ``mode``: the
    permission bits (None: the existing file's, else 0644). ``name`` must be missing or a
    regular file; ``shown`` names it in errors."""
    current = entry_mode(dir_fd, name)
    if current is not None and not stat.S_ISREG(current):
        raise WriteRefused(f"{shown or name}: {_describe(current)}; not replaced")
    if mode is None:
        mode = stat.S_IMODE(current) if current is not None else 0o644
    tmp = temp_name(check_name(name))
    fd = os.open(tmp, NEW_FILE_FLAGS, 0o600, dir_fd=dir_fd)
    try:
        try:
            half = len(data) // 2
            _write_all(fd, data[:half])
            maybe_crash(FAULT_HALF_WRITTEN)
            _write_all(fd, data[half:])
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    os.fsync(dir_fd)


def fresh_file(dir_fd: int, name: str, mode: int = 0o600, *, shown: Path | str = "") -> int:
    """A new, empty file at ``name`` opened for writing, whatever was there before removed
    (a link is unlinked, never followed; a directory is refused). The caller closes it."""
    current = entry_mode(dir_fd, check_name(name))
    if current is not None:
        if stat.S_ISDIR(current):
            raise WriteRefused(f"{shown or name}: a directory; not replaced")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=dir_fd)
    try:
        return os.open(name, NEW_FILE_FLAGS, mode, dir_fd=dir_fd)
    except FileExistsError as exc:  # planted again between the unlink and the open
        raise WriteRefused(f"{shown or name}: replaced while being written; not followed") from exc


def open_lock_file(dir_fd: int, name: str, *, shown: Path | str = "") -> int:
    """The lock file ``name`` opened read-write (created, mode 0600), never through a
    link, and refused unless it is a regular file. The caller closes it."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(check_name(name), flags, 0o600, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise WriteRefused(f"{shown or name}: a symlink; not followed") from exc
        raise
    kind = os.fstat(fd).st_mode
    if not stat.S_ISREG(kind):
        os.close(fd)
        raise WriteRefused(f"{shown or name}: {_describe(kind)}, not a lock file")
    return fd


@contextlib.contextmanager
def held_lock(
    dir_fd: int, name: str, *, blocking: bool = True, shown: Path | str = ""
) -> Iterator[int]:
    """An exclusive ``flock`` on the lock file ``name`` (``open_lock_file``), held for the
    block. Not blocking: ``BlockingIOError`` when another holder has it."""
    fd = open_lock_file(dir_fd, name, shown=shown)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        try:
            yield fd
        finally:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def entry_mode(dir_fd: int, name: str) -> int | None:
    """The ``st_mode`` of ``name`` itself (a link is not followed); None when missing."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _not_a_dir(dir_fd: int, name: str) -> str:
    current = entry_mode(dir_fd, name)
    if current is not None and stat.S_ISLNK(current):
        return "a symlink; not followed"
    return "not a directory"


def _describe(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISREG(mode):
        return "a regular file"
    return "not a regular file"
