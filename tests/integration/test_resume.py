"""``tidegate resume``: pause with Ctrl-C (or SIGTERM), resume from the last checkpoint
without repeating finished work, and refuse whenever anything the run depends on changed.

Every run here is the real CLI in a subprocess against a real repository; pauses are real
signals sent while VERIFY runs (the test waits until the store holds the checkpoint after
APPLY, reading it read-only)."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import pytest

from tests.conftest import Repo
from tests.integration._store import (
    FIX,
    cli,
    phases_by_execution,
    readonly_store,
    start,
    wait_for_checkpoint_after,
)

CHECK = f"sleep 2; {sys.executable} -c 'from calc import add; assert add(2, 3) == 5'"


def _pause(repo: Repo, *args: str, sig: int = signal.SIGINT) -> dict[str, object]:
    proc = start("run", "--objective", FIX, "--verify", CHECK, *args, cwd=repo.root)
    wait_for_checkpoint_after(repo, "APPLY", proc)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    report: dict[str, object] = json.loads(out)
    assert report["status"] == "paused"
    return report


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_paused_run_resumes_without_repeating_finished_phases(
    committed_repo: Repo, sig: int
) -> None:
    repo = committed_repo
    before = repo.tree_state(with_mtimes=True)
    paused = _pause(repo, sig=sig)
    run_id = str(paused["run_id"])
    assert f"tidegate resume {run_id}" in str(paused["message"])
    assert repo.tree_state(with_mtimes=True) == before  # a paused run changed nothing
    code, listed, _ = cli("runs", cwd=repo.root)
    assert code == 0 and isinstance(listed, list)
    assert (listed[0]["run_id"], listed[0]["status"]) == (run_id, "paused")

    code, report, err = cli("resume", run_id, cwd=repo.root)

    assert code == 0, err
    assert isinstance(report, dict)
    assert (report["run_id"], report["status"]) == (run_id, "succeeded")
    assert repo.read("calc.py").count("return a + b") == 1
    store = readonly_store(repo)
    first, second = phases_by_execution(store, run_id)
    assert first == ["PREFLIGHT", "CONTEXT", "EXPLORE", "PLAN", "PATCH", "VALIDATE",
                     "AST_VALIDATE", "APPLY"]  # fmt: skip
    # The shadow is new, so APPLY brings it to the recorded candidate again; nothing
    # before it runs twice.
    assert second == ["APPLY", "VERIFY", "APPLY_BACK"]
    assert [p["phase"] for p in report["phases"]] == first + second
    assert any(n.startswith("resumed (paused) from checkpoint") for n in report["notes"])
    assert store.get(run_id).status == "succeeded"


def test_resume_after_a_passed_verify_goes_straight_to_apply_back(
    committed_repo: Repo, tmp_path: Path
) -> None:
    repo = committed_repo
    counter = tmp_path / "verify-runs"
    verify = f"echo ran >> {counter}"
    code, _, _ = cli(
        "run", "--objective", FIX, "--verify", verify, "--containment", "none",
        cwd=repo.root, env={"TIDEGATE_FAULT": "phase.APPLY_BACK"},
    )  # fmt: skip
    assert code == -signal.SIGKILL
    assert counter.read_text() == "ran\n"
    assert repo.read("calc.py").count("return a - b") == 1
    code, listed, _ = cli("runs", cwd=repo.root)
    assert isinstance(listed, list) and listed[0]["status"] == "interrupted"
    run_id = listed[0]["run_id"]

    code, report, err = cli("resume", run_id, cwd=repo.root)

    assert code == 0, err
    assert isinstance(report, dict) and report["status"] == "succeeded"
    assert counter.read_text() == "ran\n"  # VERIFY did not run again
    assert phases_by_execution(readonly_store(repo), run_id)[1] == ["APPLY_BACK"]
    assert repo.read("calc.py").count("return a + b") == 1
    events = readonly_store(repo).events(run_id)
    assert [e.kind for e in events if e.kind.startswith("run.")][-3:] == [
        "run.interrupted",
        "run.resumed",
        "run.finished",
    ]


def test_resume_refuses_a_changed_workspace_and_accepts_it_restored(committed_repo: Repo) -> None:
    repo = committed_repo
    run_id = str(_pause(repo)["run_id"])
    repo.write("README.md", "# calc\n\nan edit made while the run was paused\n")
    before = repo.tree_state(with_mtimes=True)

    code, _, err = cli("resume", run_id, cwd=repo.root)

    assert code == 2
    assert err.count("\n") == 1
    assert err.startswith(f"tidegate: error: cannot resume run {run_id}: the workspace changed")
    assert "README.md" in err and "since checkpoint" in err
    assert repo.tree_state(with_mtimes=True) == before
    assert readonly_store(repo).get(run_id).status == "paused"

    repo.write("README.md", "# calc\n")  # the same content again: the same workspace
    code, report, err = cli("resume", run_id, cwd=repo.root)
    assert code == 0, err
    assert isinstance(report, dict) and report["status"] == "succeeded"


def test_resume_names_a_moved_head_and_a_changed_index(committed_repo: Repo) -> None:
    repo = committed_repo
    run_id = str(_pause(repo)["run_id"])
    repo.write("README.md", "# calc\nstaged\n")
    repo.git("add", "README.md")
    repo.write("README.md", "# calc\n")  # the work tree is back; only the index differs
    code, _, err = cli("resume", run_id, cwd=repo.root)
    assert code == 2 and "the staged state in the git index" in err, err
    repo.git("reset", "-q")
    repo.write("other.txt", "x\n")
    repo.commit_all("moved on")
    code, _, err = cli("resume", run_id, cwd=repo.root)
    assert code == 2 and "HEAD moved from" in err, err


def test_resume_refuses_changed_planner_inputs_and_configuration(
    committed_repo: Repo, tmp_path: Path
) -> None:
    repo = committed_repo
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"planner": "scripted", "attempts": [{"objective": FIX}]}))
    proc = start(
        "run", "--objective", "fix add", "--planner", f"scripted:{script}", "--verify", CHECK,
        cwd=repo.root,
    )  # fmt: skip
    run_id = wait_for_checkpoint_after(repo, "APPLY", proc)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert proc.returncode == 130
    original = script.read_text()

    script.write_text(original.replace("a + b", "b + a"))
    code, _, err = cli("resume", run_id, cwd=repo.root)
    assert code == 2
    assert "the planner's inputs (script or patch files) changed since checkpoint" in err

    script.write_text(original)
    (repo.root / ".tidegate").mkdir(exist_ok=True)
    (repo.root / ".tidegate" / "config.toml").write_text("[validate]\nmax_files = 3\n")
    code, _, err = cli("resume", run_id, cwd=repo.root)
    assert code == 2 and "tidegate configuration changed since checkpoint" in err

    (repo.root / ".tidegate" / "config.toml").unlink()
    code, report, err = cli("resume", run_id, cwd=repo.root)
    assert code == 0, err
    assert isinstance(report, dict) and report["status"] == "succeeded"


def test_only_paused_or_interrupted_runs_resume(committed_repo: Repo) -> None:
    repo = committed_repo
    proc = start("run", "--objective", FIX, "--verify", CHECK, cwd=repo.root)
    run_id = wait_for_checkpoint_after(repo, "APPLY", proc)
    code, _, err = cli("resume", run_id, cwd=repo.root)
    assert code == 2 and f"run {run_id} is still running" in err, err
    proc.communicate(timeout=60)
    assert proc.returncode == 0  # the live run was not disturbed

    code, _, err = cli("resume", run_id, cwd=repo.root)
    assert code == 2 and "already ended (succeeded); nothing to resume" in err
    code, _, err = cli("resume", "no-such-run", cwd=repo.root)
    assert code == 2 and "no recorded run 'no-such-run'" in err


def test_a_retry_before_the_pause_is_kept_and_not_repeated(committed_repo: Repo) -> None:
    repo = committed_repo
    wrong = FIX.replace("a + b", "a * b")
    objective_one = json.dumps(
        {
            "planner": "scripted",
            "attempts": [
                {"objective": wrong},
                {"objective": FIX, "expect_feedback": "Attempt 1 failed"},
            ],
        }
    )
    script = repo.root.parent / "retry.json"
    script.write_text(objective_one)
    proc = start(
        "run", "--objective", "fix add", "--planner", f"scripted:{script}", "--verify", CHECK,
        cwd=repo.root,
    )  # fmt: skip
    run_id = wait_for_checkpoint_after(repo, "APPLY", proc, attempt=2)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    paused = json.loads(out)
    assert (paused["status"], paused["attempts"]) == ("paused", 2)

    code, report, err = cli("resume", run_id, cwd=repo.root)

    assert code == 0, err
    assert isinstance(report, dict) and report["status"] == "succeeded"
    assert [a["status"] for a in report["attempt_events"]] == ["failed", "succeeded"]
    assert len(report["feedback"]) == 1
    first, second = phases_by_execution(readonly_store(repo), run_id)
    assert first.count("VERIFY") == 1 and "SHRINK" in first
    assert second == ["APPLY", "VERIFY", "APPLY_BACK"]
