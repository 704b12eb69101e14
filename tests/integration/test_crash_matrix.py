"""SIGKILL at every phase boundary of a patch run, then ``tidegate resume``.

The scenario takes two attempts (the first proposal fails its test, so ROLLBACK and SHRINK
run too). ``TIDEGATE_FAULT=phase.X:N`` kills the real CLI as phase X of attempt N starts;
``apply_back.after_write:1`` kills it between two writes of the apply-back. After every
crash: the work tree is untouched (or, for the apply-back crash, each file is whole), the
store passes ``PRAGMA integrity_check``, the run reads as ``interrupted`` with the phase
it will resume after; then ``resume`` finishes it with the same result as an
uninterrupted run, without leaving a journal or a shadow behind.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import pytest

from tests.conftest import Repo
from tests.integration._store import cli, readonly_store

CHECK = f"{sys.executable} -c 'from calc import add; assert add(2, 3) == 5'"
FIX = (
    "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"
    "edit-file: README.md\nreplace: # calc\nwith: # calc (fixed)\n"
)
WRONG = "edit-file: calc.py\nreplace: return a - b\nwith: return a * b\n"
FIRST = ["PREFLIGHT", "CONTEXT", "EXPLORE", "PLAN", "PATCH", "VALIDATE", "AST_VALIDATE",
         "APPLY", "VERIFY", "ROLLBACK", "SHRINK"]  # fmt: skip
SECOND = ["PREFLIGHT", "CONTEXT", "EXPLORE", "PLAN", "PATCH", "VALIDATE", "AST_VALIDATE",
          "APPLY", "VERIFY", "APPLY_BACK"]  # fmt: skip
SEQUENCE = [(1, p) for p in FIRST] + [(2, p) for p in SECOND]
POINTS = [f"phase.{phase}:{attempt}" for attempt, phase in SEQUENCE if attempt == 1] + [
    "phase.PLAN:2",
    "phase.VERIFY:2",
    "phase.APPLY_BACK:2",
    "apply_back.after_write:1",
]


def _expected_resume(point: str) -> tuple[int, str | None]:
    """(attempt, last finished phase of it) where the run resumes after ``point``."""
    if point.startswith("apply_back."):
        return 2, "VERIFY"
    phase, attempt = point.removeprefix("phase.").split(":")
    index = SEQUENCE.index((int(attempt), phase))
    previous = SEQUENCE[index - 1] if index else (0, None)
    return previous if previous[0] == int(attempt) else (int(attempt), None)


@pytest.fixture
def scenario(committed_repo: Repo, tmp_path: Path) -> tuple[Repo, str]:
    script = tmp_path / "two-attempts.json"
    script.write_text(
        json.dumps({"planner": "scripted", "attempts": [{"objective": WRONG}, {"objective": FIX}]})
    )
    (tmp_path / "tmp").mkdir()
    return committed_repo, f"scripted:{script}"


def _shadows(repo: Repo) -> list[str]:
    listing = repo.git("worktree", "list", "--porcelain")
    return [line for line in listing.splitlines() if "tidegate-shadow-" in line]


@pytest.mark.parametrize("point", POINTS)
def test_a_crash_at_any_boundary_resumes_to_the_same_result(
    scenario: tuple[Repo, str], tmp_path: Path, point: str
) -> None:
    repo, planner = scenario
    before = repo.tree_state(with_mtimes=True)
    index = repo.index_bytes()
    args = ("run", "--objective", "fix add", "--planner", planner, "--verify", CHECK)
    env = {"TMPDIR": str(tmp_path / "tmp")}

    code, _, err = cli(*args, cwd=repo.root, env={**env, "TIDEGATE_FAULT": point})

    assert code == -signal.SIGKILL, err
    if point.startswith("apply_back."):
        assert (
            repo.read("calc.py").count("return a + b") + repo.read("README.md").count("(fixed)")
            == 1
        )  # exactly one of the two files written, whole
    else:
        assert repo.tree_state(with_mtimes=True) == before
    store = readonly_store(repo)
    assert store.integrity_check() == "ok"
    [run] = store.runs()
    assert run.status == "interrupted"
    code, view, _ = cli("read", run.run_id, cwd=repo.root)
    assert code == 0 and isinstance(view, dict)
    attempt, after = _expected_resume(point)
    assert (view["resume"]["attempt"], view["resume"]["after"]) == (attempt, after)
    assert view["evidence"]["checkpoint_chain"] == "verified"

    code, report, err = cli("resume", run.run_id, cwd=repo.root, env=env)

    assert code == 0, err
    assert isinstance(report, dict)
    assert (report["status"], report["attempts"]) == ("succeeded", 2)
    assert [a["status"] for a in report["attempt_events"]] == ["failed", "succeeded"]
    assert repo.read("calc.py").count("return a + b") == 1
    assert repo.read("README.md") == "# calc (fixed)\n"
    assert sorted(repo.status().splitlines()) == [" M README.md", " M calc.py"]
    assert repo.index_bytes() == index
    assert not (repo.root / ".git" / "tidegate" / "journal").exists() or not list(
        (repo.root / ".git" / "tidegate" / "journal").iterdir()
    )
    assert _shadows(repo) == []
    assert not list((tmp_path / "tmp").glob("tidegate-*"))
    store = readonly_store(repo)
    assert store.integrity_check() == "ok"
    assert store.get(run.run_id).status == "succeeded"
    kinds = [e.kind for e in store.events(run.run_id)]
    assert "run.interrupted" in kinds and kinds[-1] == "run.finished"


def test_recover_then_resume_after_a_crash_inside_the_apply_back(
    scenario: tuple[Repo, str], tmp_path: Path
) -> None:
    repo, planner = scenario
    env = {"TMPDIR": str(tmp_path / "tmp")}
    code, _, _ = cli(
        "run", "--objective", "fix add", "--planner", planner, "--verify", CHECK,
        cwd=repo.root, env={**env, "TIDEGATE_FAULT": "apply_back.after_write:1"},
    )  # fmt: skip
    assert code == -signal.SIGKILL
    code, summary, err = cli("recover", cwd=repo.root, env=env)
    assert code == 0, err
    assert isinstance(summary, dict) and summary["journals"][0]["action"] == "completed"
    run_id = readonly_store(repo).runs()[0].run_id

    code, report, err = cli("resume", run_id, cwd=repo.root, env=env)

    assert code == 0, err
    assert isinstance(report, dict) and report["status"] == "succeeded"
    assert any("had completed before the interruption" in n for n in report["notes"])
    assert repo.read("README.md") == "# calc (fixed)\n"
    assert [f["action"] for f in report["applied_files"]] == ["unchanged", "unchanged"]
