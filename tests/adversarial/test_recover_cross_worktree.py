"""``tidegate recover`` in linked work tree B while a run is alive in work tree A.

A's verify command announces that it is running and waits; meanwhile B recovers. B sees
A's shadow in ``git worktree list`` (every linked work tree does) but must leave it alone,
because A's run claimed it and is alive. And if something removes A's shadow anyway (the
attacker does it by hand), A's VERIFY must notice the shadow vanished and fail the attempt:
a command that "passed" in an emptied directory verified nothing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial._applyback import NEW, OBJECTIVE, OLD, env, four_ops, on_disk
from tests.conftest import Repo
from tests.integration._store import cli, start

__all__ = ["four_ops"]

WAIT = (
    f'{sys.executable} -c "import os, pathlib, time; '
    "pathlib.Path(os.environ['READY']).write_text(os.environ['TIDEGATE_SHADOW']); "
    "go = pathlib.Path(os.environ['GO']); "
    '[time.sleep(0.02) for _ in iter(lambda: go.exists(), True)]"'
)


@pytest.fixture
def a_and_b(four_ops: Repo, tmp_path: Path) -> tuple[Repo, Repo]:
    b = tmp_path / "b"
    four_ops.git("worktree", "add", "--quiet", "--detach", str(b))
    return four_ops, Repo(b)


def _run_in_a(a: Repo, tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:
    ready, go = tmp_path / "ready", tmp_path / "go"
    proc = start(
        "run", "--objective", OBJECTIVE, "--verify", WAIT, "--containment", "none",
        cwd=a.root, env={**env(tmp_path), "READY": str(ready), "GO": str(go)},
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not ready.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the verify command never started"
        time.sleep(0.05)
    return proc, Path(ready.read_text())


def _finish(proc: subprocess.Popen[str], tmp_path: Path) -> tuple[int, Any]:
    (tmp_path / "go").touch()
    out, err = proc.communicate(timeout=120)
    assert out.strip(), err
    return proc.returncode, json.loads(out)


def test_recover_in_b_leaves_the_live_shadow_of_a_alone(
    a_and_b: tuple[Repo, Repo], tmp_path: Path
) -> None:
    a, b = a_and_b
    proc, shadow = _run_in_a(a, tmp_path)

    code, summary, err = cli("recover", cwd=b.root, env=env(tmp_path))

    assert code == 0, err
    assert isinstance(summary, dict) and summary["removed_shadows"] == []
    assert summary["removed_scratch"] == []
    assert (shadow / "a.txt").read_bytes() == NEW["a.txt"][0]  # type: ignore[index]
    code, report = _finish(proc, tmp_path)
    assert code == 0, report["message"]
    assert report["status"] == "succeeded"
    assert on_disk(a, NEW)


def test_a_shadow_removed_during_verify_fails_the_attempt(
    a_and_b: tuple[Repo, Repo], tmp_path: Path
) -> None:
    a, b = a_and_b
    before = a.tree_state()
    proc, shadow = _run_in_a(a, tmp_path)

    b.git("worktree", "remove", "--force", "--force", str(shadow))  # the attacker, from B

    code, report = _finish(proc, tmp_path)
    assert code == 1
    assert (report["status"], report["failure_phase"]) == ("failed", "VERIFY")
    assert "vanished during VERIFY; the change was not verified" in report["message"]
    assert report["applied_files"] == []
    assert a.tree_state() == before
    assert on_disk(a, OLD)


@pytest.mark.parametrize("reused", [True, False])
def test_a_claim_is_alive_only_while_its_own_process_runs(
    a_and_b: tuple[Repo, Repo], tmp_path: Path, reused: bool
) -> None:
    """A killed run's pid may be reused: the kernel start time tells the new process from
    the dead owner. (The live owner here is the test process itself.)"""
    a, b = a_and_b
    code, _, _ = cli(
        "run", "--objective", OBJECTIVE, "--verify", "true", "--containment", "none",
        cwd=a.root, env={**env(tmp_path), "TIDEGATE_FAULT": "phase.VERIFY"},
    )  # fmt: skip
    assert code == -signal.SIGKILL
    [record] = (a.root / ".git" / "tidegate" / "claims").glob("*.json")
    claim = json.loads(record.read_text())
    shadow = Path(claim["paths"]["shadow"])
    assert shadow.is_dir()
    me = Path(f"/proc/{os.getpid()}/stat").read_text().rsplit(")", 1)[1].split()[19]
    claim.update(pid=os.getpid(), start=str(int(me) + 1) if reused else me)
    record.write_text(json.dumps(claim))

    code, summary, err = cli("recover", cwd=b.root, env=env(tmp_path))

    assert code == 0, err
    assert isinstance(summary, dict)
    if reused:
        assert summary["removed_shadows"] == [str(shadow)]
        assert not shadow.exists() and not record.exists()
    else:
        assert summary["removed_shadows"] == [] and shadow.is_dir() and record.exists()
