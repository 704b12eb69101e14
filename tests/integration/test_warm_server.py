"""The warm server (``tidegate warm start``): a run through it is the run without it, in
the client's directory, environment, streams and exit code; it refuses what it cannot
reproduce, and then the client runs the command itself."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from tests._warm import EDIT, TIDEGATE, cli, served, warm_server
from tests.conftest import Repo

__all__ = ["warm_server"]  # the fixture, imported for the tests below

OFF = {"TIDEGATE_WARM": "off"}


def _state(repo: Repo) -> tuple[bytes, bytes]:
    return (repo.root / "calc.py").read_bytes(), (repo.root / ".git" / "index").read_bytes()


def test_a_run_through_the_server_is_the_run_without_it(
    committed_repo: Repo, warm_server: int, tmp_path: Path
) -> None:
    args = ("run", "--repo", ".", "--objective", EDIT, "--verify", "true", "--json")
    warm = cli(*args, cwd=committed_repo.root)
    assert warm.returncode == 0, warm.stderr
    assert served() == 1
    report = json.loads(warm.stdout)
    assert report["status"] == "succeeded"
    assert report["repo"] == str(committed_repo.root)  # "." is the client's directory
    assert "return a + b" in (committed_repo.root / "calc.py").read_text()

    committed_repo.git("checkout", "--", "calc.py")
    plain = cli(*args, cwd=committed_repo.root, env=OFF)
    assert plain.returncode == 0 and served() == 1
    keys = ("status", "mode", "attempts", "message", "changed_files", "applied_files", "diff")
    assert {k: report.get(k) for k in keys} == {k: json.loads(plain.stdout).get(k) for k in keys}


def test_the_environment_is_the_clients(
    committed_repo: Repo, warm_server: int, tmp_path: Path
) -> None:
    mine = tmp_path / "my-state"
    args = ("run", "--repo", str(committed_repo.root), "--objective", EDIT, "--json")
    res = cli(*args, env={"TIDEGATE_STATE_ROOT": str(mine)})
    assert res.returncode == 0, res.stderr
    assert served() == 1
    assert _runs(mine) == 1, "the run was recorded in the client's state root"
    # The next run does not inherit the last one's environment: each is a fresh fork.
    committed_repo.git("checkout", "--", "calc.py")
    again = cli(*args)
    assert again.returncode == 0, again.stderr
    assert served() == 2
    assert _runs(mine) == 1
    assert _runs(Path(os.environ["TIDEGATE_STATE_ROOT"])) == 1


def _runs(root: Path) -> int:
    total = 0
    for db in root.rglob("runs.sqlite3"):
        with sqlite3.connect(db) as conn:
            total += conn.execute("select count(*) from runs").fetchone()[0]
    return total


def test_failure_exit_codes_and_error_lines_are_the_same(
    committed_repo: Repo, warm_server: int
) -> None:
    before = _state(committed_repo)
    for args in (
        ("run", "--repo", str(committed_repo.root), "--objective", EDIT, "--verify", "false"),
        ("run", "--repo", str(committed_repo.root), "--no-such-option"),
        ("run", "--repo", str(committed_repo.root / "missing"), "--objective", EDIT),
    ):
        warm, plain = cli(*args), cli(*args, env=OFF)
        assert (warm.returncode, warm.stderr.splitlines()[-1:]) == (
            plain.returncode,
            plain.stderr.splitlines()[-1:],
        ), args
        assert warm.returncode != 0
        assert _state(committed_repo) == before
    assert served() == 3


def test_changed_code_is_refused_and_the_server_stops(committed_repo: Repo, tmp_path: Path) -> None:
    """A server whose code changed on disk serves no more runs: the client runs the command
    itself, and the server exits. (Its own copy of the source, to touch a file of it.)"""
    src = tmp_path / "src"
    shutil.copytree(Path(__file__).resolve().parents[2] / "src", src)
    env = {"PYTHONPATH": str(src)}
    started = cli("warm", "start", "--json", env=env)
    assert started.returncode == 0, started.stderr
    pid = int(json.loads(started.stdout)["pid"])
    try:
        args = ("run", "--repo", str(committed_repo.root), "--objective", EDIT, "--json")
        assert cli(*args, env=env).returncode == 0 and served(env) == 1
        committed_repo.git("checkout", "--", "calc.py")
        module = src / "tidegate" / "flow" / "transaction.py"
        module.write_text(module.read_text() + "\n# changed\n")
        res = cli(*args, env=env)
        assert res.returncode == 0, res.stderr
        assert json.loads(res.stdout)["status"] == "succeeded"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.05)
        assert not _alive(pid), "the server went on after its code changed"
    finally:
        _kill(pid)


def _interrupted(repo: Repo, sig: int, env: dict[str, str]) -> tuple[int, bytes]:
    marker = repo.root.parent / "verify-started"
    marker.unlink(missing_ok=True)
    proc = subprocess.Popen(
        [*TIDEGATE, "run", "--repo", str(repo.root), "--objective", EDIT,
         "--verify", f"touch {marker}; sleep 120", "--containment", "none"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **env},
    )  # fmt: skip
    _wait_for(marker)
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=60)
    return proc.returncode, err


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_to_the_client_reaches_the_run(
    committed_repo: Repo, warm_server: int, sig: int
) -> None:
    """Forwarded as itself: the run ends as a run without the server ends on it (its exit
    code), and the workspace is as it was."""
    before = _state(committed_repo)
    warm_code, warm_err = _interrupted(committed_repo, sig, {})
    assert served() == 1
    assert _state(committed_repo) == before
    plain_code, plain_err = _interrupted(committed_repo, sig, OFF)
    assert _state(committed_repo) == before
    assert warm_code == plain_code != 0
    assert b"Traceback" not in warm_err and b"Traceback" not in plain_err
    assert _running() == 0


def test_a_killed_client_ends_its_run(committed_repo: Repo, warm_server: int) -> None:
    """SIGKILL cannot be forwarded: the run sees its client gone and stops as on SIGTERM,
    leaving the workspace as it was and the repository free for the next run."""
    before = _state(committed_repo)
    marker = committed_repo.root.parent / "verify-started"
    proc = subprocess.Popen(
        [*TIDEGATE, "run", "--repo", str(committed_repo.root), "--objective", EDIT,
         "--verify", f"touch {marker}; sleep 120", "--containment", "none"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    _wait_for(marker)
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _running():
        time.sleep(0.05)
    assert _running() == 0, "the run went on without its client"
    assert _state(committed_repo) == before
    res = cli("run", "--repo", str(committed_repo.root), "--objective", EDIT, "--json")
    assert res.returncode == 0, res.stderr


def test_stop_and_status(warm_server: int) -> None:
    assert cli("warm", "status").returncode == 0
    again = cli("warm", "start")
    assert again.returncode == 1 and "running already" in again.stderr
    stopped = cli("warm", "stop")
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert not _alive(warm_server)
    assert cli("warm", "status").returncode == 1


def _running() -> int:
    res = cli("warm", "status", "--json")
    return int(json.loads(res.stdout).get("running", 0)) if res.returncode == 0 else 0


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert time.monotonic() < deadline, "the verify command never started"
        time.sleep(0.02)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie of the test process is not alive
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
