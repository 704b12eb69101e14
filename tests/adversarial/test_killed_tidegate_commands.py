"""What a killed tidegate started does not run on unwatched. An uncontained command runs in
a session of its own (so a Ctrl-C at the terminal does not reach it half-way), so when
tidegate dies by SIGKILL nothing kills it: its VERIFY, and whatever that started in the
background, would go on writing into the shadow or, uncontained, anywhere. The runner
records each command's process group in the process's own directory (``exec.groups``);
`tidegate recover` (and `resume`, `gc`) kill the groups a dead process recorded, and only
while they are still those groups."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests._proc import running
from tests.conftest import Repo, tidegate_cli
from tidegate.disk.owners import SANDBOX_PREFIX, process_start
from tidegate.workspace.owned_temp import remove_dead_sandboxes


def _wait(predicate: object, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


@pytest.mark.parametrize("recover_temp", ["same", "other"])
def test_recover_kills_what_a_killed_runs_uncontained_verify_left_running(
    repo: Repo, tmp_path: Path, recover_temp: str
) -> None:
    """``other``: `recover` runs with another TMPDIR than the killed run (another terminal,
    an IDE): it finds the run's temp dir in the run's claim."""
    repo.write("f.txt", "one\n")
    repo.commit_all()
    pids = tmp_path / "pids"
    # The verify command and a background child of it, both waiting "forever".
    verify = (
        f"sleep 300 & echo $! >> {shlex.quote(str(pids))}; "
        f"echo $$ >> {shlex.quote(str(pids))}; wait"
    )
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # where its own directory goes
    proc = subprocess.Popen(
        [sys.executable, "-m", "tidegate", "run", "--repo", str(repo.root),
         "--objective", "edit-file: f.txt\nreplace: one\nwith: ONE\n",
         "--verify", verify, "--containment", "none", "--verify-timeout", "600", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    try:
        _wait(lambda: pids.exists() and len(pids.read_text().split()) == 2, "VERIFY never ran")
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        started = [int(p) for p in pids.read_text().split()]
        # Without the record, nothing would stop them: they outlive tidegate.
        time.sleep(0.3)
        assert all(running(p) for p in started), "the commands died with tidegate anyway"
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        temp = str(tmp_path if recover_temp == "same" else elsewhere)
        rec = tidegate_cli("recover", "--repo", str(repo.root), "--json", env={"TMPDIR": temp})
        assert rec.returncode == 0, rec.stdout + rec.stderr
        summary = json.loads(rec.stdout)
        assert summary["killed_groups"], summary
        _wait(lambda: not any(running(p) for p in started), "recover left them running", 10)
        text = tidegate_cli("recover", "--repo", str(repo.root), env={"TMPDIR": temp})
        assert "killed process group" not in text.stdout  # once only
    finally:
        if pids.exists():
            for pid in pids.read_text().split():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(int(pid), signal.SIGKILL)
    assert repo.read("f.txt") == "one\n"


def test_a_command_never_runs_before_its_group_is_recorded(repo: Repo, tmp_path: Path) -> None:
    """tidegate killed after spawning a command but before it recorded the command's group
    (the fault ``exec.spawned``): the command must not run on where `recover` cannot find
    it. It starts only once its group is on record; before that, its parent's death
    stops it."""
    repo.write("f.txt", "one\n")
    repo.commit_all()
    ran, pids = tmp_path / "ran", tmp_path / "pids"
    verify = f"echo $$ > {shlex.quote(str(pids))}; touch {shlex.quote(str(ran))}; sleep 300"
    env = {**os.environ, "TMPDIR": str(tmp_path), "TIDEGATE_FAULT": "exec.spawned"}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tidegate", "run", "--repo", str(repo.root),
             "--objective", "edit-file: f.txt\nreplace: one\nwith: ONE\n",
             "--verify", verify, "--containment", "none", "--json"],
            capture_output=True, env=env, timeout=60,
        )  # fmt: skip
        assert done.returncode == -signal.SIGKILL, done.stderr
        rec = tidegate_cli(
            "recover", "--repo", str(repo.root), "--json", env={"TMPDIR": str(tmp_path)}
        )
        assert rec.returncode == 0, rec.stdout + rec.stderr
        time.sleep(0.5)  # time enough for a command let go to write its marker
        assert not ran.exists() and not pids.exists(), "the command ran unrecorded"
    finally:
        if pids.exists() and pids.read_text().strip():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(int(pids.read_text()), signal.SIGKILL)
    assert repo.read("f.txt") == "one\n"


def _dead_owner_dir(parent: Path) -> Path:
    """A process directory whose owner is dead (a pid that exited, and a start time)."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    return Path(tempfile.mkdtemp(prefix=f"{SANDBOX_PREFIX}{gone.pid}-12345-", dir=parent))


def test_a_recorded_pid_now_another_process_is_not_killed(tmp_path: Path) -> None:
    """The record names the group by its leader's pid and start time: a pid the kernel
    gave to another process since (another start time) is left alone; the same process
    (same start time) is killed, with its group."""
    other = subprocess.Popen(["sleep", "300"], start_new_session=True)
    ours = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        owner = _dead_owner_dir(tmp_path)
        other_start = int(process_start(other.pid) or 0)
        (owner / f"g-{other.pid}-{other_start + 1}").touch()  # same pid, another process
        (owner / f"g-{ours.pid}-{process_start(ours.pid)}").touch()
        (owner / "g-1-1").touch()  # init: never
        (owner / "g-junk").touch()
        killed: list[int] = []
        assert remove_dead_sandboxes(tmp_path, killed=killed) == [str(owner)]
        assert killed == [ours.pid]
        ours.wait(timeout=10)
        assert ours.returncode == -signal.SIGKILL
        assert other.poll() is None
    finally:
        for p in (other, ours):
            p.kill()
            p.wait()


def test_a_live_owners_groups_are_left_alone(tmp_path: Path) -> None:
    """The directory of a live process (this one) is neither swept nor its groups killed."""
    from tidegate.disk.owners import owned_prefix

    live = Path(tempfile.mkdtemp(prefix=owned_prefix(SANDBOX_PREFIX), dir=tmp_path))
    child = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        (live / f"g-{child.pid}-{process_start(child.pid)}").touch()
        killed: list[int] = []
        assert remove_dead_sandboxes(tmp_path, killed=killed) == []
        assert killed == [] and child.poll() is None
    finally:
        child.kill()
        child.wait()


def test_a_claimed_temp_dir_behind_a_link_is_not_swept(repo: Repo, tmp_path: Path) -> None:
    """A dead run's claim names the temp dir its commands recorded their groups in; one
    named through a symlink (or by a relative path) is never followed."""
    repo.write("f.txt", "one\n")
    repo.commit_all()
    real, link, temp = tmp_path / "real", tmp_path / "link", tmp_path / "temp"
    real.mkdir()
    temp.mkdir()
    link.symlink_to(real)
    child = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        owner = _dead_owner_dir(real)
        (owner / f"g-{child.pid}-{process_start(child.pid)}").touch()
        claims = repo.root / ".git" / "tidegate" / "claims"
        claims.mkdir(parents=True)
        dead = int(owner.name[len(SANDBOX_PREFIX) :].split("-")[0])
        for name, where in (("linked", str(link)), ("relative", "real")):
            record = {"run_id": name, "pid": dead, "start": "1", "paths": {"temp": where}}
            (claims / f"{name}.json").write_text(json.dumps(record))
        rec = tidegate_cli("recover", "--repo", str(repo.root), "--json", env={"TMPDIR": str(temp)})
        assert rec.returncode == 0, rec.stdout + rec.stderr
        assert json.loads(rec.stdout)["killed_groups"] == []
        assert child.poll() is None and owner.is_dir()
    finally:
        child.kill()
        child.wait()
