"""A command's output streams, bounded: the tail kept in memory, the head spilled to a
fresh file that no planted link can redirect."""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

from tidegate.disk.linksafe import fresh_file


class Stream:
    """One output stream: a bounded tail in memory, a bounded spill on disk."""

    def __init__(self, fh: BinaryIO, tail_limit: int, spill_limit: int) -> None:
        self.fh = fh
        self.tail_limit = tail_limit
        self.spill_limit = spill_limit
        self.tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        room = self.spill_limit - self.total
        if room > 0:
            self.fh.write(data[:room])
        self.total += len(data)
        if self.tail_limit <= 0:
            return
        if len(data) >= self.tail_limit:
            self.tail = bytearray(data[-self.tail_limit :])
            return
        self.tail += data
        if len(self.tail) > 2 * self.tail_limit:
            del self.tail[: -self.tail_limit]

    def text(self) -> tuple[str, bool]:
        data = bytes(self.tail[-self.tail_limit :]) if self.tail_limit > 0 else b""
        cut = self.total > len(data)
        if cut:  # do not start with half a UTF-8 character
            skip = 0
            while skip < min(3, len(data)) and 0x80 <= data[skip] <= 0xBF:
                skip += 1
            data = data[skip:]
        return data.decode("utf-8", "replace"), cut


def open_spill(path: Path) -> BinaryIO:
    """A fresh spill file: whatever was left or planted at its name (a symlink, a hard
    link to a file elsewhere, a FIFO) is unlinked, never written through, and a new file
    is created with O_EXCL in a directory opened without following a link."""
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        fd = fresh_file(dir_fd, path.name, shown=path)
    finally:
        os.close(dir_fd)
    return os.fdopen(fd, "wb")
