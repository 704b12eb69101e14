"""The two views of what a terminal program printed (the emulated screen and the visible
log) and the mark that checkpoints look after (see the ``tidegate.exec.terminal`` doc)."""

from __future__ import annotations

import codecs
from collections.abc import Callable
from pathlib import Path

import pyte

from tidegate.exec.terminal.spill import Spill
from tidegate.exec.terminal.text import ESCAPES, sanitized_lines, visible
from tidegate.text.sanitize import sanitize


class _Screen(pyte.Screen):
    """A screen that answers the program's status queries through the terminal."""

    def __init__(self, cols: int, rows: int, answer: Callable[[bytes], None]) -> None:
        super().__init__(cols, rows)
        self._answer = answer

    def write_process_input(self, data: str) -> None:
        self._answer(data.encode())


class Transcript:
    """The screen (pyte, fed every byte), the visible log (its last ``tail_chars``
    characters; the spill file, if any, gets all of it sanitised) and the mark.

    ``answer`` receives the screen's replies to the program's queries."""

    def __init__(
        self,
        cols: int,
        rows: int,
        tail_chars: int,
        answer: Callable[[bytes], None],
        spill: Path | None,
        spill_bytes: int,
    ) -> None:
        self.cols = cols
        self.tail_chars = tail_chars
        self._spill = Spill(spill, spill_bytes) if spill is not None else None
        self._screen = _Screen(cols, rows, answer)
        self._stream = pyte.ByteStream(self._screen)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._log = ""
        self._dropped = 0  # characters cut from the front of the log
        self._mark = 0  # absolute log offset where the next wait starts looking
        self._stale: list[pyte.screens.Char] = []  # the screen's cells when the mark was set
        self._stale_ids: set[int] = {id(self._screen.default_char)}
        self.before = ""
        """What was shown before the last wait's match: the log from the mark to the
        match, or, for a match on the screen, the screen's text before it."""
        self._pending = ""

    def close_spill(self) -> None:
        if self._spill is not None:
            self._spill.close()
            self._spill = None

    def feed(self, data: bytes) -> None:
        """Feed what the program wrote to the screen, the log and the spill file."""
        try:
            self._stream.feed(data)
        except (TypeError, ValueError, IndexError, KeyError):
            # pyte's handlers have fixed arities: a sequence with extra parameters
            # (``ESC[1;2n``, ``ESC[1;2A``) raises inside its parser. The program's output
            # must never crash the driver: the rest of this read is dropped from the
            # screen (the log keeps it) and a fresh parser goes on with the next read.
            self._stream = pyte.ByteStream(self._screen)
        text = self._pending + self._decoder.decode(data)
        # An escape sequence may continue in the next read: keep an unfinished tail back.
        cut = text.rfind("\x1b")
        if cut != -1 and len(text) - cut < 256 and not ESCAPES.match(text, cut):
            self._pending, text = text[cut:], text[:cut]
        else:
            self._pending = ""
        shown = visible(text)
        self._log += shown
        if self._spill is not None:
            self._spill.feed(shown)
        excess = len(self._log) - self.tail_chars
        if excess > 0:
            self._log = self._log[excess:]
            self._dropped += excess

    def set_mark(self, offset: int) -> None:
        """Move the mark to the absolute log ``offset`` and to the screen as it is: every
        cell on it now is stale (pyte writes a new cell object for every character drawn,
        and moves cells with their lines when the screen scrolls)."""
        self._mark = offset
        cells = [c for line in self._screen.buffer.values() for c in line.values()]
        self._stale = cells  # kept alive, so that no later cell can reuse an id
        self._stale_ids = {id(c) for c in cells} | {id(self._screen.default_char)}

    def drawn_on_screen(self, needle: str, shown: bool) -> str | None:
        """The screen's text before the first occurrence of ``needle`` that the program
        drew (in whole or in part) after the mark, or, with ``shown``, before any; None
        when there is none. (A row with wide or combining characters counts as drawn when
        any of its cells was.)"""
        screen, above = self._screen, list[str]()
        for y, text in enumerate(screen.display):
            start = text.find(needle)
            while start != -1:
                line = screen.buffer[y]
                exact = len(text) == screen.columns  # one character per cell
                cells = range(start, start + len(needle)) if exact else range(screen.columns)
                if shown or any(id(line[x]) not in self._stale_ids for x in cells):
                    return "\n".join([*above, text[:start]])
                start = text.find(needle, start + 1)
            above.append(text.rstrip())
        return None

    def since_mark(self) -> str:
        return self._log[max(self._mark - self._dropped, 0) :]

    def screen_text(self) -> str:
        return "\n".join(line.rstrip() for line in self._screen.display).rstrip("\n")

    def mark_end(self) -> None:
        """Move the mark past everything shown so far."""
        self.set_mark(self._dropped + len(self._log))

    def match(self, needle: str, shown: bool) -> bool:
        """Whether ``needle`` is shown after the mark (or, with ``shown``, on the screen
        now); the mark then moves to the match and ``before`` holds what preceded it."""
        since = self.since_mark()
        found = since.find(needle)
        if found != -1:
            self.before = since[:found]
            self.set_mark(max(self._mark, self._dropped) + found + len(needle))
            return True
        before = self.drawn_on_screen(needle, shown)
        if before is not None:
            self.before = before
            self.set_mark(self._dropped + len(self._log))
            return True
        return False

    def seen(self, needle: str) -> bool:
        """Whether ``needle`` appeared anywhere in the kept log or on the screen."""
        return needle in self._log or needle in self.screen_text()

    def last_lines(self, count: int = 50) -> list[str]:
        """The last ``count`` non-empty lines of the log, sanitised."""
        return sanitized_lines(self._log)[-count:]

    def screen_lines(self) -> list[str]:
        """The emulated screen's non-empty lines, sanitised: what a full-screen program
        shows now (its stream, full of cursor moves, reads as noise). A row filled to the
        last column runs on into the next, as the terminal wrapped it, so a long secret
        split by the wrap is still recognised whole."""
        rows = [line.rstrip() for line in self._screen.display]
        text = "".join(row if len(row) == self.cols else row + "\n" for row in rows)
        return sanitized_lines(text)

    def preview(self, chars: int = 2000) -> str:
        """The log's last ``chars`` characters, sanitised (the whole log is sanitised, then
        cut, so a secret at the cut is not left half-shown)."""
        return sanitize(self._log)[-chars:]
