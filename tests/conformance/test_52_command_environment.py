"""Conformance 52: the command environment the prompt describes is exactly what runs -
the interpreter's own argv, seen from inside the command, is the described executable,
then the described prefix, then the command string - and commands run with stdin closed
(reading gives end-of-file at once) and no terminal, contained or not, and in VERIFY."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conformance._commands import BACKENDS, run_sh
from tests.conftest import Repo
from tidegate.exec.interpreter import host_interpreter

SHOW_ARGV = "tr '\\0' '\\n' < /proc/$$/cmdline"


def _described_argv(command: str) -> list[str]:
    described = host_interpreter().describe()
    prefix = described["argumentsPrefix"]
    assert isinstance(prefix, list)
    return [str(described["executable"]), *prefix, command]


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_spawned_interpreter_is_the_described_one(backend: str, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    res = run_sh(backend, ws, SHOW_ARGV)
    assert res.exit_code == 0
    assert res.stdout_tail.split("\n")[:-1] == _described_argv(SHOW_ARGV)
    assert res.argv == _described_argv(SHOW_ARGV)


@pytest.mark.parametrize("backend", BACKENDS)
def test_stdin_is_closed_and_there_is_no_terminal(backend: str, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    command = (
        "if read line; then echo read-something; else echo eof; fi; "
        "for fd in 0 1 2; do if test -t $fd; then echo tty$fd; fi; done; "
        "if (: < /dev/tty) 2>/dev/null; then echo has-ctty; else echo no-ctty; fi"
    )
    res = run_sh(backend, ws, command, timeout_s=10)
    assert res.exit_code == 0 and res.duration_s < 5
    assert res.stdout_tail == "eof\nno-ctty\n"
    described = host_interpreter().describe()
    assert (described["stdin"], described["tty"], described["interactive"]) == (
        "closed",
        False,
        False,
    )


def test_verify_runs_through_the_described_interpreter(committed_repo: Repo) -> None:
    command = f"{SHOW_ARGV} > argv.out; test -t 0 && exit 9; cat > stdin.out"
    report = committed_repo.run(
        "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n",
        verify=command,
        keep_shadow=True,
    )
    assert report.status == "succeeded", (report.message, report.feedback)
    kept = next(n for n in report.notes if n.startswith("shadow kept at "))
    shadow = Path(kept.removeprefix("shadow kept at "))
    try:
        assert (shadow / "argv.out").read_text().split("\n")[:-1] == _described_argv(command)
        assert (shadow / "stdin.out").read_bytes() == b""
    finally:
        committed_repo.git("worktree", "remove", "--force", "--force", str(shadow))
