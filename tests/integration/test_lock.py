"""The locks of a work tree (``workspace.lock``): a run's own registration, which lets other
runs go on beside it and refuses only a second process for the same run; and the landing
lock, one writer of the work tree at a time. Lock files left by dead processes are taken
over."""

from __future__ import annotations

import json
import os
import select
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Repo, tidegate_cli
from tidegate.errors import RepositoryLockedError
from tidegate.workspace.lock import ApplyLock, RunLock, live_runs

OBJECTIVE = "edit-file: README.md\nreplace: # calc\nwith: # calc (locked run)\n"
DEADLINE_S = 30.0


def _git_state(repo: Repo) -> dict[str, object]:
    exclude = repo.root / ".git" / "info" / "exclude"
    return {
        "tree": repo.tree_state(with_mtimes=True),
        "refs": repo.git("for-each-ref", "--format=%(refname) %(objectname)"),
        "worktrees": repo.git("worktree", "list", "--porcelain"),
        "exclude": exclude.read_bytes(),
    }


def _runtime(repo: Repo) -> Path:
    return repo.root / ".git" / "tidegate"


class HeldRun:
    """A real ``tidegate run`` in a subprocess, parked inside its VERIFY phase.

    The verify command tells the test it started by writing to a FIFO (the test blocks on
    it, with a deadline, instead of polling), then waits for a ``go`` file to appear."""

    def __init__(self, repo: Repo, sync: Path) -> None:
        sync.mkdir()
        self.ready = sync / "ready.fifo"
        self.go = sync / "go"
        os.mkfifo(self.ready)
        verify = (
            f"echo ready > {shlex.quote(str(self.ready))}; "
            f"while [ ! -f {shlex.quote(str(self.go))} ]; do sleep 0.05; done"
        )
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tidegate",
                "run",
                "--repo",
                str(repo.root),
                "--objective",
                OBJECTIVE,
                "--verify",
                verify,
                "--verify-timeout",
                str(DEADLINE_S),
                # uncontained: a contained command cannot see the test's FIFO outside the
                # shadow (that is the point of containment); the lock is what is tested
                "--containment",
                "none",
                "--json",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(os.environ),
        )
        assert self.proc.stdout is not None
        # Non-blocking open of the read end: succeeds at once; select() then waits for the
        # verify command's write, or for the run to end early (its stdout closes).
        self._fd = os.open(self.ready, os.O_RDONLY | os.O_NONBLOCK)

    def wait_until_in_verify(self) -> None:
        assert self.proc.stdout is not None
        readable, _, _ = select.select([self._fd, self.proc.stdout], [], [], DEADLINE_S)
        if self._fd not in readable:
            self.proc.kill()
            out, err = self.proc.communicate()
            pytest.fail(f"the first run never reached VERIFY:\n{out.decode()}\n{err.decode()}")
        assert os.read(self._fd, 100) == b"ready\n"

    def release(self) -> tuple[int, dict[str, object]]:
        self.go.touch()
        try:
            out, err = self.proc.communicate(timeout=DEADLINE_S)
        finally:
            os.close(self._fd)
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.communicate()
        assert err == b"", err.decode()
        return self.proc.returncode, json.loads(out)


def test_a_second_run_goes_on_beside_the_first_and_both_land(
    committed_repo: Repo, tmp_path: Path
) -> None:
    repo = committed_repo
    repo.write("calc.py", repo.read("calc.py") + "# dirty, unstaged\n")
    held = HeldRun(repo, tmp_path / "sync")
    try:
        held.wait_until_in_verify()
        live = live_runs(_runtime(repo))
        assert [r["pid"] for r in live] == [held.proc.pid]
        assert live[0]["phase"] == "VERIFY" and live[0]["mode"] == "patch"
        first_id = live[0]["run_id"]
        # The second run does not wait for the first: it verifies and lands meanwhile.
        res = tidegate_cli(
            "run", "--repo", str(repo.root), "--objective",
            "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n",
            "--verify", "true", "--containment", "none", "--json",
        )  # fmt: skip
        assert res.returncode == 0, res.stdout + res.stderr
        second = json.loads(res.stdout)
        assert second["landing"]["seq"] == 1 and second["landing"]["landed_between"] == []
        # A recovery goes on too, and leaves the live run's shadow alone.
        rec = tidegate_cli("recover", "--repo", str(repo.root), "--json")
        assert rec.returncode == 0, rec.stdout + rec.stderr
        assert json.loads(rec.stdout)["removed_shadows"] == []
        # Only a second process for the same run is refused.
        with pytest.raises(RepositoryLockedError, match=str(held.proc.pid)):
            RunLock(_runtime(repo), first_id).acquire()
    finally:
        code, first = held.release()
    assert code == 0, first["message"]
    assert first["run_id"] == first_id
    assert first["landing"]["seq"] == 2
    assert first["landing"]["landed_between"] == [second["run_id"]]
    assert repo.read("README.md") == "# calc (locked run)\n"
    assert "return a + b" in repo.read("calc.py")
    assert repo.read("calc.py").endswith("# dirty, unstaged\n")  # the user's edit stays
    assert live_runs(_runtime(repo)) == []


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _plant(path: Path, pid: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"pid": pid, "run_id": "20200101-000000-dead00", "since": 1.0}))


def test_a_dead_runs_registration_is_not_listed_and_is_removed(committed_repo: Repo) -> None:
    dead = _runtime(committed_repo) / "live" / "20200101-000000-dead00.lock"
    _plant(dead, _dead_pid())
    assert live_runs(_runtime(committed_repo)) == []
    assert not dead.exists()
    res = tidegate_cli("status", "--repo", str(committed_repo.root))
    assert res.returncode == 0 and "no tidegate run is running" in res.stdout


def test_a_landing_lock_left_by_a_dead_process_is_taken_over(committed_repo: Repo) -> None:
    _plant(_runtime(committed_repo) / "apply.lock", _dead_pid())
    report = committed_repo.run(OBJECTIVE)
    assert report.status == "succeeded", report.message
    assert committed_repo.read("README.md") == "# calc (locked run)\n"
    assert report.landing is not None and report.landing.waited_s < 5


def test_a_landing_waits_for_the_one_in_progress(committed_repo: Repo) -> None:
    """While another process holds the landing lock, a run's APPLY_BACK waits (the wait is
    on its report) and lands once it is free; with nobody releasing it, the run gives up
    after the wait, writes nothing, and says who holds it."""
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path;"
         "from tidegate.workspace.lock import ApplyLock;"
         "lock = ApplyLock(Path(sys.argv[1]), 'holder').acquire();"
         "print('held', flush=True); time.sleep(float(sys.argv[2]))",
         str(_runtime(committed_repo)), "1.5"],
        stdout=subprocess.PIPE,
    )  # fmt: skip
    assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
    report = committed_repo.run(OBJECTIVE)
    holder.wait()
    assert report.status == "succeeded", report.message
    assert report.landing is not None and report.landing.waited_s > 0.5
    lock = ApplyLock(_runtime(committed_repo), "holder").acquire()
    try:
        before = committed_repo.tree_state()
        with pytest.raises(RepositoryLockedError, match="holder"):
            ApplyLock(_runtime(committed_repo), "late").acquire(wait_s=0.2)
        assert committed_repo.tree_state() == before
    finally:
        lock.release()
