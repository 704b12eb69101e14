"""The minimal runtime algorithm: resume pointer, blockers, gates, review and ship."""

from __future__ import annotations

from pathlib import Path

from tests.unit.ledger.helpers import approve_review, finish, new_task, read, state
from tidegate import ledger
from tidegate.ledger import next_action


def _next(task: Path) -> ledger.Action:
    return next_action(state(task))


def test_no_pointer_takes_the_first_pending_item(tmp_path: Path) -> None:
    task = new_task(tmp_path)
    action = _next(task)
    assert (action.kind, action.item, action.text) == ("claim", "T1", "claim T1: Fix add")
    assert "- Stage: plan (in_progress)" in read(task, "checkpoint.md")


def test_the_pointer_wins_over_table_order(tmp_path: Path) -> None:
    task = new_task(tmp_path, items=("A", "B", "C"))
    ledger.claim(task, "T3", "ana")
    action = _next(task)
    assert (action.kind, action.item) == ("continue", "T3")
    assert "attempt 1, ana" in action.text


def test_a_blocked_pointer_stops_the_loop(tmp_path: Path) -> None:
    task = new_task(tmp_path)
    ledger.block(task, "T1", "MIT or Apache-2.0?")
    action = _next(task)
    assert (action.kind, action.item) == ("blocked", "T1")
    assert action.stops and "--decision" in action.text
    assert "- Stage: execute (blocked)" in read(task, "checkpoint.md")


def test_an_in_progress_item_is_resumed_without_a_pointer(tmp_path: Path) -> None:
    task = new_task(tmp_path)
    ledger.claim(task, "T2", "ana")
    cp = task / "checkpoint.md"
    cp.write_text(cp.read_text().replace("Resume Pointer: T2", "Resume Pointer: none"))
    assert (_next(task).kind, _next(task).item) == ("continue", "T2")


def test_dependencies_order_the_pending_items(tmp_path: Path) -> None:
    task = new_task(tmp_path)
    plan = task / "plan.md"
    plan.write_text(
        plan.read_text().replace("## T2: Fix mul\n", "## T2: Fix mul\n\nDepends on: T1\n")
    )
    plan.write_text(
        plan.read_text().replace("## T1: Fix add\n", "## T1: Fix add\n\nDepends on: T2\n")
    )
    action = _next(task)  # a cycle: nothing can run, and the loop says so
    assert action.kind == "blocked" and "waits on its dependencies" in action.text
    plan.write_text(plan.read_text().replace("Depends on: T2\n", ""))
    assert _next(task).item == "T1"


def test_review_then_ship_on_medium(tmp_path: Path) -> None:
    task = new_task(tmp_path)
    finish(task, "T1")
    finish(task, "T2")
    action = _next(task)
    assert action.kind == "review" and "review-report.md" in action.text
    assert "- Stage: review (in_progress)" in read(task, "checkpoint.md")
    approve_review(task)
    assert _next(task).kind == "ship"


def test_small_goes_straight_to_ship(tmp_path: Path) -> None:
    task = new_task(tmp_path, route="small", items=("Fix add",))
    ledger.claim(task, "T1", "ana")
    ledger.record(task, "T1", ["command: pytest -q (exit 0)"])
    assert "- Stage: self_verify (in_progress)" in read(task, "checkpoint.md")
    ledger.done(task, "T1")
    assert _next(task).kind == "ship"
    assert "- Stage: ship_summary (in_progress)" in read(task, "checkpoint.md")


def test_an_open_trigger_asks_for_promotion(tmp_path: Path) -> None:
    task = new_task(tmp_path, route="medium", items=("A", "B", "C", "D"))
    plan = task / "plan.md"
    plan.write_text(plan.read_text().replace("## T4: D\n", "## T4: D\n\nDepends on: T3\n"))
    for item_id in ("T1", "T2", "T3", "T4"):
        finish(task, item_id)
    assert "medium->high: more than 3 plan items with dependencies" in read(task, "checkpoint.md")
    action = _next(task)
    assert action.kind == "promote" and action.stops


def test_a_human_gate_asks_for_a_decision(tmp_path: Path) -> None:
    task = new_task(tmp_path, items=("Publish v1.2 to PyPI",))
    assert "| T1 | Publish v1.2 to PyPI | pending | yes | release |" in read(task, "ledger.md")
    action = _next(task)
    assert action.kind == "decide" and "human gate (release)" in action.text
