"""Attack: the program on a terminal behaves as badly as it can. It closes its terminal and
keeps running, never reads what is typed to it, floods its output, asks the terminal
questions without end, redraws stale text with cursor moves, ignores every signal, or
plants a link where the transcript goes. Whatever it does, every wait and every send ends
by its timeout, the transcript stays bounded, and ``close`` leaves nothing running.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from tidegate.exec.containment import host_launch
from tidegate.exec.guard import Clearance
from tidegate.exec.terminal import Terminal, TerminalLimits, TerminalTimeout

ENV = {"PATH": os.environ["PATH"], "TERM": "xterm-256color", "LANG": "C.UTF-8"}


def term(code: str, tmp_path: Path, spill: Path | None = None, **limits: float) -> Terminal:
    return Terminal(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={**ENV, "HOME": str(tmp_path)},
        limits=TerminalLimits(**limits),  # type: ignore[arg-type]
        spill=spill,
        launched=host_launch(Clearance.user()),
    )


def gone(pid: int, within_s: float = 5.0) -> bool:
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                if handle.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


CLOSES_ITS_TERMINAL = (
    "import os, time\n"
    "print('detaching', flush=True)\n"
    "for fd in (0, 1, 2): os.close(fd)\n"
    "time.sleep(20)\n"
)


def test_a_program_that_closes_its_terminal_and_runs_on_does_not_stall_a_wait(
    tmp_path: Path,
) -> None:
    t = term(CLOSES_ITS_TERMINAL, tmp_path, step_timeout_s=2, deadline_s=10)
    pid = t.child.pid
    start = time.monotonic()
    with pytest.raises(TerminalTimeout) as ended:
        t.wait_for("never")
    assert time.monotonic() - start < 5  # not the program's 20 seconds
    assert ended.value.exited and ended.value.closed
    assert "closed its terminal" in str(ended.value)
    assert t.exit_description() == "it closed its terminal and kept running"
    assert t.wait_exit(1.0) is None  # killed, so no exit status
    assert time.monotonic() - start < 8
    assert gone(pid)


NEVER_READS = "import time\nprint('up', flush=True)\ntime.sleep(8)\n"


def test_input_a_program_never_reads_times_out_instead_of_blocking(tmp_path: Path) -> None:
    t = term(NEVER_READS, tmp_path, step_timeout_s=1.5)
    t.wait_for("up")
    start = time.monotonic()
    with pytest.raises(TerminalTimeout) as stuck:
        for _ in range(5000):  # far more than a PTY's input queue holds
            t.send_line("y" * 100)
    assert time.monotonic() - start < 5  # not until the program exits, 8 seconds on
    assert stuck.value.sending and not stuck.value.exited and stuck.value.which == "step"
    assert str(stuck.value).startswith("the program did not read the input 'yyy")
    t.close()


FLOOD = "import sys\nwhile True: sys.stdout.write('flood ' * 1000 + '\\n')\n"


def test_an_endless_flood_is_bounded_in_time_memory_and_transcript(tmp_path: Path) -> None:
    spill = tmp_path / "flood.log"
    t = term(FLOOD, tmp_path, spill, step_timeout_s=1.5, tail_chars=50_000, spill_bytes=200_000)
    pid = t.child.pid
    start = time.monotonic()
    with pytest.raises(TerminalTimeout) as flooded:
        t.wait_for("never")
    assert flooded.value.which == "step" and time.monotonic() - start < 4
    sent = time.monotonic()
    t.send_line("anything")  # reading what is already there before a send is bounded
    assert time.monotonic() - sent < 2
    assert len(t.preview(10**6)) <= 50_000 and t.bytes_read > 200_000
    t.close()
    assert gone(pid)
    assert spill.stat().st_size == 200_000


QUERY_STORM = (
    "import sys, time\n"
    "sys.stdout.write('\\x1b[6n\\x1b[c\\x1b]11;?\\x07' * 100000); sys.stdout.flush()\n"
    "time.sleep(20)\n"
)


def test_endless_terminal_queries_from_a_program_that_reads_no_answer(tmp_path: Path) -> None:
    t = term(QUERY_STORM, tmp_path, step_timeout_s=1.5, deadline_s=10)
    start = time.monotonic()
    with pytest.raises(TerminalTimeout):
        t.wait_for("never")
    assert time.monotonic() - start < 5
    pid = t.child.pid
    t.close()
    assert gone(pid)


# A full-screen program draws a prompt with cursor moves (right half first, so only the
# screen reads it), waits for a line, then a second and a half later clears the screen and
# draws it again the same way, in the same place: the screen reads the same before and after.
FAKE_PROMPT = r"""
import sys, time
w = sys.stdout.write
def draw():
    w("\x1b[2J\x1b[5;13H" + "$ " + "\x1b[5;5H" + "tidegate" + "\x1b[10;1H")  # the echo goes there
    sys.stdout.flush()
draw()
sys.stdin.readline()
time.sleep(1.5)
draw()
time.sleep(20)
"""


def test_a_prompt_drawn_with_cursor_moves_before_the_send_is_stale(tmp_path: Path) -> None:
    t = term(FAKE_PROMPT, tmp_path, step_timeout_s=10)
    t.wait_for("tidegate$")  # on the screen only: the stream reads "tidegate" apart
    assert "tidegate$" in t.screen_text() and "tidegate$" not in t.preview()
    t.send_line("go")
    start = time.monotonic()
    t.wait_for("tidegate$", shown=True)  # the state: the screen shows it now
    assert time.monotonic() - start < 0.5
    t.send_line("again")
    start = time.monotonic()
    t.wait_for("tidegate$")  # an event: only the redraw after the send counts
    assert time.monotonic() - start >= 1.0
    t.close()


IGNORES_SIGNALS = (
    "import signal, time\n"
    "for s in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM, signal.SIGQUIT):\n"
    "    signal.signal(s, signal.SIG_IGN)\n"
    "print('stubborn', flush=True)\n"
    "while True: time.sleep(1)\n"
)


def test_a_program_that_never_exits_and_ignores_signals_is_killed(tmp_path: Path) -> None:
    t = term(IGNORES_SIGNALS, tmp_path, step_timeout_s=5)
    t.wait_for("stubborn")
    t.send_key("ctrl-c")
    pid = t.child.pid
    assert t.wait_exit(0.5) is None
    start = time.monotonic()
    assert t.close() is None
    assert time.monotonic() - start < 3
    assert gone(pid)


def test_the_transcript_is_created_new_never_through_a_planted_link(tmp_path: Path) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    planted = tmp_path / "transcript.log"
    planted.symlink_to(target)
    with pytest.raises(OSError):
        term("print('hello')", tmp_path, planted)
    assert target.read_text() == "keep me\n"
    spill = tmp_path / "fresh.log"
    with term("print('hello')", tmp_path, spill, step_timeout_s=5) as t:
        t.wait_for("hello")
    assert spill.stat().st_mode & 0o777 == 0o600
    assert b"hello" in spill.read_bytes()


@pytest.mark.parametrize("sequence", ["\x1b[1;2n", "\x1b[1;2A", "\x1b[5;6;7C", "\x1b[?1;2n"])
def test_a_control_sequence_with_extra_parameters_does_not_crash_the_driver(
    tmp_path: Path, sequence: str
) -> None:
    # pyte's handlers take a fixed number of parameters; a program chooses its output.
    code = f"import sys, time; sys.stdout.write({sequence!r} + 'still here\\n'); sys.stdout.flush(); time.sleep(1)"
    t = term(code, tmp_path)
    try:
        t.wait_for("still here", 10)
    finally:
        t.close()
