"""Matrix 10: pause, checkpoint and resume against an unchanged workspace.

A real Ctrl-C during VERIFY pauses the run (exit 130) with a checkpoint that records the
workspace fingerprint, T0, the input hashes (the model-side ones present and empty for an
engine run), budgets, counters and progress. ``tidegate resume`` continues from it
without redoing finished phases and ends exactly where an uninterrupted run of the same
change ends: the same final diff, the same files."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

from tests.conftest import Repo
from tests.integration._store import (
    FIX,
    cli,
    phases_by_execution,
    readonly_store,
    start,
    wait_for_checkpoint_after,
)
from tidegate.flow.progress_inputs import MODEL_HASHES
from tidegate.workspace.fingerprint import workspace_fingerprint

CHECK = f"sleep 2; {sys.executable} -c 'from calc import add; assert add(2, 3) == 5'"


def test_pause_then_resume_matches_an_uninterrupted_run(
    committed_repo: Repo, tmp_path: Path
) -> None:
    repo = committed_repo
    proc = start("run", "--objective", FIX, "--verify", CHECK, cwd=repo.root)
    run_id = wait_for_checkpoint_after(repo, "APPLY", proc)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert proc.returncode == 130

    checkpoint = readonly_store(repo).checkpoints(run_id)[-1]
    assert checkpoint.reason == "pause"
    saved = checkpoint.state
    inputs = saved["inputs"]
    assert inputs["workspace_fingerprint"]["value"] == workspace_fingerprint(repo.root)
    assert saved["t0"]["ref"] == f"refs/tidegate/runs/{run_id}/t0"
    assert set(inputs["hashes"]) == set(MODEL_HASHES)
    assert set(inputs["hashes"].values()) == {None}
    assert inputs["request"]["sha256"] and inputs["planner_sha256"] and inputs["config_sha256"]
    assert saved["budgets"]["max_attempts"] == 3
    assert saved["counters"]["attempt"] == 1
    assert saved["attempt"]["completed"][-1] == "APPLY"
    assert saved["attempt"]["candidate_tree"]

    code, resumed, err = cli("resume", run_id, cwd=repo.root)
    assert code == 0, err
    assert phases_by_execution(readonly_store(repo), run_id)[1] == ["APPLY", "VERIFY", "APPLY_BACK"]

    control = Repo(tmp_path / "control")
    control.root.mkdir()
    control.git("init", "-q")
    for name in ("calc.py", "README.md", ".gitignore"):
        control.write(name, repo.git("show", f"HEAD:{name}"))
    control.commit_all("initial")
    code, uninterrupted, err = cli("run", "--objective", FIX, "--verify", CHECK, cwd=control.root)
    assert code == 0, err
    assert isinstance(resumed, dict) and isinstance(uninterrupted, dict)
    assert resumed["status"] == uninterrupted["status"] == "succeeded"
    assert resumed["diff_sha256"] == uninterrupted["diff_sha256"]
    assert resumed["changed_files"] == uninterrupted["changed_files"]
    assert repo.read("calc.py") == control.read("calc.py")
