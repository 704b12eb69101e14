"""Preparation slots (``workspace.prep_slots``): runs of one repository take turns at their
CPU-bound start, one per slot. How it could break: a run that never gets a slot (a holder
stopped with Ctrl-Z, stuck, or killed), a slot held while its run waits on its VERIFY (so
every other run waits on that VERIFY too), a slot file planted as a link (so opening it
creates or truncates a file elsewhere). Each test holds slots from another real process and
runs the real CLI."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Repo
from tidegate.cli.status import live_status

_HOLD = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""
EDIT = "edit-file: {path}\nreplace: one\nwith: two"
GAVE_UP = "this run prepared without one"


def _env(slots: int = 1, wait_s: float = 120) -> dict[str, str]:
    return {"TIDEGATE_PREP_SLOTS": str(slots), "TIDEGATE_PREP_WAIT_S": str(wait_s)}


@pytest.fixture
def two_files(repo: Repo) -> Repo:
    repo.write("a.txt", "one\n")
    repo.write("b.txt", "one\n")
    repo.commit_all()
    return repo


@pytest.fixture
def holder(two_files: Repo) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the repository's only slot until its stdin closes."""
    slot = two_files.root / ".git" / "tidegate" / "prep" / "slot-0.lock"
    slot.parent.mkdir(parents=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(slot)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    yield proc
    proc.kill()
    proc.wait()
    assert proc.stdin is not None
    proc.stdin.close()
    proc.stdout.close()


def _launch(repo: Repo, path: str, env: dict[str, str], *extra: str) -> subprocess.Popen[str]:
    argv = [
        sys.executable, "-m", "tidegate", "run", "--repo", str(repo.root),
        "--objective", EDIT.format(path=path), "--max-attempts", "1", "--json", *extra,
    ]  # fmt: skip
    return subprocess.Popen(
        argv,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _run(repo: Repo, path: str, env: dict[str, str]) -> tuple[int, str]:
    """A whole run (bounded: a run that waits for ever fails the test); exit code, output."""
    proc = _launch(repo, path, env, "--verify", "true")
    out, err = _finish(proc, 120)
    return proc.returncode, out + err


def _finish(proc: subprocess.Popen[str], timeout: float) -> tuple[str, str]:
    """The output of ``proc`` once it exits; killed (and the test failed) after ``timeout``."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise


def _phase_of(repo: Repo, pid: int, phase: str, proc: subprocess.Popen[str]) -> None:
    """Until the run of process ``pid`` shows ``phase`` in ``tidegate status``."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        runs = {r["pid"]: r for r in live_status(repo.root)["runs"]}
        if runs.get(pid, {}).get("phase") == phase:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError(f"the run never showed {phase}: {live_status(repo.root)}")


def _t0_refs(repo: Repo) -> str:
    return repo.git("for-each-ref", "--format=%(refname)", "refs/tidegate/runs")


@pytest.mark.parametrize("start", ["head-start", "own"])
def test_a_run_waits_queued_for_a_taken_slot_and_takes_it_when_freed(
    two_files: Repo, holder: subprocess.Popen[str], start: str
) -> None:
    """Both ways a run prepares: its head start (beside the imports; only when
    ``.git/info/exclude`` already has tidegate's line) and its own (``flow.transaction``)."""
    if start == "head-start":
        exclude = two_files.root / ".git" / "info" / "exclude"
        exclude.write_text(exclude.read_text() + ".tidegate/\n")
    index = (two_files.root / ".git" / "index").read_bytes()
    run = _launch(two_files, "a.txt", _env(), "--verify", "true")
    _phase_of(two_files, run.pid, "QUEUED", run)
    time.sleep(0.3)
    assert _t0_refs(two_files) == ""  # no T0 taken while it waits
    assert run.poll() is None
    assert holder.stdin is not None
    holder.stdin.close()  # the holder exits: its slot is free
    out, err = _finish(run, 120)
    assert run.returncode == 0, out + err
    assert GAVE_UP not in out
    assert (two_files.root / "a.txt").read_text() == "two\n"
    assert (two_files.root / ".git" / "index").read_bytes() == index


@pytest.mark.parametrize("start", ["head-start", "own"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_queued_run_stops_at_once_when_interrupted(
    two_files: Repo, holder: subprocess.Popen[str], start: str, signum: int, tmp_path: Path
) -> None:
    """Ctrl-C (or SIGTERM) while a run waits for a slot ends it then, not when the wait would
    have ended, and leaves nothing: no registration, no T0, no scratch, the index as it was."""
    if start == "head-start":
        exclude = two_files.root / ".git" / "info" / "exclude"
        exclude.write_text(exclude.read_text() + ".tidegate/\n")
    index = (two_files.root / ".git" / "index").read_bytes()
    temp = tmp_path / "temp"
    temp.mkdir()
    run = _launch(two_files, "a.txt", {**_env(wait_s=600), "TMPDIR": str(temp)}, "--verify", "true")
    _phase_of(two_files, run.pid, "QUEUED", run)
    os.kill(run.pid, signum)
    out, err = _finish(run, 60)  # not the 600 s the wait would take
    assert run.returncode != 0, out + err
    assert live_status(two_files.root)["runs"] == []
    assert list((two_files.root / ".git" / "tidegate" / "live").iterdir()) == []
    assert _t0_refs(two_files) == ""
    assert list(temp.iterdir()) == []  # no scratch
    claims = two_files.root / ".git" / "tidegate" / "claims"
    assert not claims.exists() or list(claims.iterdir()) == []
    assert (two_files.root / "a.txt").read_text() == "one\n"
    assert (two_files.root / ".git" / "index").read_bytes() == index


def test_a_slot_is_given_back_before_verify(two_files: Repo, tmp_path: Path) -> None:
    """With one slot, a run whose VERIFY waits must not hold the other runs back."""
    flag = tmp_path / "flag"
    waiting = _launch(
        two_files, "a.txt", _env(), "--containment", "none",
        "--verify", f"while [ ! -e {flag} ]; do sleep 0.05; done",
    )  # fmt: skip
    try:
        _phase_of(two_files, waiting.pid, "VERIFY", waiting)
        other = _launch(two_files, "b.txt", _env(), "--verify", "true")
        out, err = _finish(other, 100)  # well inside the 120 s slot wait
        assert other.returncode == 0, out + err
        assert GAVE_UP not in out
        assert waiting.poll() is None  # still in its VERIFY
    finally:
        flag.touch()
    out, err = _finish(waiting, 120)
    assert waiting.returncode == 0, out + err
    assert (two_files.root / "a.txt").read_text() == "two\n"
    assert (two_files.root / "b.txt").read_text() == "two\n"


def test_a_holder_that_never_lets_go_delays_a_run_only_up_to_the_limit(
    two_files: Repo, holder: subprocess.Popen[str]
) -> None:
    code, out = _run(two_files, "a.txt", _env(wait_s=0.5))
    assert code == 0, out
    assert GAVE_UP in out  # said so, and landed anyway
    assert (two_files.root / "a.txt").read_text() == "two\n"
    assert holder.poll() is None


def test_a_killed_holders_slot_is_free_at_once(
    two_files: Repo, holder: subprocess.Popen[str]
) -> None:
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    code, out = _run(two_files, "a.txt", _env())
    assert code == 0, out
    assert GAVE_UP not in out
    assert (two_files.root / "a.txt").read_text() == "two\n"


@pytest.mark.parametrize("planted", ["dir", "file"])
def test_slot_files_are_never_opened_through_a_link(
    two_files: Repo, tmp_path: Path, planted: str
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    prep = two_files.root / ".git" / "tidegate" / "prep"
    if planted == "dir":
        prep.parent.mkdir(parents=True)
        prep.symlink_to(elsewhere)
    else:
        prep.mkdir(parents=True)
        (prep / "slot-0.lock").symlink_to(elsewhere / "victim")
    code, out = _run(two_files, "a.txt", _env(slots=2))
    assert code == 0, out  # ahead, without a slot
    assert list(elsewhere.iterdir()) == []
    assert (two_files.root / "a.txt").read_text() == "two\n"
