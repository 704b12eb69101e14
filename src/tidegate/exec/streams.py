"""A command's output streams, bounded: the tail kept in memory, the head spilled to a
fresh file that no planted link can redirect."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
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


OutputObserver = Callable[[str], None]
"""Told the latest line of a running command's output (raw text: the caller sanitises)."""

LINE_BYTES = 1024
"""The most of one line a LineWatch keeps (its end)."""
WATCH_INTERVAL_S = 0.1
"""A LineWatch tells its observer at most this often."""
_BREAK = re.compile(rb"[\r\n]")


class LineWatch:
    """The latest non-blank line of a command's output (both streams), told to an observer
    at most every ``WATCH_INTERVAL_S``: only the last ``LINE_BYTES`` of each read are
    looked at, so a large read costs no more than a small one. A carriage return ends a
    line as a newline does (progress bars redraw their line with one)."""

    def __init__(self, observer: OutputObserver, interval: float = WATCH_INTERVAL_S) -> None:
        self.observer = observer
        self.interval = interval
        self._line = b""
        self._open = False  # the next bytes continue ``_line``
        self._pending = False
        self._told = float("-inf")

    def seen(self, data: bytes) -> None:
        window = data[-LINE_BYTES:]
        whole = len(window) == len(data)
        parts = _BREAK.split(window)
        last = parts[-1]
        if len(parts) == 1:  # no break: the current line goes on (or a long one began)
            self._line = ((self._line if self._open and whole else b"") + last)[-LINE_BYTES:]
            self._open = True
            self._pending = True
            return
        if last.strip():
            self._line, self._open, self._pending = last, True, True
            return
        for i in range(len(parts) - 2, -1, -1):
            part = parts[i]
            if i == 0 and whole and self._open:
                part = (self._line + part)[-LINE_BYTES:]
            if part.strip():
                self._line, self._pending = part, True
                break
        self._open = False

    def wait(self, now: float) -> float | None:
        """How long until something is due to be told (None: nothing is pending)."""
        if not self._pending:
            return None
        return max(0.0, self._told + self.interval - now)

    def tick(self, now: float | None = None, *, force: bool = False) -> None:
        """Tell the observer the latest line if it changed and the interval has passed."""
        if not self._pending:
            return
        now = time.monotonic() if now is None else now
        if force or now - self._told >= self.interval:
            self._pending = False
            self._told = now
            self.observer(self._line.decode("utf-8", "replace"))


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
