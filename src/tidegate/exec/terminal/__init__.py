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

import contextlib
import errno
import os
import re
import select
import signal
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import msgspec
import pexpect

from tidegate.exec.containment import Launch
from tidegate.exec.terminal.transcript import Transcript

_OSC_COLOUR_QUERY = re.compile(rb"\x1b\](1[01]);\?(?:\x07|\x1b\\)")
_COLOURS = {b"10": "rgb:ffff/ffff/ffff", b"11": "rgb:0000/0000/0000"}
_SECONDARY_DA = re.compile(rb"\x1b\[>0?c")
KEYS = {"ctrl-c": "\x03", "ctrl-d": "\x04", "ctrl-s": "\x13", "enter": "\r", "escape": "\x1b"}
"""The named keys :meth:`Terminal.send_key` sends (and a terminal objective's ``key:``)."""
_OUTBOX_CAP = 64 * 1024  # answers to queries a program never reads are dropped beyond this
_DRAIN_READS = 16  # reads before a send, to move the mark past what is already written


class TerminalLimits(msgspec.Struct, frozen=True):
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
        self._view = Transcript(
            self.limits.cols,
            self.limits.rows,
            self.limits.tail_chars,
            self._answer,
            spill,
            self.limits.spill_bytes,
        )
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
            self._view.close_spill()
            raise OSError(f"{self.argv[0]}: {exc}") from exc
        self.child.delaybeforesend = None  # pexpect's default sleeps 50 ms before every send
        # Reads and writes go straight to the PTY, never blocking (pexpect's read waits for
        # the program to exit once the terminal has closed, and its write blocks while the
        # program does not read).
        self._fd = self.child.child_fd
        os.set_blocking(self._fd, False)
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
        self._view.feed(data)

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

    @property
    def before(self) -> str:
        """What was shown before the last wait's match: the log from the mark to the
        match, or, for a match on the screen, the screen's text before it."""
        return self._view.before

    def screen_text(self) -> str:
        return self._view.screen_text()

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
        self._view.mark_end()
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
        while not self._view.match(needle, shown):
            now = time.monotonic()
            if self._eof or now >= step_end or now >= self._deadline:
                which = "deadline" if now >= self._deadline and not self._eof else "step"
                raise TerminalTimeout(needle, which, self._eof, closed=self._closed_early())
            self._pump(min(step_end, self._deadline) - now)
        return time.monotonic() - start

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
        return self._view.seen(needle)

    # -- what leaves -----------------------------------------------------------------------

    def last_lines(self, count: int = 50) -> list[str]:
        """The last ``count`` non-empty lines of the log, sanitised."""
        return self._view.last_lines(count)

    def screen_lines(self) -> list[str]:
        """The emulated screen's non-empty lines, sanitised (see ``Transcript``)."""
        return self._view.screen_lines()

    def preview(self, chars: int = 2000) -> str:
        """The log's last ``chars`` characters, sanitised."""
        return self._view.preview(chars)

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
        self._view.close_spill()
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
