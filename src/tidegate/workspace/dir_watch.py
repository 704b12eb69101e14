"""Which directories had an entry created, deleted or renamed: inotify, read on demand.

The secret index (``workspace/secret_index.py``) must know, before every contained
command, which directories of the workspace changed their listing since the last command.
Stat-ing every directory to find out costs a few milliseconds per thousand directories,
on every command. Instead the index puts one inotify watch on each directory it lists
(before listing it, so nothing between the two is missed) and reads the queued events
before each command: the kernel queues an event on a directory's watch within the
``creat``/``unlink``/``rename``/``link``/``mkdir``/``rmdir`` call that changed its
entries, whichever process, mount or namespace made it, so the queue read at that moment
names every directory whose listing moved. Writes to file contents are not asked for
(they do not change a listing).

Used only where that holds, and nothing is silent when it does not: the workspace must
be on a local file system (``LOCAL_FILESYSTEMS``: network and FUSE file systems change
without the local kernel seeing it); a directory on another device, or one whose watch
could not be added (``max_user_watches``), is left to the stat check; a queue overflow
is reported and the caller stat-checks everything once.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import sys
import weakref

import msgspec

IN_ATTRIB = 0x4
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
MASK = (IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF) | (
    IN_MOVE_SELF | IN_ONLYDIR
)
"""Entry changes, and the directory's own attributes (a chmod can make it unlistable)."""
LOCAL_FILESYSTEMS = {
    0xEF53: "ext2/3/4",
    0x58465342: "xfs",
    0x9123683E: "btrfs",
    0x01021994: "tmpfs",
}
_EVENT = struct.Struct("iIII")


class Events(msgspec.Struct):
    changed: set[int] = msgspec.field(default_factory=set)
    """Watches whose directory's entries (or own attributes) changed."""
    gone: set[int] = msgspec.field(default_factory=set)
    """Watches the kernel removed (the directory was deleted or unmounted)."""
    overflowed: bool = False
    """Events were lost: every directory must be checked another way."""


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def filesystem_type(path: str) -> int | None:
    """``statfs(path).f_type``, or None when it cannot be read."""
    libc = _libc()
    if libc is None:
        return None
    buf = ctypes.create_string_buffer(256)  # struct statfs is 120 bytes on 64-bit Linux
    if libc.statfs(os.fsencode(path), buf) != 0:
        return None
    return int(struct.unpack_from("l", buf.raw)[0])


class DirWatch:
    """One inotify instance: ``add`` a directory (by an open descriptor), ``read`` what
    changed since the last read. ``open`` returns None where events cannot be trusted."""

    def __init__(self, libc: ctypes.CDLL, fd: int) -> None:
        self._libc = libc
        self.fd = fd
        self._close = weakref.finalize(self, os.close, fd)

    @classmethod
    def open(cls, root: str) -> DirWatch | None:
        libc = _libc()
        if libc is None or filesystem_type(root) not in LOCAL_FILESYSTEMS:
            return None
        fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        return None if fd < 0 else cls(libc, fd)

    def add(self, dir_fd: int) -> int | None:
        """Watch the directory open at ``dir_fd`` (that very inode, not whatever its path
        names by now); its watch descriptor, or None when the kernel refused."""
        wd = self._libc.inotify_add_watch(self.fd, f"/proc/self/fd/{dir_fd}".encode(), MASK)
        return None if wd < 0 else int(wd)

    def remove(self, wd: int) -> None:
        self._libc.inotify_rm_watch(self.fd, wd)

    def read(self) -> Events:
        """Everything queued so far (never blocks)."""
        events = Events()
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return events
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                events.overflowed = True
                return events
            offset = 0
            while offset < len(data):
                wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
                offset += _EVENT.size + length
                if mask & IN_Q_OVERFLOW:
                    events.overflowed = True
                elif mask & IN_IGNORED:
                    events.gone.add(wd)
                elif not (mask & IN_ATTRIB and length):  # a child's attributes: no matter
                    events.changed.add(wd)

    def close(self) -> None:
        self._close()
