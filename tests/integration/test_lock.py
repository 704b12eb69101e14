"""The per-repository run lock: a second concurrent run is refused and changes nothing; a
lock file left by a dead process is taken over."""

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


def _lock_file(repo: Repo) -> Path:
    return repo.root / ".git" / "tidegate" / "run.lock"


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


def test_second_concurrent_run_is_refused_and_changes_nothing(
    committed_repo: Repo, tmp_path: Path
) -> None:
    repo = committed_repo
    repo.write("calc.py", repo.read("calc.py") + "# dirty, unstaged\n")
    initial_tree = repo.tree_state(with_mtimes=True)
    held = HeldRun(repo, tmp_path / "sync")
    try:
        held.wait_until_in_verify()
        holder = json.loads(_lock_file(repo).read_text())
        assert holder["pid"] == held.proc.pid
        lock_bytes = _lock_file(repo).read_bytes()
        before = _git_state(repo)
        # The first run is parked in VERIFY: nothing has reached the main tree yet.
        assert before["tree"] == initial_tree

        res = tidegate_cli(
            "run", "--repo", str(repo.root), "--objective", OBJECTIVE, "--verify", "true", "--json"
        )
        assert res.returncode == 4, res.stdout + res.stderr
        report = json.loads(res.stdout)
        assert report["status"] == "failed"
        assert report["error_class"] == "RESOURCE_LOCK_ERROR"
        assert report["failure_phase"] == "BOOTSTRAP"
        assert report["attempts"] == 0
        assert report["changed_files"] == [] and report["applied_files"] == []
        assert report["t0_ref"] is None
        assert str(held.proc.pid) in report["message"]
        assert holder["run_id"] in report["message"]
        assert _git_state(repo) == before
        assert _lock_file(repo).read_bytes() == lock_bytes  # still names the first run

        # A recovery is refused the same way while the run holds the lock.
        rec = tidegate_cli("recover", "--repo", str(repo.root))
        assert rec.returncode == 4, rec.stdout + rec.stderr
        assert rec.stderr.startswith("tidegate: error: ") and rec.stderr.count("\n") == 1
        assert "Traceback" not in rec.stderr
        assert _git_state(repo) == before
    finally:
        code, first = held.release()
    assert code == 0, first["message"]
    assert first["status"] == "succeeded"
    assert first["run_id"] == holder["run_id"]
    assert repo.read("README.md") == "# calc (locked run)\n"
    # Only the first run left refs behind.
    refs = repo.git("for-each-ref", "--format=%(refname)", "refs/tidegate/").split()
    assert refs == ["refs/tidegate/keep"]
    assert repo.git("ls-tree", "--name-only", "refs/tidegate/keep").split() == [first["run_id"]]
    # Once released, the next run gets the lock.
    again = repo.run("edit-file: README.md\nreplace: (locked run)\nwith: (second run)\n")
    assert again.status == "succeeded", again.message


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_lock_left_by_a_dead_process_is_taken_over(committed_repo: Repo) -> None:
    pid = _dead_pid()
    lock = _lock_file(committed_repo)
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text(json.dumps({"pid": pid, "run_id": "20200101-000000-dead00", "since": 1.0}))
    report = committed_repo.run(OBJECTIVE)
    assert report.status == "succeeded", report.message
    assert any("stale" in n and str(pid) in n for n in report.notes), report.notes
    assert committed_repo.read("README.md") == "# calc (locked run)\n"
    assert lock.read_bytes() == b""  # released, no holder named any more


def test_dead_lock_is_taken_over_through_the_cli(committed_repo: Repo) -> None:
    pid = _dead_pid()
    lock = _lock_file(committed_repo)
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text(json.dumps({"pid": pid, "run_id": "20200101-000000-dead00", "since": 1.0}))
    res = tidegate_cli(
        "run", "--repo", str(committed_repo.root), "--objective", OBJECTIVE, "--json"
    )
    assert res.returncode == 0, res.stdout + res.stderr
    report = json.loads(res.stdout)
    assert report["status"] == "succeeded"
    assert any(f"pid {pid}" in n for n in report["notes"]), report["notes"]


def test_released_lock_is_not_reported_as_stale(committed_repo: Repo) -> None:
    first = committed_repo.run(OBJECTIVE)
    assert first.status == "succeeded", first.message
    second = committed_repo.run("edit-file: README.md\nreplace: (locked run)\nwith: (again)\n")
    assert second.status == "succeeded", second.message
    assert not any("stale" in n for n in second.notes), second.notes
