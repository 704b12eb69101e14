"""A run killed while it bootstraps: SIGTERM to its whole process group while git checks
out the shadow, and SIGKILL while the T0 snapshot's scratch index exists.

The SIGTERM comes from a smudge filter, in the middle of ``git worktree add``: it signals
the tidegate process (``kill PID``), whose unwinding then kills git's whole process group
(the filter included), so the new worktree stays locked "initializing". The run must end with a report that says so, and
leave no worktree, lock or scratch behind.
The SIGKILL leaves the scratch directory in TMPDIR; ``tidegate recover`` must find it (the
run claimed it) and remove it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests._proc import running
from tests.adversarial._applyback import OBJECTIVE, OLD, env, four_ops, leftovers, on_disk, run
from tests.conftest import Repo
from tests.integration._store import cli

__all__ = ["four_ops"]


BOMB = """\
import os, signal, sys, time
if not os.path.exists({fired!r}):
    with open({fired!r}, "w") as out:
        out.write(str(os.getpid()))
    git = None
    pid = os.getppid()
    while pid > 1:  # up to the tidegate process, past git and any shell
        cmdline = open(f"/proc/{{pid}}/cmdline", "rb").read().split(b"\\0")
        if b"tidegate" in cmdline:
            os.kill(pid, signal.SIGTERM)
            break
        if git is None and os.path.basename(cmdline[0]) == b"git":
            git = pid
        pid = int(open(f"/proc/{{pid}}/stat").read().rsplit(")", 1)[1].split()[1])
    # git stays in the checkout until tidegate kills it; then this filter ends too (its
    # parent is git's shell, which outlives git), and within a minute whatever happens
    deadline = time.monotonic() + 60
    while git is not None and os.path.exists(f"/proc/{{git}}") and time.monotonic() < deadline:
        if open(f"/proc/{{git}}/stat").read().rsplit(")", 1)[1].split()[0] == "Z":
            break
        time.sleep(0.02)
    sys.exit(1)
sys.stdout.buffer.write(sys.stdin.buffer.read())
"""


def _worktrees(repo: Repo) -> list[str]:
    listing = repo.git("worktree", "list", "--porcelain")
    return [line for line in listing.splitlines() if line.startswith("worktree ")]


def test_sigterm_while_the_shadow_is_checked_out(four_ops: Repo, tmp_path: Path) -> None:
    repo = four_ops
    fired = tmp_path / "fired"
    bomb = tmp_path / "bomb.py"
    bomb.write_text(BOMB.format(fired=str(fired)))
    repo.git("config", "filter.bomb.smudge", f"{sys.executable} {bomb}")
    repo.git("config", "filter.bomb.clean", "cat")
    (repo.root / ".git" / "info").mkdir(exist_ok=True)
    (repo.root / ".git" / "info" / "attributes").write_text("*.txt filter=bomb\n")
    before = repo.tree_state()

    proc = subprocess.run(
        [sys.executable, "-m", "tidegate", "run", "--objective", OBJECTIVE, "--json"],
        cwd=repo.root,
        env={**os.environ, **env(tmp_path)},
        capture_output=True,
        text=True,
        check=False,
    )

    assert fired.exists(), proc.stderr  # the signal really came during the checkout
    # git's whole process group went with it: the checkout's filter (a grandchild of
    # `worktree add`, through `reset --hard` and a shell) is not left running
    filter_pid = int(fired.read_text())
    deadline = time.monotonic() + 10
    while running(filter_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not running(filter_pid), "the checkout's filter outlived the run"
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    report = json.loads(proc.stdout)
    assert (report["status"], report["failure_phase"]) == ("failed", "BOOTSTRAP")
    assert report["error_class"] == "CANCELLED"
    assert "interrupted while preparing the run" in report["message"]
    assert repo.tree_state() == before
    assert len(_worktrees(repo)) == 1  # only the main work tree: no locked shadow left
    assert not (repo.root / ".git" / "worktrees").exists() or not list(
        (repo.root / ".git" / "worktrees").iterdir()
    )
    assert leftovers(tmp_path) == []
    code, report, err = run(repo, tmp_path)  # the lock is free, nothing is pending
    assert code == 0, err
    assert report["status"] == "succeeded"


def test_sigkill_during_the_snapshot_leaves_a_scratch_dir_recover_removes(
    four_ops: Repo, tmp_path: Path
) -> None:
    repo = four_ops
    before = repo.tree_state()

    code, _, _ = run(repo, tmp_path, TIDEGATE_FAULT="snapshot.index_copied")

    assert code == -signal.SIGKILL
    [scratch] = leftovers(tmp_path)
    assert (scratch / "t0.index").exists()
    code, summary, err = cli("recover", cwd=repo.root, env=env(tmp_path))
    assert code == 0, err
    assert summary["removed_scratch"] == [str(scratch)]
    assert leftovers(tmp_path) == []
    assert repo.tree_state() == before
    assert on_disk(repo, OLD)
