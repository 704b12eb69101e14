"""Shared by the store, resume and crash tests: the CLI as a subprocess, the run store of a
test repository, and pausing a run with a real SIGINT."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.conftest import Repo
from tidegate.flow.transaction import execute
from tidegate.records.report import FlowReport
from tidegate.records.request import RunRequest
from tidegate.store import RunStore, StoreFaults, StoreRecorder, open_run_store, read_run_store
from tidegate.workspace.repo import discover

FIX = "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"
PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"
TESTS = (
    "from calc import add, mul\n\n\n"
    "def test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_mul():\n    assert mul(2, 3) == 6\n"
)


def state_root() -> Path:
    return Path(os.environ["TIDEGATE_STATE_ROOT"])


def writable_store(repo: Repo) -> RunStore:
    return open_run_store(repo.root, None)


def readonly_store(repo: Repo) -> RunStore:
    store = read_run_store(discover(repo.root), None)
    assert store is not None, "nothing recorded"
    return store


def store_files(repo: Repo) -> dict[str, bytes]:
    """The bytes of the repository's store file and its WAL (the -shm index aside)."""
    directory = next(p for p in state_root().iterdir() if p.is_dir() and p.name != "tools")
    return {
        p.name: p.read_bytes()
        for p in sorted(directory.iterdir())
        if p.name in ("runs.sqlite3", "runs.sqlite3-wal")
    }


def cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> tuple[int, dict[str, Any] | list[Any] | None, str]:
    """Run the CLI with --json; return (exit code, parsed stdout or None, stderr)."""
    res = subprocess.run(
        [sys.executable, "-m", "tidegate", *args, "--json"],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )
    parsed = json.loads(res.stdout) if res.stdout.strip() else None
    return res.returncode, parsed, res.stderr


def start(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tidegate", *args, "--json"],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_checkpoint_after(
    repo: Repo, phase: str, proc: subprocess.Popen[str], timeout: float = 60, attempt: int = 1
) -> str:
    """Poll the store (read-only) until the running run has checkpointed ``phase`` of
    ``attempt``; return the run id."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        store = read_run_store(discover(repo.root), None)
        if store is not None:
            try:
                for run in store.runs(5):
                    checkpoints = store.checkpoints(run.run_id)
                    if not checkpoints:
                        continue
                    current = checkpoints[-1].state["attempt"]
                    if current["number"] == attempt and phase in current["completed"]:
                        return run.run_id
            finally:
                store.close()
        time.sleep(0.05)
    raise AssertionError(f"no checkpoint after {phase} within {timeout}s")


def pause_after(
    repo: Repo, phase: str, *args: str, env: dict[str, str] | None = None
) -> tuple[int, dict[str, Any]]:
    """Start ``tidegate run ARGS``, wait until ``phase`` is checkpointed, press Ctrl-C."""
    proc = start("run", *args, cwd=repo.root, env=env)
    wait_for_checkpoint_after(repo, phase, proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert out.strip(), err
    report: dict[str, Any] = json.loads(out)
    return proc.returncode, report


def phases_by_execution(store: RunStore, run_id: str) -> list[list[str]]:
    """The phases that finished, grouped by the execution (process) that ran them."""
    groups: dict[str, list[str]] = {}
    for event in store.events(run_id):
        if event.kind == "phase.finished":
            groups.setdefault(event.execution_id, []).append(str(event.phase))
    return list(groups.values())


def run_recorded(
    repo: Repo, objective: str = FIX, *faults: str, **fields: Any
) -> tuple[FlowReport, RunStore]:
    """An in-process run recorded in the repository's store, with store fault points."""
    store = open_run_store(repo.root, None, faults=StoreFaults(faults))
    request = RunRequest(repo=repo.root, objective=objective, objective_base=repo.root, **fields)
    return execute(request, recorder=StoreRecorder(store)), store
