"""A run's row says ``running`` but its holder is gone: the process died, its pid now
belongs to another process, or the row holds a pid no process can have (0, -1, 2**40,
text). Each must read as ``interrupted`` and resume -- never "still running (pid N)" for a
process that is not the one that started the run, and never a traceback. The control: a
live holder (pid and start time of a real running process) is still running."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Repo, tidegate_cli
from tests.integration._store import FIX, cli, state_root


def _start_time(pid: int) -> str:
    raw = Path(f"/proc/{pid}/stat").read_text()
    return raw[raw.rindex(")") + 2 :].split()[19]


def _dead_holder() -> tuple[object, object]:
    """The pid and start time of a process that ran and has exited."""
    proc = subprocess.Popen(["sleep", "60"])
    start = _start_time(proc.pid)
    proc.kill()
    proc.wait()
    return proc.pid, start


HOLDERS = {
    "dead process": _dead_holder,
    "pid reused by a live process": lambda: (os.getpid(), "1"),
    "pid 0 (the caller's process group)": lambda: (0, "1"),
    "pid -1 (every process)": lambda: (-1, "1"),
    "pid beyond any kernel's limit": lambda: (2**40, "1"),
    "pid as text": lambda: ("1234abc", "1"),
    "no pid": lambda: (None, None),
}


@pytest.fixture
def interrupted(committed_repo: Repo) -> tuple[Repo, str]:
    env = {"TIDEGATE_FAULT": "phase.VERIFY"}
    code, _, _ = cli(
        "run", "--objective", FIX, "--verify", "true", cwd=committed_repo.root, env=env
    )
    assert code == -9
    listed = cli("runs", cwd=committed_repo.root)[1]
    assert isinstance(listed, list)
    return committed_repo, listed[0]["run_id"]


def _set_holder(run_id: str, pid: object, start: object) -> None:
    path = next(state_root().glob("*/runs.sqlite3"))
    with sqlite3.connect(path) as db:
        db.execute(
            "UPDATE runs SET status = 'running', pid = ?, pid_start = ?, host = ? WHERE run_id = ?",
            (pid, start, socket.gethostname(), run_id),
        )
    db.close()


@pytest.mark.parametrize("holder", sorted(HOLDERS))
def test_a_gone_holder_reads_interrupted_and_resumes(
    interrupted: tuple[Repo, str], holder: str
) -> None:
    repo, run_id = interrupted
    _set_holder(run_id, *HOLDERS[holder]())
    code, listed, err = cli("runs", cwd=repo.root)
    assert code == 0 and isinstance(listed, list), err
    assert listed[0]["status"] == "interrupted"
    human = tidegate_cli("read", run_id, cwd=repo.root)
    assert human.returncode == 0 and "Traceback" not in human.stderr
    assert human.stdout.splitlines()[0].split()[3] == "interrupted"
    code, report, err = cli("resume", run_id, cwd=repo.root)
    assert "still running" not in err and "Traceback" not in err
    assert code == 0 and isinstance(report, dict) and report["status"] == "succeeded", err


def test_a_live_holder_is_still_running(interrupted: tuple[Repo, str]) -> None:
    repo, run_id = interrupted
    live = subprocess.Popen(["sleep", "600"])
    try:
        _set_holder(run_id, live.pid, _start_time(live.pid))
        listed = cli("runs", cwd=repo.root)[1]
        assert isinstance(listed, list) and listed[0]["status"] == "running"
        code, _, err = cli("resume", run_id, cwd=repo.root)
        assert code == 2 and f"still running (pid {live.pid})" in err
    finally:
        live.kill()
        live.wait()
    listed = cli("runs", cwd=repo.root)[1]
    assert isinstance(listed, list) and listed[0]["status"] == "interrupted"
