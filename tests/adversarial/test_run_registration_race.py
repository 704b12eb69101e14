"""Two processes registering the same run at the same instant (two `tidegate resume`s of
one dead run, started together): exactly one may hold its registration, and the other is
refused. A registration is born locked under a random name and then put in place; putting
it in place must never replace another process's registration that appeared meanwhile
(with a rename, the last one wins and both believe they hold the run)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tidegate.workspace.lock import LIVE_DIR, RunLock

RACER = """
import os, sys, time
from pathlib import Path
from tidegate.errors import RepositoryLockedError
from tidegate.workspace.lock import RunLock
runtime, go, hold = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
lock = RunLock(runtime, "20261206-000000-abcdef")
while not go.exists():
    pass
try:
    lock.acquire()
except RepositoryLockedError:
    print("refused", flush=True)
    sys.exit(0)
print("registered", flush=True)
while not hold.exists():
    time.sleep(0.005)
lock.release()
"""

ROUNDS = 25


def _dead_registration(runtime: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    live = runtime / LIVE_DIR
    live.mkdir(parents=True, exist_ok=True)
    (live / "20261206-000000-abcdef.lock").write_text(json.dumps({"pid": gone.pid}))


@pytest.mark.parametrize("left", ["dead", "none"], ids=["a-dead-runs-file", "no-file"])
def test_two_processes_never_both_hold_one_run(tmp_path: Path, left: str) -> None:
    both = 0
    for rnd in range(ROUNDS):
        runtime = tmp_path / f"r{rnd}" / "tidegate"
        runtime.mkdir(parents=True)
        if left == "dead":
            _dead_registration(runtime)
        go, hold = tmp_path / f"go{rnd}", tmp_path / f"hold{rnd}"
        racers = [
            subprocess.Popen(
                [sys.executable, "-c", RACER, str(runtime), str(go), str(hold)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for _ in range(2)
        ]
        time.sleep(0.1)  # both interpreters started and spinning on `go`
        go.touch()
        said = [p.stdout.readline().decode().strip() for p in racers if p.stdout]
        hold.touch()
        for p in racers:
            _, err = p.communicate(timeout=30)
            assert p.returncode == 0, err.decode()
        assert sorted(said) in (["refused", "registered"], ["registered", "registered"]), said
        both += said.count("registered") == 2
    assert both == 0, f"{both} of {ROUNDS} rounds: both processes held the run"


def test_a_live_run_is_refused_at_once(tmp_path: Path) -> None:
    """The common refusal (a resume of a run that is still running) does not wait."""
    runtime = tmp_path / "tidegate"
    runtime.mkdir()
    first = RunLock(runtime, "20261206-000000-abcdef").acquire()
    try:
        started = time.monotonic()
        from tidegate.errors import RepositoryLockedError

        with pytest.raises(RepositoryLockedError, match="already running"):
            RunLock(runtime, "20261206-000000-abcdef").acquire()
        assert time.monotonic() - started < 0.5
    finally:
        first.release()
    assert not os.listdir(runtime / LIVE_DIR)
