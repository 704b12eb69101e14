"""``ledger run`` against real repositories: failures, blind reruns, gates and refusals."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import Repo
from tests.unit.ledger.helpers import item, new_task, read, state
from tidegate import ledger
from tidegate.errors import UsageError
from tidegate.ledger import ItemStatus, RunOptions, run_next

CHECK_ADD = f"{sys.executable} -c 'from calc import add; assert add(2, 3) == 5'"


def write_plan(task: Path, sections: dict[str, tuple[str, str | None]]) -> None:
    """plan.md with one section per item: (edit blocks, Verify command)."""
    parts = ["# Plan\n"]
    for item_id, (edits, verify) in sections.items():
        parts.append(f"## {item_id}: work\n\nWhy: see the brief.\n")
        if verify:
            parts.append(f"Verify: `{verify}`\n")
        parts.append(f"```tidegate\n{edits}```\n")
    (task / "plan.md").write_text("\n".join(parts))


def _options(repo: Repo) -> RunOptions:
    return RunOptions(repo=repo.root, max_attempts=1, verify_timeout_s=60, allow_uncontained=True)


def test_failure_blind_rerun_then_a_changed_plan(committed_repo: Repo, tmp_path: Path) -> None:
    task = new_task(tmp_path, items=("Fix add",))
    wrong = "edit-file: calc.py\nreplace: return a - b\nwith: return a * b\n"
    write_plan(task, {"T1": (wrong, CHECK_ADD)})

    first = run_next(task, _options(committed_repo))
    assert first.report is not None and first.report.status == "failed"
    assert first.outcome.exit_code == 1
    assert item(task, "T1").status is ItemStatus.PENDING and item(task, "T1").retries == 1
    assert state(task).failures[0].get("outcome") == "requeued"
    assert committed_repo.read("calc.py").count("return a - b") == 1  # nothing applied

    second = run_next(task, _options(committed_repo))  # nothing changed: the same evidence
    assert second.outcome.exit_code == 1
    blocked = item(task, "T1")
    assert blocked.status is ItemStatus.BLOCKED
    assert (
        blocked.blocker is not None and "failed again with nothing changed" in blocked.blocker.text
    )
    notes = read(task, "implementation-notes.md")
    assert "| E-2 | T1 | 2 | run | fail |" in notes
    assert ledger.load(task)[1].kind == "blocked"
    assert run_next(task, _options(committed_repo)).report is None  # stops at the blocker

    write_plan(task, {"T1": (wrong.replace("a * b", "a + b"), CHECK_ADD)})
    ledger.requeue(task, "T1", "the plan now adds")
    third = run_next(task, _options(committed_repo))
    assert third.report is not None and third.report.status == "succeeded", third.outcome.lines
    assert item(task, "T1").status is ItemStatus.DONE
    assert item(task, "T1").evidence == ["E-1", "E-2", "E-3"]
    assert "return a + b" in committed_repo.read("calc.py")
    assert committed_repo.status() == " M calc.py\n"


def test_a_human_gate_is_never_run(committed_repo: Repo, tmp_path: Path) -> None:
    task = new_task(tmp_path, items=("Publish v1.2 to PyPI",))
    write_plan(task, {"T1": ("delete-file: README.md\n", None)})
    before = committed_repo.tree_state()
    result = run_next(task, _options(committed_repo))
    assert result.report is None and result.outcome.exit_code == 1
    assert item(task, "T1").status is ItemStatus.BLOCKED
    assert committed_repo.tree_state() == before
    assert committed_repo.git("for-each-ref", "refs/tidegate/") == ""
    again = run_next(task, _options(committed_repo))
    assert again.report is None and "blocked" in again.outcome.lines[0]


def test_an_item_without_edit_blocks_is_not_claimed(committed_repo: Repo, tmp_path: Path) -> None:
    task = new_task(tmp_path)
    with pytest.raises(UsageError, match=r"plan.md:7: T1 has no ```tidegate block"):
        run_next(task, _options(committed_repo))
    assert item(task, "T1").status is ItemStatus.PENDING


def test_a_bad_edit_block_names_the_plan_line(committed_repo: Repo, tmp_path: Path) -> None:
    task = new_task(tmp_path)
    write_plan(task, {"T1": ("edit-file: calc.py\nreplace: return a - b\n", None)})
    lines = read(task, "plan.md").splitlines()
    replace_line = lines.index("replace: return a - b") + 1
    with pytest.raises(UsageError, match=rf"plan.md:{replace_line}: 'replace:' has no 'with:'"):
        run_next(task, _options(committed_repo))
    assert item(task, "T1").status is ItemStatus.PENDING


def test_high_route_needs_a_verify_command(committed_repo: Repo, tmp_path: Path) -> None:
    task = new_task(tmp_path, route="high")
    write_plan(task, {"T1": ("edit-file: calc.py\nreplace: a - b\nwith: a + b\n", None)})
    with pytest.raises(UsageError, match="micro-gate"):
        run_next(task, _options(committed_repo))
    assert item(task, "T1").status is ItemStatus.PENDING


def test_not_a_repository_is_refused_before_claiming(tmp_path: Path) -> None:
    task = new_task(tmp_path)
    write_plan(task, {"T1": ("edit-file: calc.py\nreplace: a - b\nwith: a + b\n", None)})
    (tmp_path / "plain").mkdir()
    with pytest.raises(UsageError, match="not inside a git repository"):
        run_next(task, RunOptions(repo=tmp_path / "plain", allow_uncontained=True))
    assert item(task, "T1").status is ItemStatus.PENDING


def test_someone_elses_claim_is_not_taken_over(committed_repo: Repo, tmp_path: Path) -> None:
    task = new_task(tmp_path)
    write_plan(task, {"T1": ("edit-file: calc.py\nreplace: a - b\nwith: a + b\n", None)})
    ledger.claim(task, "T1", "ana")
    with pytest.raises(UsageError, match="T1 is claimed by ana"):
        run_next(task, _options(committed_repo))
    assert committed_repo.git("for-each-ref", "refs/tidegate/") == ""


def test_a_scripted_planner_runs_an_item(committed_repo: Repo, tmp_path: Path) -> None:
    task = new_task(tmp_path, items=("Fix add",))
    write_plan(task, {"T1": ("", CHECK_ADD)})  # no edit blocks: the script proposes
    fix = "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"
    (task / "fix.json").write_text(
        json.dumps({"planner": "scripted", "attempts": [{"plan": "add", "objective": fix}]})
    )
    options = RunOptions(
        repo=committed_repo.root,
        planner="scripted:fix.json",
        max_attempts=1,
        allow_uncontained=True,
    )
    result = run_next(task, options)
    assert result.report is not None and result.report.planner == "scripted"
    assert result.report.status == "succeeded", result.outcome.lines
    assert item(task, "T1").status is ItemStatus.DONE
