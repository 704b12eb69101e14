"""The model-driven planner inside real engine runs: a real repository, a real shadow
worktree, real verification, the shipped scripted model.

It explores with read-only tools only, plans, proposes a change set that VALIDATE
normalises, receives the shrunk feedback of a failed verification on the next attempt,
reports review findings without changing anything, asks for a repair of a change set that
does not apply, and stops the run when its step budget is spent.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.conformance._agent import answer, call, scripted, turn
from tests.conftest import Repo
from tests.unit.ledger.helpers import item, new_task
from tidegate.agent import READ_ONLY_TOOLS, Budget
from tidegate.flow.transaction import execute
from tidegate.ledger import ItemStatus, RunOptions, run_next
from tidegate.ledger.engine import model_objective
from tidegate.ledger.taskdir import load_task
from tidegate.planners import planner_for
from tidegate.planners.model import ModelPlanner
from tidegate.planners.model_answers import parse_change_set, parse_findings
from tidegate.records.modes import Mode
from tidegate.records.proposal import Finding
from tidegate.records.request import RunRequest

CHECK = f"{sys.executable} -B -c 'from calc import add; assert add(2, 3) == 5, \"add(2, 3) should be 5\"'"


def block(old: str, new: str, path: str = "calc.py") -> str:
    return f"{path}\n<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n"


def run(repo: Repo, planner: ModelPlanner, mode: Mode = Mode.PATCH, **extra: Any) -> Any:
    extra.setdefault("max_attempts", 3)
    request = RunRequest(
        repo=repo.root,
        mode=mode,
        objective="Fix add() in calc.py so that add(2, 3) == 5.",
        objective_base=repo.root,
        verify=CHECK,
        **extra,
    )
    return execute(request, planner=planner)


def test_explore_plan_wrong_patch_feedback_then_fix(committed_repo: Repo) -> None:
    model = scripted(
        turn(call("workspace_grep", "g1", pattern="def add")),
        turn(
            call("workspace_read", "r1", path="calc.py"),
            expect_tool_results=[{"id": "g1", "contains": "calc.py"}],
        ),
        answer("Change the operator of add() in calc.py."),
        answer(block("    return a - b", "    return a * b"), expect_user_contains="Phase PATCH"),
        answer("Use + in add().", expect_user_contains="add(2, 3) should be 5"),
        answer(
            block("    return a - b", "    return a + b"),
            expect_user_contains="add(2, 3) should be 5",
        ),
    )
    planner = ModelPlanner(model)
    report = run(committed_repo, planner)
    assert report.status == "succeeded", report.message
    assert report.attempts == 2 and report.planner == "model:scripted:script"
    assert "return a + b" in committed_repo.read("calc.py")
    assert [(p.phase, p.attempt) for p in planner.history] == [
        ("PLAN", 1),
        ("PATCH", 1),
        ("PLAN", 2),
        ("PATCH", 2),
    ]
    assert planner.tool_sequence == ["workspace.grep", "workspace.read"]
    assert planner.usage.steps == 6
    assert model.turns_left == 0


def test_the_planner_can_only_read(committed_repo: Repo) -> None:
    write = call("workspace_write", "w1", path="calc.py", content="boom\n", expect="must_not_exist")
    model = scripted(
        turn(write, call("task_checkpoint", "p1", summary="fix add")),
        answer("plan", expect_tool_results=[{"id": "w1", "contains": "not available"}]),
        answer(block("    return a - b", "    return a + b")),
    )
    planner = ModelPlanner(model)
    before = committed_repo.tree_state()
    report = run(committed_repo, planner, max_attempts=1)
    assert report.status == "succeeded"
    assert planner.tool_sequence == []
    refused = planner.history[0].transcript.tools[0]
    assert refused.status == "refused" and not refused.dispatched
    after = committed_repo.tree_state()
    changed = {k for k in before if before[k] != after.get(k)}
    assert changed == {"calc.py"}, "only APPLY_BACK wrote, and only the change"


def test_read_only_executor_holds_only_inspection_tools(tmp_path: Path) -> None:
    from tidegate.planners.model import read_only_executor

    with read_only_executor(tmp_path) as ex:
        assert set(ex.registry.active) <= READ_ONLY_TOOLS
        assert ex.context.mode.read_only and ex.context.write_access == "denied"
        assert ex.context.task_state_path == tmp_path / ".tidegate" / "plans" / "plan.json"


def test_review_reports_findings_and_changes_nothing(committed_repo: Repo) -> None:
    committed_repo.write("calc.py", committed_repo.read("calc.py") + "# local edit\n")
    before = committed_repo.tree_state(with_mtimes=True)
    model = scripted(
        turn(call("workspace_read", path="calc.py")),
        answer("- error calc.py:2: add() subtracts\n- info README.md: no usage docs\nThat is all."),
    )
    request = RunRequest(
        repo=committed_repo.root, mode=Mode.REVIEW, objective="Review calc.py", max_attempts=1
    )
    report = execute(request, planner=ModelPlanner(model))
    assert report.status == "succeeded"
    assert [(f.message, f.path, f.line, f.severity) for f in report.findings] == [
        ("add() subtracts", "calc.py", 2, "error"),
        ("no usage docs", "README.md", None, "info"),
    ]
    assert committed_repo.tree_state(with_mtimes=True) == before


def test_a_change_set_that_does_not_apply_is_sent_back(committed_repo: Repo) -> None:
    model = scripted(
        answer("plan"),
        answer(block("    return a ~ b", "    return a + b")),
        answer(block("    return a - b", "    return a + b"), expect_user_contains="do not apply"),
    )
    report = run(committed_repo, ModelPlanner(model), max_attempts=1)
    assert report.status == "succeeded"
    assert model.turns_left == 0


def test_the_step_budget_ends_the_run(committed_repo: Repo) -> None:
    model = scripted(
        turn(call("workspace_read", path="calc.py")),
        turn(call("workspace_read", path="README.md")),
        answer("never"),
    )
    request = RunRequest(
        repo=committed_repo.root,
        objective="Fix add()",
        verify=CHECK,
        max_steps=2,
        model="scripted:unused.json",
    )
    planner = ModelPlanner(model, budget=Budget(max_steps=request.max_steps))
    report = execute(request, planner=planner)
    assert report.status == "failed" and report.failure_phase == "PLAN"
    assert "budget reached: steps" in report.message
    assert report.attempts == 1, "a spent budget is not retried"
    assert committed_repo.status() == ""


def test_planner_for_builds_a_model_planner_from_the_request(
    committed_repo: Repo, tmp_path: Path
) -> None:
    script = tmp_path / "turns.json"
    script.write_text(json.dumps({"model": "m1", "turns": [{"text": "x"}]}))
    request = RunRequest(
        repo=committed_repo.root, objective="x", model=f"scripted:{script}", max_steps=7
    )
    planner = planner_for(request)
    assert isinstance(planner, ModelPlanner)
    assert planner.name == "model:scripted:m1"
    assert planner.budget.max_steps == 7


def test_answers_are_parsed_into_proposals_and_findings() -> None:
    fenced = "Here:\n```diff\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n```\nDone."
    assert parse_change_set(fenced).diff == "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"  # type: ignore[union-attr]
    bare = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"
    assert parse_change_set(bare).diff == bare  # type: ignore[union-attr]
    blocks = block("a", "b", "x.py")
    assert parse_change_set("Sure.\n\n" + blocks).search_replace == "Sure.\n\n" + blocks  # type: ignore[union-attr]
    assert parse_change_set("I would change x.py.") is None
    assert parse_change_set("--- a/x\n+++ b/x\nno hunks") is None
    assert parse_findings("- warning src/a.py:10: too long\n* [error] b.js: broken\nprose") == [
        Finding("too long", path="src/a.py", line=10, severity="warning", source="model"),
        Finding("broken", path="b.js", line=None, severity="error", source="model"),
    ]


def test_ledger_run_with_a_model(committed_repo: Repo, tmp_path: Path) -> None:
    task = new_task(tmp_path, items=("Fix add",))
    (task / "plan.md").write_text(
        f"# Plan\n\n## T1: Fix add\n\nadd() subtracts; make it add.\n\nVerify: `{CHECK}`\n"
    )
    script = tmp_path / "model.json"
    script.write_text(
        json.dumps(
            {
                "turns": [
                    {"text": "plan: fix add", "expect_user_contains": "Phase PLAN"},
                    {"text": block("    return a - b", "    return a + b")},
                ]
            }
        )
    )
    options = RunOptions(
        repo=committed_repo.root, model=f"scripted:{script}", max_attempts=1, allow_uncontained=True
    )
    loaded = load_task(task)
    objective = model_objective(loaded, loaded.state.items[0], loaded.state.plan.get("T1"))
    assert objective.startswith("T1: Fix add\n") and "add() subtracts; make it add." in objective
    assert "Verify:" in objective
    result = run_next(task, options)
    assert result.report is not None and result.report.status == "succeeded", result.outcome.lines
    assert result.report.planner == "model:scripted:script"
    assert item(task, "T1").status is ItemStatus.DONE
    assert "return a + b" in committed_repo.read("calc.py")
