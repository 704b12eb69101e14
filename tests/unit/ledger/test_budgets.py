"""Retry budgets per route, the changed-condition rule, and the failure types' actions."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.ledger.helpers import (
    fail_attempt,
    failing,
    finish,
    item,
    new_task,
    passing,
    read,
    state,
)
from tidegate import ledger
from tidegate.ledger import FailureType, ItemStatus, TransitionRefused
from tidegate.ledger.model import BlockerKind


def _exhausts_after(task: Path, item_id: str, retries: int) -> ledger.Outcome:
    for n in range(retries):
        out = fail_attempt(task, item_id)
        assert out.exit_code == 0, out.lines
        assert item(task, item_id).retries == n + 1
        assert item(task, item_id).status is ItemStatus.PENDING
    out = fail_attempt(task, item_id)
    assert out.exit_code == 1
    blocked = item(task, item_id)
    assert blocked.status is ItemStatus.BLOCKED
    assert blocked.blocker is not None and blocked.blocker.kind is BlockerKind.BUDGET_EXHAUSTED
    assert blocked.retries == retries
    return out


@pytest.mark.parametrize(("route", "retries"), [("small", 1), ("medium", 2), ("high", 2)])
def test_per_item_budget(tmp_path: Path, route: str, retries: int) -> None:
    task = new_task(tmp_path, route=route, items=("Fix add",))
    out = _exhausts_after(task, "T1", retries)
    assert f"of {retries} retr" in out.lines[0]


def test_small_exhaustion_records_a_promotion_trigger_and_promotion_reopens(
    tmp_path: Path,
) -> None:
    task = new_task(tmp_path, route="small", items=("Fix add",))
    _exhausts_after(task, "T1", 1)
    assert "- [ ] small->medium: more than one retry is needed (T1)" in read(task, "checkpoint.md")
    with pytest.raises(TransitionRefused, match="promote the route"):
        ledger.requeue(task, "T1", "retry please")
    out = ledger.route(task, ledger.Route.MEDIUM, "T1 needed a second retry")
    assert "created plan.md, review-report.md" in out.lines[0]
    assert (task / "plan.md").exists() and (task / "review-report.md").exists()
    notes = read(task, "implementation-notes.md")
    assert "- D-1 route_change from=small to=medium reason=T1 needed a second retry" in notes
    assert "- [x] small->medium: more than one retry is needed (T1)" in read(task, "checkpoint.md")
    ledger.requeue(task, "T1", "promoted to medium")
    assert item(task, "T1").status is ItemStatus.PENDING
    assert item(task, "T1").retries == 2  # the deferred retry is counted now
    out = fail_attempt(task, "T1")
    assert out.exit_code == 1 and item(task, "T1").status is ItemStatus.BLOCKED


def test_high_loop_budget_counts_retries_of_all_items(tmp_path: Path) -> None:
    task = new_task(tmp_path, route="high", items=("A", "B", "C"))
    fail_attempt(task, "T1")
    fail_attempt(task, "T1")
    fail_attempt(task, "T2")
    out = fail_attempt(task, "T2")  # would be the 4th loop iteration of 3
    assert out.exit_code == 1
    blocked = item(task, "T2")
    assert blocked.status is ItemStatus.BLOCKED and blocked.retries == 1
    assert blocked.blocker is not None and "3 of 3 loop iterations" in blocked.blocker.text
    assert "high->epic: repeated failures exhaust the loop budget (T2)" in read(
        task, "checkpoint.md"
    )


def test_epic_budget_belongs_to_each_milestone(tmp_path: Path) -> None:
    task = new_task(tmp_path, route="epic", items=("A", "B", "C", "D"))
    (task / "roadmap.md").write_text("# Roadmap\n\n## M1: first\n\n## M2: second\n")
    ledger_md = task / "ledger.md"
    text = ledger_md.read_text()
    text = text.replace("| T3 | C | M1 |", "| T3 | C | M2 |").replace(
        "| T4 | D | M1 |", "| T4 | D | M2 |"
    )
    ledger_md.write_text(text)
    for item_id in ("T1", "T1", "T2"):
        assert fail_attempt(task, item_id).exit_code == 0
    assert fail_attempt(task, "T2").exit_code == 1  # M1 used its 3 loop iterations
    for item_id in ("T3", "T3", "T4"):  # M2 still has all of its own
        assert fail_attempt(task, item_id).exit_code == 0


def test_a_retry_needs_a_changed_condition(tmp_path: Path) -> None:
    task = new_task(tmp_path, route="medium", items=("Fix add",))
    ledger.claim(task, "T1", "tester")
    ledger.record(task, "T1", ["command: pytest -q (exit 1)"])
    ledger.requeue(task, "T1", "tests fail")
    ledger.claim(task, "T1", "tester")
    out = ledger.record(task, "T1", ["command: pytest -q (exit 1)"])
    assert "same evidence as E-1, so it does not count as new" in out.lines[0]
    with pytest.raises(TransitionRefused, match="nothing changed since F-1"):
        ledger.requeue(task, "T1", "tests still fail")
    plan = task / "plan.md"
    plan.write_text(plan.read_text() + "\nUse addition, not subtraction.\n")
    ledger.requeue(task, "T1", "plan revised")  # a modified plan is a changed condition
    assert item(task, "T1").retries == 2


def test_new_evidence_is_a_changed_condition(tmp_path: Path) -> None:
    task = new_task(tmp_path, route="medium", items=("Fix add",))
    fail_attempt(task, "T1")
    out = fail_attempt(task, "T1")  # a different failing result: new evidence
    assert out.exit_code == 0 and item(task, "T1").retries == 2


def test_same_evidence_twice_does_not_make_an_item_done(tmp_path: Path) -> None:
    task = new_task(tmp_path, items=("Fix add",))
    ledger.claim(task, "T1", "tester")
    ledger.record(task, "T1", ["command: pytest -q (exit 0)"])
    ledger.done(task, "T1")
    ledger.requeue(task, "T1", "review: negative numbers are not covered")
    ledger.claim(task, "T1", "tester")
    ledger.record(task, "T1", ["command: pytest -q (exit 0)"])
    with pytest.raises(TransitionRefused, match="repeat earlier evidence and do not count"):
        ledger.done(task, "T1")
    ledger.record(task, "T1", ["command: pytest -q tests/test_negative.py (exit 0)"])
    ledger.done(task, "T1")


def test_verification_failed_needs_the_failing_check(tmp_path: Path) -> None:
    task = new_task(tmp_path)
    ledger.claim(task, "T1", "tester")
    passing(task, "T1")
    with pytest.raises(TransitionRefused, match="needs the failing check recorded first"):
        ledger.requeue(task, "T1", "it failed", FailureType.VERIFICATION_FAILED)


def test_agent_error_retries_once_without_evidence_then_needs_a_change(tmp_path: Path) -> None:
    task = new_task(tmp_path)
    ledger.claim(task, "T1", "tester")
    ledger.requeue(task, "T1", "the adapter crashed", FailureType.AGENT_ERROR)
    ledger.claim(task, "T1", "tester")
    with pytest.raises(TransitionRefused, match="nothing changed"):
        ledger.requeue(task, "T1", "crashed again", FailureType.AGENT_ERROR)
    ledger.block(task, "T1", "the adapter cannot start here", FailureType.AGENT_ERROR)
    assert item(task, "T1").status is ItemStatus.BLOCKED


@pytest.mark.parametrize(
    ("failure", "hint"),
    [
        (FailureType.REVIEW_BLOCKED, "not a retry of a in_progress item"),
        (FailureType.SCOPE_DRIFT, "use `block`"),
        (FailureType.NEEDS_USER_DECISION, "use `block`"),
    ],
)
def test_failure_types_that_are_not_retries_of_claimed_work(
    tmp_path: Path, failure: FailureType, hint: str
) -> None:
    task = new_task(tmp_path)
    ledger.claim(task, "T1", "tester")
    failing(task, "T1")
    with pytest.raises(TransitionRefused, match=hint):
        ledger.requeue(task, "T1", "x", failure)


def test_review_blocked_writes_a_re_execution_condition(tmp_path: Path) -> None:
    task = new_task(tmp_path)
    finish(task, "T1")
    ledger.requeue(task, "T1", "review: missing a test for negative numbers")
    checkpoint = read(task, "checkpoint.md")
    assert "- [ ] T1: review: missing a test for negative numbers" in checkpoint
    assert "Stage: re_execute (in_progress)" in checkpoint
    assert state(task).failures[-1].kind == "review_blocked"
    finish(task, "T1")
    assert "- [x] T1: review: missing a test for negative numbers" in read(task, "checkpoint.md")


def test_scope_drift_needs_a_revised_plan_and_a_decision(tmp_path: Path) -> None:
    task = new_task(tmp_path, route="small", items=("Fix add",))
    ledger.claim(task, "T1", "tester")
    ledger.block(task, "T1", "the fix also rewrites the parser", FailureType.SCOPE_DRIFT)
    notes = read(task, "implementation-notes.md")
    assert "scope_drift item=T1 attempt=1 outcome=blocked" in notes
    assert "small->medium: touched scope grows beyond the brief (T1)" in read(task, "checkpoint.md")
    with pytest.raises(TransitionRefused, match="--decision"):
        ledger.requeue(task, "T1", "resume")
    with pytest.raises(TransitionRefused, match="its plan is unchanged"):
        ledger.requeue(task, "T1", "resume", decision="keep the parser out")
    brief = task / "brief.md"
    brief.write_text(brief.read_text() + "\nOut of scope: the parser.\n")
    ledger.requeue(task, "T1", "brief narrowed", decision="keep the parser out")
    assert "scope_revision item=T1 decision=keep the parser out" in read(
        task, "implementation-notes.md"
    )


def test_needs_user_decision_waits_for_a_decision(tmp_path: Path) -> None:
    task = new_task(tmp_path)
    ledger.block(task, "T2", "MIT or Apache-2.0?")
    with pytest.raises(TransitionRefused, match="waits for a person: --decision"):
        ledger.requeue(task, "T2", "decided")
    ledger.requeue(task, "T2", "decided", decision="Apache-2.0")
    assert "- D-1 user_decision item=T2 decision=Apache-2.0" in read(
        task, "implementation-notes.md"
    )


def test_unblocking_is_recorded(tmp_path: Path) -> None:
    task = new_task(tmp_path)
    ledger.claim(task, "T1", "tester")
    ledger.block(task, "T1", "the CI runner is down", FailureType.AGENT_ERROR)
    ledger.requeue(task, "T1", "the runner is back")
    assert "unblock item=T1 blocker=agent_error reason=the runner is back" in read(
        task, "implementation-notes.md"
    )
    assert item(task, "T1").retries == 0  # resolving a blocker is not a retry
