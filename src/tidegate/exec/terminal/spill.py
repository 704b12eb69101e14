"""The transcript file: a terminal's visible log, sanitised whole lines at a time."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import BinaryIO

from tidegate.text.sanitize import sanitize

_PRIVATE_KEY_BEGIN = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_PRIVATE_KEY_END = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_SPILL_LINE = 64 * 1024  # a line longer than this is written in pieces, cut at a space


class Spill:
    """The transcript file: the visible log, complete up to ``cap`` bytes, passed through
    ``sanitize`` whole lines at a time so that no secret is split across two writes (a
    private key block, which spans lines, is withheld from its BEGIN line to its END line).
    Created new, never through a link, readable by its owner only."""

    def __init__(self, path: Path, cap: int) -> None:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        self._file: BinaryIO = os.fdopen(os.open(path, flags, 0o600), "wb")
        self._room = cap
        self._pending = ""
        self._in_key = False

    def feed(self, text: str) -> None:
        self._pending += text
        cut = self._pending.rfind("\n") + 1
        if cut == 0 and len(self._pending) > _SPILL_LINE:
            # An overlong line: cut at a space, which no secret-shaped value contains.
            cut = self._pending.rfind(" ", 0, _SPILL_LINE) + 1 or len(self._pending)
        if cut:
            self._write(self._pending[:cut])
            self._pending = self._pending[cut:]

    def close(self) -> None:
        self._write(self._pending)
        self._pending = ""
        self._file.close()

    def _write(self, text: str) -> None:
        if self._in_key:
            end = _PRIVATE_KEY_END.search(text)
            if end is None:
                return
            text, self._in_key = text[end.end() :], False
        begins = list(_PRIVATE_KEY_BEGIN.finditer(text))
        if begins and not _PRIVATE_KEY_END.search(text, begins[-1].end()):
            self._in_key = True  # sanitize redacts to the end of this text; the rest waits
        data = sanitize(text).encode()[: self._room]
        if data:
            self._file.write(data)
            self._room -= len(data)
