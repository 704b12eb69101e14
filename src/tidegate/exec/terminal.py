"""A real pseudo-terminal, driven by explicit steps.

:class:`Terminal` runs an explicit argv (never an implicit shell) on a PTY of a fixed size,
and keeps two views of what the program printed:

* the *screen*: a terminal emulator (pyte) fed every byte, so a full-screen program that
  redraws with cursor movements is seen as a person would see it;
* the *visible log*: the byte stream with every control sequence removed, for text that
  scrolled past.

:meth:`Terminal.wait_for` is satisfied when its text appears in the visible log after the
previous checkpoint, or on the screen. Programs that ask the terminal about itself before
they draw (cursor position ``ESC[6n``, device attributes ``ESC[c`` / ``ESC[>c``,
foreground and background colours ``OSC 10/11 ;?``) get an answer, as from a real xterm.

Bounds: every wait has a step timeout and the session an overall deadline
(:class:`TerminalTimeout` names which ran out); the in-memory log keeps its last
``tail_chars`` characters, and the complete raw byte stream is spilled to a file up to
``spill_bytes``. :meth:`Terminal.close` kills every process of the terminal's session (the
program's group, its background jobs and anything else that stayed in the session), then
the PTY. A process that starts a session of its own (``setsid``) leaves it, and escapes the
kill as it escapes the command runner's group kill: only containment (a pid namespace)
catches it, which is why agents run contained. Text leaves this module sanitised (``tidegate.sanitize``): the preview and the last
line have secrets redacted and control characters made visible.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import re
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import pexpect
import pyte

from tidegate.exec.containment import Launch
from tidegate.sanitize import sanitize

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
_KEYS = {"ctrl-c": "\x03", "ctrl-d": "\x04", "ctrl-s": "\x13", "enter": "\r", "escape": "\x1b"}


def visible(text: str) -> str:
    """``text`` as a person would read it in a scrolling terminal: cursor positioning and
    carriage returns become line breaks, other escape sequences and controls are removed."""
    text = _ESCAPES.sub("", _MOVES.sub("\n", text)).replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROLS.sub("", text)


@dataclass(frozen=True)
class TerminalLimits:
    step_timeout_s: float = 15.0
    deadline_s: float = 300.0
    tail_chars: int = 256 * 1024
    spill_bytes: int = 8 * 1024 * 1024
    cols: int = 120
    rows: int = 40


class TerminalTimeout(Exception):
    """A wait ran out: ``which`` is ``step`` (its own timeout) or ``deadline``; ``exited``
    when the program ended before the text appeared."""

    def __init__(self, needle: str, which: str, exited: bool) -> None:
        self.needle, self.which, self.exited = needle, which, exited
        why = "the program exited" if exited else f"the {which} timeout ran out"
        super().__init__(f"{needle!r} did not appear before {why}")


class _Screen(pyte.Screen):
    """A screen that answers the program's status queries through the PTY."""

    def __init__(self, cols: int, rows: int, child: pexpect.spawn[bytes]) -> None:
        super().__init__(cols, rows)
        self._child = child

    def write_process_input(self, data: str) -> None:
        with contextlib.suppress(OSError):
            self._child.send(data.encode())


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
        its output only, not the typed commands)."""
        if not argv or not os.path.isabs(argv[0]):
            raise ValueError("a terminal runs an explicit argv whose program is an absolute path")
        argv = [*launched.prefix, *argv]
        env = {**launched.env, **env}  # what the caller set on purpose (HOME) wins
        self.argv = list(argv)
        self.limits = limits or TerminalLimits()
        self.started = time.monotonic()
        self._deadline = self.started + self.limits.deadline_s
        self.child: pexpect.spawn[bytes] = pexpect.spawn(
            self.argv[0],
            self.argv[1:],
            cwd=str(cwd),
            env=dict(env),
            dimensions=(self.limits.rows, self.limits.cols),
            encoding=None,
            echo=echo,
        )
        self.child.delaybeforesend = None  # pexpect's default sleeps 50 ms before every send
        self._screen = _Screen(self.limits.cols, self.limits.rows, self.child)
        self._stream = pyte.ByteStream(self._screen)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._log = ""
        self._dropped = 0  # characters cut from the front of the log
        self._mark = 0  # absolute log offset after the last checkpoint
        self._pending = ""
        self._spill: BinaryIO | None = spill.open("wb") if spill is not None else None
        self.spill_path = spill
        self.bytes_read = 0
        self.exit_status: int | None = None
        self._eof = False

    # -- output ----------------------------------------------------------------------------

    def _absorb(self, data: bytes) -> None:
        self.bytes_read += len(data)
        if self._spill is not None and self._spill.tell() < self.limits.spill_bytes:
            self._spill.write(data[: self.limits.spill_bytes - self._spill.tell()])
        for match in _OSC_COLOUR_QUERY.finditer(data):
            colour = _COLOURS[match.group(1)]
            self.send(f"\x1b]{match.group(1).decode()};{colour}\x1b\\")
        if _SECONDARY_DA.search(data):
            self.send("\x1b[>0;10;1c")
        self._stream.feed(data)
        text = self._pending + self._decoder.decode(data)
        # An escape sequence may continue in the next read: keep an unfinished tail back.
        cut = text.rfind("\x1b")
        if cut != -1 and len(text) - cut < 256 and not _ESCAPES.match(text, cut):
            self._pending, text = text[cut:], text[:cut]
        else:
            self._pending = ""
        self._log += visible(text)
        excess = len(self._log) - self.limits.tail_chars
        if excess > 0:
            self._log = self._log[excess:]
            self._dropped += excess

    def _pump(self, timeout: float) -> None:
        if self._eof:
            return
        try:
            self._absorb(self.child.read_nonblocking(65536, timeout=max(timeout, 0.0)))
        except pexpect.TIMEOUT:
            pass
        except pexpect.EOF:
            self._eof = True

    def _since_mark(self) -> str:
        return self._log[max(self._mark - self._dropped, 0) :]

    def screen_text(self) -> str:
        return "\n".join(line.rstrip() for line in self._screen.display).rstrip("\n")

    # -- input -----------------------------------------------------------------------------

    def send(self, text: str) -> None:
        if not self._eof:
            with contextlib.suppress(OSError):
                self.child.send(text.encode())

    def send_line(self, text: str) -> None:
        self.send(text + "\r")

    def send_key(self, name: str) -> None:
        if name not in _KEYS:
            raise ValueError(f"unknown key {name!r}; known: {', '.join(_KEYS)}")
        self.send(_KEYS[name])

    # -- checkpoints -----------------------------------------------------------------------

    def wait_for(self, needle: str, timeout_s: float | None = None) -> float:
        """Block until ``needle`` is visible after the previous checkpoint (or on the
        screen); returns the seconds waited. The next wait starts after it."""
        start = time.monotonic()
        step_end = start + (self.limits.step_timeout_s if timeout_s is None else timeout_s)
        while True:
            found = self._since_mark().find(needle)
            if found != -1:
                self._mark = (
                    self._dropped + max(self._mark - self._dropped, 0) + found + len(needle)
                )
                return time.monotonic() - start
            if needle in self.screen_text():
                self._mark = self._dropped + len(self._log)
                return time.monotonic() - start
            now = time.monotonic()
            if self._eof or now >= step_end or now >= self._deadline:
                which = "deadline" if now >= self._deadline and not self._eof else "step"
                raise TerminalTimeout(needle, which, self._eof)
            self._pump(min(step_end, self._deadline) - now)

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
        lines = [line for line in self._log.splitlines() if line.strip()]
        return [sanitize(line) for line in lines[-count:]]

    def screen_lines(self) -> list[str]:
        """The emulated screen's non-empty lines, sanitised: what a full-screen program
        shows now (its stream, full of cursor moves, reads as noise)."""
        return [sanitize(line.rstrip()) for line in self._screen.display if line.strip()]

    def preview(self, chars: int = 2000) -> str:
        return sanitize(self._log[-chars:])

    def exited(self) -> bool:
        return self._eof

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
