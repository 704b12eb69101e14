"""The PTY substrate with real programs: bash and python on a real pseudo-terminal."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from tidegate.exec.containment import host_launch
from tidegate.exec.guard import Clearance
from tidegate.exec.terminal import Terminal, TerminalLimits, TerminalTimeout
from tidegate.exec.terminal.text import visible

ENV = {"PATH": os.environ["PATH"], "TERM": "xterm-256color", "LANG": "C.UTF-8", "PS1": "$ "}


def python_term(code: str, tmp_path: Path, **limits: float) -> Terminal:
    """``code`` on a terminal; its transcript is ``spill.log`` (then ``spill-1.log``...)."""
    spill = tmp_path / "spill.log"
    count = 0
    while spill.exists():
        count += 1
        spill = tmp_path / f"spill-{count}.log"
    return Terminal(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={**ENV, "HOME": str(tmp_path)},
        limits=TerminalLimits(**limits),  # type: ignore[arg-type]
        spill=spill,
        launched=host_launch(Clearance.user()),
    )


QUERY = r"""
import os, sys, termios, tty
tty.setraw(0)
def ask(q, end):
    os.write(1, q)
    got = b""
    while not got.endswith(end):
        got += os.read(0, 1)
    return got
cpr = ask(b"\x1b[6n", b"R")
da = ask(b"\x1b[c", b"c")
bg = ask(b"\x1b]11;?\x07", b"\\")
termios.tcsetattr(0, termios.TCSANOW, termios.tcgetattr(0))
os.write(1, ("\r\nANSWERS " + repr((cpr, da, bg)) + "\r\n").encode())
"""


def test_terminal_queries_are_answered_like_a_real_terminal(tmp_path: Path) -> None:
    with python_term(QUERY, tmp_path, step_timeout_s=10) as term:
        term.wait_for("ANSWERS")
        term.wait_exit(5)
        line = next(ln for ln in term.last_lines() if "ANSWERS" in ln)
    assert "[1;1R" in line  # the cursor position, from the emulated screen
    assert "[?6c" in line  # primary device attributes
    assert "11;rgb:0000/0000/0000" in line  # OSC 11: the background colour


FULL_SCREEN = r"""
import sys, time
w = sys.stdout.write
w("\x1b[2J\x1b[H" + "loading..." )
sys.stdout.flush(); time.sleep(0.2)
w("\x1b[12;32H" + "ADY" + "\x1b[12;30H" + "RE" + "\x1b[1;1H\x1b[2K")
sys.stdout.flush(); time.sleep(5)
"""


def test_a_full_screen_program_is_seen_as_a_person_sees_it(tmp_path: Path) -> None:
    with python_term(FULL_SCREEN, tmp_path, step_timeout_s=10) as term:
        term.wait_for("READY")  # drawn right half first: only the screen reads "READY"
        assert "READY" not in visible(term.preview())
        screen = term.screen_text().splitlines()
    assert screen[11].strip() == "READY"
    assert "loading" not in screen[0]  # erased by the program, so not on the screen


def test_waits_have_a_step_timeout_and_the_session_a_deadline(tmp_path: Path) -> None:
    with python_term(
        "import time; print('up'); time.sleep(30)", tmp_path, step_timeout_s=0.3
    ) as term:
        term.wait_for("up")
        with pytest.raises(TerminalTimeout) as step:
            term.wait_for("never")
        assert step.value.which == "step" and not step.value.exited
    with python_term(
        "import time; print('up'); time.sleep(30)", tmp_path, step_timeout_s=10, deadline_s=0.5
    ) as term:
        with pytest.raises(TerminalTimeout) as deadline:
            term.wait_for("never")
        assert deadline.value.which == "deadline"
    with python_term("print('bye')", tmp_path, step_timeout_s=10) as term:
        with pytest.raises(TerminalTimeout) as exited:
            term.wait_for("never")
        assert exited.value.exited


def test_close_kills_the_whole_session(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    code = (
        "import os, subprocess, time\n"
        "a = subprocess.Popen(['sleep', '300'])\n"
        "b = subprocess.Popen(['sleep', '301'], start_new_session=False, process_group=0)\n"
        f"open({str(pidfile)!r}, 'w').write(f'{{a.pid}} {{b.pid}}')\n"
        "print('spawned', flush=True); time.sleep(300)\n"
    )
    term = python_term(code, tmp_path, step_timeout_s=10)
    term.wait_for("spawned")
    pids = [int(p) for p in pidfile.read_text().split()]
    term.close()
    deadline = time.monotonic() + 5
    alive = pids
    while alive and time.monotonic() < deadline:
        alive = [p for p in pids if _running(p)]
        time.sleep(0.05)
    assert alive == []  # the child's group and the one that left it (same session) are gone


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_the_transcript_is_bounded_and_the_spill_capped(tmp_path: Path) -> None:
    code = "import sys\nfor i in range(40000): sys.stdout.write('x' * 49 + '\\n')\nprint('END')\n"
    with python_term(
        code, tmp_path, step_timeout_s=30, tail_chars=10_000, spill_bytes=100_000
    ) as term:
        term.wait_for("END")
        term.wait_exit(5)
        assert len(term.preview(50_000)) <= 10_000
        assert term.bytes_read > 2_000_000
    assert (tmp_path / "spill.log").stat().st_size == 100_000


def test_text_leaves_sanitised_and_sends_are_not_delayed(tmp_path: Path) -> None:
    key = "sk-proj-" + "Zq9" * 12
    code = f"print('\\x1b]52;c;aGVsbG8=\\x07 leaked {key} \\x1b[31mred\\x1b[0m done')"
    with python_term(code, tmp_path, step_timeout_s=10) as term:
        assert term.child.delaybeforesend is None
        term.wait_for("done")
        term.wait_exit(5)
        preview, last = term.preview(), term.last_lines()[-1]
    for text in (preview, last):
        assert key not in text and "\x1b" not in text and "\x07" not in text
    assert "red" in last


def test_visible_resolves_escape_sequences() -> None:
    assert visible("a\x1b[1;31mb\x1b[0m\r\nc\x1b]0;title\x07d\x9b2Je") == "ab\ncde"
    assert visible("menu\x1b[12;30Hitem") == "menu\nitem"  # a cursor move starts a new line


SAYS_READY_TWICE = """
import os, sys, time
go, said = sys.argv[1:]
print("up", flush=True)
while not os.path.exists(go):
    time.sleep(0.01)
print("ready", flush=True)
open(said, "w").close()
input()
time.sleep(1.5)
print("ready", flush=True)
time.sleep(30)
"""


def test_a_wait_after_a_send_looks_only_at_what_came_after_it(tmp_path: Path) -> None:
    go, said = tmp_path / "go", tmp_path / "said"
    argv = [sys.executable, "-c", SAYS_READY_TWICE, str(go), str(said)]
    limits = TerminalLimits(step_timeout_s=10)
    launched = host_launch(Clearance.user())
    with Terminal(argv, launched=launched, cwd=tmp_path, env=ENV, limits=limits) as term:
        term.wait_for("up")
        go.touch()
        deadline = time.monotonic() + 10
        while not said.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        # The first 'ready' was written before the send and not read yet: the send reads
        # it first, so only what comes after the send satisfies the wait.
        term.send_line("go")
        start = time.monotonic()
        term.wait_for("ready")
        assert time.monotonic() - start >= 1.0  # the second one, printed after the send
        assert term.before.split() == ["go"]  # only the echo of what was typed came first


def test_two_waits_for_the_same_text_need_it_twice(tmp_path: Path) -> None:
    code = "import time\nprint('tick', flush=True); time.sleep(1.5); print('tick'); time.sleep(30)"
    with python_term(code, tmp_path, step_timeout_s=10) as term:
        term.wait_for("tick")
        start = time.monotonic()
        term.wait_for("tick")  # not the first one, still on the screen
        assert time.monotonic() - start >= 1.0


def test_a_program_that_cannot_be_started_is_an_os_error(tmp_path: Path) -> None:
    script = tmp_path / "not-executable"
    script.write_text("#!/bin/sh\necho hi\n")  # mode 0644
    with pytest.raises(OSError, match="not-executable"):
        Terminal([str(script)], launched=host_launch(Clearance.user()), cwd=tmp_path, env=ENV)
