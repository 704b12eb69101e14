"""A real pseudo-terminal, driven by explicit steps.

:class:`Terminal` runs an explicit argv (never an implicit shell) on a PTY of a fixed size,
and keeps two views of what the program printed:

* the *screen*: a terminal emulator (pyte) fed every byte, so a full-screen program that
  redraws with cursor movements is seen as a person would see it;
* the *visible log*: the byte stream with every control sequence removed, for text that
  scrolled past.

:meth:`Terminal.wait_for` is satisfied only by output that arrived after the *mark*: the
end of the previous checkpoint's match, moved to the end of what was read whenever input is
sent. The text must appear in the visible log after the mark, or on the screen in cells
the program drew after the mark (a full-screen program draws out of order, and may redraw
the same text in the same place), so text that was on the screen before the step (an old
prompt, the first of two identical lines, a stale screen) never satisfies it.
``shown=True`` also accepts the text as the screen shows it now: a state, for a
full-screen program that does not redraw what did not change. Programs that ask the
terminal about itself before they draw (cursor position ``ESC[6n``, device attributes
``ESC[c`` / ``ESC[>c``, foreground and background colours ``OSC 10/11 ;?``) get an
answer, as from a real xterm. Waits match text, not processes: a program running during a
wait can show the awaited text (a fake prompt) and satisfy it; only what came before the
step cannot.

Bounds, whatever the program does: every wait and every send has a step timeout and the
session an overall deadline (:class:`TerminalTimeout` names which ran out); reads and writes
never block (a program that closes its terminal but keeps running, or never reads its
input, cannot stall the caller); the in-memory log keeps its last ``tail_chars``
characters. :meth:`Terminal.close` kills every process of the terminal's session (the
program's group, its background jobs and anything else that stayed in the session), then
the PTY. A process that starts a session of its own (``setsid``) leaves it, and escapes the
kill as it escapes the command runner's group kill: only containment (a pid namespace)
catches it, which is why agents run contained.

Nothing leaves this module unsanitised (``tidegate.text.sanitize``): the preview, the last
lines and the screen lines have secrets redacted and control characters made visible, and
the transcript file (``spill``) holds the visible log passed through the same sanitiser,
whole lines at a time, up to ``spill_bytes``. The raw byte stream is never written down.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import os
import re
import select
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import pexpect
import pyte

from tidegate.exec.containment import Launch
from tidegate.text.sanitize import sanitize

_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI
    r"|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC, DCS, SOS, PM, APC
    r"|\x1b[ -/]*[0-~]"  # two-character and charset sequences
    r"|\x9b[0-?]*[ -/]*[@-~]"  # C1 CSI
)
_MOVES = re.compile(r"\x1b\[[0-9;]*[HfdEF]")  # cursor positioning: a new place, a new line
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_OSC_COLOUR_QUERY = re.compile(rb"\x1b\](1[01]);\?(?:\x07|\x1b\\)")
_COLOURS = {b"10": "rgb:ffff/ffff/ffff", b"11": "rgb:0000/0000/0000"}
_SECONDARY_DA = re.compile(rb"\x1b\[>0?c")
KEYS = {"ctrl-c": "\x03", "ctrl-d": "\x04", "ctrl-s": "\x13", "enter": "\r", "escape": "\x1b"}
"""The named keys :meth:`Terminal.send_key` sends (and a terminal objective's ``key:``)."""
_PRIVATE_KEY_BEGIN = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_PRIVATE_KEY_END = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_SPILL_LINE = 64 * 1024  # a line longer than this is written in pieces, cut at a space
_OUTBOX_CAP = 64 * 1024  # answers to queries a program never reads are dropped beyond this
_DRAIN_READS = 16  # reads before a send, to move the mark past what is already written


def visible(text: str) -> str:
    """``text`` as a person would read it in a scrolling terminal: cursor positioning and
    carriage returns become line breaks, other escape sequences and controls are removed."""
    text = _ESCAPES.sub("", _MOVES.sub("\n", text)).replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROLS.sub("", text)


def sanitized_lines(text: str) -> list[str]:
    """The non-empty lines of ``text``, sanitised as one text (a private key block spans
    lines: line by line, its body would not be recognised), right-trimmed."""
    return [line.rstrip() for line in sanitize(text).splitlines() if line.strip()]


@dataclass(frozen=True)
class TerminalLimits:
    step_timeout_s: float = 15.0
    deadline_s: float = 300.0
    tail_chars: int = 256 * 1024
    spill_bytes: int = 8 * 1024 * 1024
    cols: int = 120
    rows: int = 40


class TerminalTimeout(Exception):
    """A wait or a send ran out: ``which`` is ``step`` (its own timeout) or ``deadline``;
    ``exited`` when the terminal ended first: the program exited, or (``closed``) it closed
    the terminal and went on running. ``sending`` when the program did not read the input
    ``needle`` (else ``needle`` is the text that did not appear)."""

    def __init__(
        self, needle: str, which: str, exited: bool, *, closed: bool = False, sending: bool = False
    ) -> None:
        self.needle, self.which, self.exited = needle, which, exited
        self.closed, self.sending = closed, sending
        if closed:
            why = "the program closed its terminal"
        else:
            why = "the program exited" if exited else f"the {which} timeout ran out"
        if sending:
            super().__init__(f"the program did not read the input {needle!r} before {why}")
        else:
            super().__init__(f"{needle!r} did not appear before {why}")


class _Screen(pyte.Screen):
    """A screen that answers the program's status queries through the terminal."""

    def __init__(self, cols: int, rows: int, terminal: Terminal) -> None:
        super().__init__(cols, rows)
        self._terminal = terminal

    def write_process_input(self, data: str) -> None:
        self._terminal._answer(data.encode())


class _Spill:
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


class Terminal:
    def __init__(
        self,
        argv: Sequence[str],
        *,
        launched: Launch,
        cwd: Path,
        env: Mapping[str, str],
        limits: TerminalLimits | None = None,
        spill: Path | None = None,
        echo: bool = True,
    ) -> None:
        """``launched``: what the guard and containment gave this program
        (``tidegate.exec.containment.launch`` or ``host_launch``): its argv prefix goes
        in front of ``argv``, its environment under ``env``. ``echo=False`` turns the
        PTY's echo off before the program starts (a shell without line editing then shows
        its output only, not the typed commands). OSError when the program cannot be
        started (nothing is left running)."""
        if not argv or not os.path.isabs(argv[0]):
            raise ValueError("a terminal runs an explicit argv whose program is an absolute path")
        argv = [*launched.prefix, *argv]
        env = {**launched.env, **env}  # what the caller set on purpose (HOME) wins
        self.argv = list(argv)
        self.limits = limits or TerminalLimits()
        self._spill = _Spill(spill, self.limits.spill_bytes) if spill is not None else None
        self.spill_path = spill
        self.started = time.monotonic()
        self._deadline = self.started + self.limits.deadline_s
        try:
            self.child: pexpect.spawn[bytes] = pexpect.spawn(
                self.argv[0],
                self.argv[1:],
                cwd=str(cwd),
                env=dict(env),
                dimensions=(self.limits.rows, self.limits.cols),
                encoding=None,
                echo=echo,
            )
        except (OSError, pexpect.ExceptionPexpect) as exc:
            if self._spill is not None:
                self._spill.close()
            raise OSError(f"{self.argv[0]}: {exc}") from exc
        self.child.delaybeforesend = None  # pexpect's default sleeps 50 ms before every send
        # Reads and writes go straight to the PTY, never blocking (pexpect's read waits for
        # the program to exit once the terminal has closed, and its write blocks while the
        # program does not read).
        self._fd = self.child.child_fd
        os.set_blocking(self._fd, False)
        self._screen = _Screen(self.limits.cols, self.limits.rows, self)
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
        self._outbox = bytearray()
        self.bytes_read = 0
        self.exit_status: int | None = None
        self._eof = False

    # -- output ----------------------------------------------------------------------------

    def _absorb(self, data: bytes) -> None:
        self.bytes_read += len(data)
        for match in _OSC_COLOUR_QUERY.finditer(data):
            colour = _COLOURS[match.group(1)]
            self._answer(f"\x1b]{match.group(1).decode()};{colour}\x1b\\".encode())
        if _SECONDARY_DA.search(data):
            self._answer(b"\x1b[>0;10;1c")
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
        if cut != -1 and len(text) - cut < 256 and not _ESCAPES.match(text, cut):
            self._pending, text = text[cut:], text[:cut]
        else:
            self._pending = ""
        shown = visible(text)
        self._log += shown
        if self._spill is not None:
            self._spill.feed(shown)
        excess = len(self._log) - self.limits.tail_chars
        if excess > 0:
            self._log = self._log[excess:]
            self._dropped += excess

    def _pump(self, timeout: float) -> None:
        """Read what the program wrote, waiting up to ``timeout`` for the first byte."""
        if self._eof:
            return
        readable, _, _ = select.select([self._fd], [], [], max(timeout, 0.0))
        if not readable:
            return
        try:
            data = os.read(self._fd, 65536)
        except BlockingIOError:
            return
        except OSError as exc:
            if exc.errno != errno.EIO:  # EIO: every process closed the terminal
                raise
            data = b""
        if data:
            self._absorb(data)
        else:
            self._eof = True

    def _drain(self) -> None:
        """Read what the program has already written (a bounded number of reads: a program
        that floods its terminal never lets it run dry)."""
        for _ in range(_DRAIN_READS):
            before = self.bytes_read
            self._pump(0)
            if self.bytes_read == before:
                return

    def _set_mark(self, offset: int) -> None:
        """Move the mark to the absolute log ``offset`` and to the screen as it is: every
        cell on it now is stale (pyte writes a new cell object for every character drawn,
        and moves cells with their lines when the screen scrolls)."""
        self._mark = offset
        cells = [c for line in self._screen.buffer.values() for c in line.values()]
        self._stale = cells  # kept alive, so that no later cell can reuse an id
        self._stale_ids = {id(c) for c in cells} | {id(self._screen.default_char)}

    def _drawn_on_screen(self, needle: str, shown: bool) -> str | None:
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

    def _since_mark(self) -> str:
        return self._log[max(self._mark - self._dropped, 0) :]

    def screen_text(self) -> str:
        return "\n".join(line.rstrip() for line in self._screen.display).rstrip("\n")

    # -- input -----------------------------------------------------------------------------

    def _answer(self, data: bytes) -> None:
        """Queue a reply to the program's query and write what fits now, without waiting
        (a program that asks and never reads gets no more answers than fit)."""
        if len(self._outbox) + len(data) <= _OUTBOX_CAP:
            self._outbox += data
        self._write_some()

    def _write_some(self) -> None:
        if self._eof:
            self._outbox.clear()
            return
        try:
            written = os.write(self._fd, self._outbox)
        except BlockingIOError:
            return
        except OSError:  # the terminal is gone: nothing will read it
            self._outbox.clear()
            return
        del self._outbox[:written]

    def send(self, text: str, timeout_s: float | None = None) -> None:
        """Type ``text``. The next wait looks only at what the program shows after this.
        Waits (reading the program's output meanwhile, so one that echoes can go on) until
        the program has taken it; TerminalTimeout (``sending``) when it did not before the
        step timeout or the deadline. Nothing is sent once the terminal has ended."""
        self._drain()
        self._set_mark(self._dropped + len(self._log))
        if self._eof:
            return
        self._outbox += text.encode()
        end = min(
            time.monotonic() + (self.limits.step_timeout_s if timeout_s is None else timeout_s),
            self._deadline,
        )
        while True:
            self._write_some()
            if not self._outbox or self._eof:
                return
            now = time.monotonic()
            if now >= end:
                self._outbox.clear()
                which = "deadline" if now >= self._deadline else "step"
                raise TerminalTimeout(text, which, False, sending=True)
            self._pump(min(end - now, 0.02))  # its echo or output may be what holds it up

    def send_line(self, text: str, timeout_s: float | None = None) -> None:
        self.send(text + "\r", timeout_s)

    def send_key(self, name: str, timeout_s: float | None = None) -> None:
        if name not in KEYS:
            raise ValueError(f"unknown key {name!r}; known: {', '.join(KEYS)}")
        self.send(KEYS[name], timeout_s)

    # -- checkpoints -----------------------------------------------------------------------

    def wait_for(
        self, needle: str, timeout_s: float | None = None, *, shown: bool = False
    ) -> float:
        """Block until ``needle`` is shown after the mark (see the module docstring; with
        ``shown``, or is on the screen now); returns the seconds waited. The mark moves to
        the match: the next wait starts after it."""
        start = time.monotonic()
        step_end = start + (self.limits.step_timeout_s if timeout_s is None else timeout_s)
        while not self._match(needle, shown):
            now = time.monotonic()
            if self._eof or now >= step_end or now >= self._deadline:
                which = "deadline" if now >= self._deadline and not self._eof else "step"
                raise TerminalTimeout(needle, which, self._eof, closed=self._closed_early())
            self._pump(min(step_end, self._deadline) - now)
        return time.monotonic() - start

    def _match(self, needle: str, shown: bool) -> bool:
        since = self._since_mark()
        found = since.find(needle)
        if found != -1:
            self.before = since[:found]
            self._set_mark(max(self._mark, self._dropped) + found + len(needle))
            return True
        before = self._drawn_on_screen(needle, shown)
        if before is not None:
            self.before = before
            self._set_mark(self._dropped + len(self._log))
            return True
        return False

    def settle(self, quiet_s: float = 0.2, timeout_s: float = 2.0) -> None:
        """Read until the program has been quiet for ``quiet_s`` (or ``timeout_s``)."""
        end = min(time.monotonic() + timeout_s, self._deadline)
        while not self._eof and time.monotonic() < end:
            before = self.bytes_read
            self._pump(quiet_s)
            if self.bytes_read == before:
                return

    def seen(self, needle: str) -> bool:
        """Whether ``needle`` appeared anywhere in the kept log or on the screen."""
        return needle in self._log or needle in self.screen_text()

    # -- what leaves -----------------------------------------------------------------------

    def last_lines(self, count: int = 50) -> list[str]:
        """The last ``count`` non-empty lines of the log, sanitised."""
        return sanitized_lines(self._log)[-count:]

    def screen_lines(self) -> list[str]:
        """The emulated screen's non-empty lines, sanitised: what a full-screen program
        shows now (its stream, full of cursor moves, reads as noise). A row filled to the
        last column runs on into the next, as the terminal wrapped it, so a long secret
        split by the wrap is still recognised whole."""
        rows = [line.rstrip() for line in self._screen.display]
        text = "".join(row if len(row) == self.limits.cols else row + "\n" for row in rows)
        return sanitized_lines(text)

    def preview(self, chars: int = 2000) -> str:
        """The log's last ``chars`` characters, sanitised (the whole log is sanitised, then
        cut, so a secret at the cut is not left half-shown)."""
        return sanitize(self._log)[-chars:]

    def exited(self) -> bool:
        return self._eof

    def _closed_early(self) -> bool:
        """The terminal ended but its program still runs (after a moment's grace)."""
        if not self._eof:
            return False
        end = time.monotonic() + 0.2
        while time.monotonic() < end:
            if not self.child.isalive():
                return False
            time.sleep(0.01)
        return True

    def exit_description(self) -> str:
        """How the program ended, once the terminal has: ``exit status N``, ``killed by
        signal N``, or that it closed its terminal and still runs; '' while it runs."""
        if not self._eof:
            return ""
        if self._closed_early():
            return "it closed its terminal and kept running"
        if self.child.signalstatus is not None:
            return f"killed by signal {self.child.signalstatus}"
        return f"exit status {self.child.exitstatus}"

    def wait_exit(self, timeout_s: float) -> int | None:
        end = min(time.monotonic() + timeout_s, self._deadline)
        while not self._eof and time.monotonic() < end:
            self._pump(end - time.monotonic())
        return self.close() if self._eof else None

    def close(self) -> int | None:
        """Kill every process of the terminal's session, close the PTY; the exit status
        (None when it had to be killed)."""
        if self.child.pid is not None:
            _kill_session(self.child.pid)  # background jobs outlive a shell that exited
        with contextlib.suppress(Exception):
            self.child.close(force=True)
        if self._spill is not None:
            self._spill.close()
            self._spill = None
        status = self.child.exitstatus
        self.exit_status = status if isinstance(status, int) else None
        return self.exit_status

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _kill_session(leader: int) -> None:
    """SIGKILL the process group of ``leader`` and every process in its session (a
    program that left the group with setpgid is still in the session)."""
    victims = {leader}
    with contextlib.suppress(OSError):
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as handle:
                    fields = handle.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == leader:  # field 6: the session id
                victims.add(int(entry))
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(leader, signal.SIGKILL)
    for pid in victims:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
