"""Route changes: decision lines, the files a route needs, triggers, and demotion."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.ledger.helpers import finish, new_task, read, state
from tidegate import ledger
from tidegate.ledger import Route, TransitionRefused
from tidegate.ledger.gates import infer_gate
from tidegate.ledger.model import Gate


def test_promotion_to_epic_puts_unassigned_items_in_the_first_milestone(tmp_path: Path) -> None:
    task = new_task(tmp_path, route="medium", items=("A",))
    out = ledger.route(task, Route.EPIC, "three subsystems and a migration")
    assert "created roadmap.md" in out.lines[0]
    assert "## M1: Fix calc" in read(task, "roadmap.md")
    assert [i.milestone for i in state(task).items] == ["M1"]
    finish(task, "T1")
    (task / "review-report.md").write_text("# Review\n\n- Verdict: approved\n- Refs: E-1\n")
    assert ledger.ship(task, milestone="M1").exit_code == 0
    assert "- Stage: long_run_extract (completed)" in read(task, "checkpoint.md")


def test_demotion_is_a_recorded_decision(tmp_path: Path) -> None:
    task = new_task(tmp_path, route="medium", items=("A",))
    out = ledger.route(task, Route.SMALL, "planning showed a one-line change")
    assert out.lines[0] == "route demoted medium -> small (D-1); created brief.md"
    assert read(task, "brief.md") == "# Brief\n\nFix calc\n"
    assert "- D-1 route_change from=medium to=small reason=planning showed a one-line change" in (
        read(task, "implementation-notes.md")
    )
    assert state(task).plan_file == "plan.md"  # the plan stays the plan
    with pytest.raises(TransitionRefused, match="already small"):
        ledger.route(task, Route.SMALL, "again")
    with pytest.raises(TransitionRefused, match="--reason"):
        ledger.route(task, Route.HIGH, " ")


def test_repeated_blockers_on_high_are_a_promotion_trigger(tmp_path: Path) -> None:
    task = new_task(tmp_path, route="high", items=("A", "B"))
    ledger.block(task, "T1", "which storage engine?")
    assert "high->epic" not in read(task, "checkpoint.md")
    ledger.discard(task, "T1", "superseded by T2")
    ledger.block(task, "T2", "which storage engine, really?")
    assert "- [ ] high->epic: repeated blockers (T1, T2) suggest a missing product decision" in (
        read(task, "checkpoint.md")
    )


def test_a_gate_on_medium_records_the_external_side_effect_trigger(tmp_path: Path) -> None:
    task = new_task(tmp_path, route="medium", items=("Publish the package",))
    ledger.claim(task, "T1", "agent")
    assert "- [ ] medium->high: external side effects (T1: release)" in read(task, "checkpoint.md")


@pytest.mark.parametrize(
    ("title", "gate"),
    [
        ("Fix the add function", None),
        ("Tag v2.0", Gate.RELEASE),
        ("rm -rf the build cache on the shared runner", Gate.DESTRUCTIVE_CLEANUP),
        ("Update the billing address", Gate.CREDENTIALS),
        ("Promote the canonical rule for imports", Gate.RULE_PROMOTION),
        ("Cross-milestone merge of M1 and M2", Gate.MILESTONE_MERGE),
        ("force-push main", Gate.EXTERNAL_PUSH),
    ],
)
def test_gate_words(title: str, gate: Gate | None) -> None:
    assert infer_gate(title) is gate
