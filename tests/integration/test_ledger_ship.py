"""Ship refuses, naming what is missing, until every gate passes; human gates always wait."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.ledger.helpers import approve_review, finish, item, new_task, read, state
from tidegate import ledger
from tidegate.ledger import ItemStatus, TransitionRefused


def _refusal(task: Path, **kwargs: str) -> list[str]:
    before = {p.name: p.read_text() for p in task.glob("*.md") if p.name != "checkpoint.md"}
    out = ledger.ship(task, **kwargs)  # type: ignore[arg-type]
    assert out.exit_code == 1
    assert out.lines[0] == "ship refused:"
    after = {p.name: p.read_text() for p in task.glob("*.md") if p.name != "checkpoint.md"}
    assert after == before  # a refused ship records nothing
    return [line.removeprefix("  - ") for line in out.lines[1:-1]]


def test_ship_names_every_unfinished_item(tmp_path: Path) -> None:
    task = new_task(tmp_path, items=("A", "B", "C", "D"))
    finish(task, "T1")
    ledger.claim(task, "T2", "ana")
    ledger.block(task, "T3", "MIT or Apache-2.0?")
    gaps = _refusal(task)
    assert gaps[:3] == [
        "T2 is in_progress",
        "T3 is blocked (needs_user_decision: MIT or Apache-2.0?)",
        "T4 is pending",
    ]
    assert "review-report.md:3: verdict is pending; ship needs approved" in gaps


def test_optional_and_discarded_items_do_not_hold_ship(tmp_path: Path) -> None:
    task = new_task(tmp_path, route="small", items=("A", "B", "C"))
    ledger_md = task / "ledger.md"
    ledger_md.write_text(
        ledger_md.read_text().replace("| T2 | B | pending | yes |", "| T2 | B | pending | no |")
    )
    finish(task, "T1")
    ledger.discard(task, "T3", "not needed after all")
    out = ledger.ship(task)
    assert out.exit_code == 0, out.lines
    summary = read(task, "implementation-notes.md")
    assert "## Ship Summary" in summary
    assert "- T1 A: E-1 command: check" in summary
    assert "- T3 C: discarded" in summary
    assert "- D-2 ship reason=all required gates pass" in summary
    assert "- Stage: ship_summary (completed)" in read(task, "checkpoint.md")


def test_done_by_hand_without_evidence_is_named(tmp_path: Path) -> None:
    task = new_task(tmp_path, route="small", items=("A",))
    ledger_md = task / "ledger.md"
    ledger_md.write_text(ledger_md.read_text().replace("| pending |", "| done |"))
    assert _refusal(task) == ["T1 is done but has no evidence ref"]


def test_done_with_only_failing_evidence_is_named(tmp_path: Path) -> None:
    task = new_task(tmp_path, route="small", items=("A",))
    ledger.claim(task, "T1", "ana")
    ledger.record(task, "T1", ["command: pytest -q (exit 1)"])
    ledger_md = task / "ledger.md"
    ledger_md.write_text(ledger_md.read_text().replace("| in_progress |", "| done |"))
    gaps = _refusal(task)
    assert gaps == [
        "T1 has no accepted passing evidence in attempt 1",
        "the latest check of T1 (E-1) failed",
    ]


def test_open_conditions_and_triggers_hold_ship(tmp_path: Path) -> None:
    task = new_task(tmp_path, route="small", items=("A",))
    finish(task, "T1")
    cp = task / "checkpoint.md"
    text = cp.read_text()
    text = text.replace(
        "## Re-Execution Conditions\n", "## Re-Execution Conditions\n\n- [ ] T1: rerun on Windows\n"
    )
    cp.write_text(
        text.replace("## Promotion Triggers\n", "## Promotion Triggers\n\n- [ ] needs two OSes\n")
    )
    assert _refusal(task) == [
        "re-execution condition open: T1: rerun on Windows",
        "promotion trigger open: needs two OSes",
    ]


@pytest.mark.parametrize(
    ("refs", "gap"),
    [
        ("none", "the approval names no evidence refs"),
        ("E-9", "ref 'E-9' is not an evidence id, URL or existing path"),
        ("notes.txt", "ref 'notes.txt' is not an evidence id"),
    ],
)
def test_review_approval_needs_real_refs(tmp_path: Path, refs: str, gap: str) -> None:
    task = new_task(tmp_path)
    finish(task, "T1")
    finish(task, "T2")
    approve_review(task, refs)
    assert any(gap in g for g in _refusal(task))
    approve_review(task, "E-1, https://ci.example.com/runs/3")
    review = task / "review-report.md"
    review.write_text(
        review.read_text().replace(f"Refs: {refs}", "Refs: E-1, https://ci.example.com/runs/3")
    )
    assert ledger.ship(task).exit_code == 0


def test_shipped_task_is_closed(tmp_path: Path) -> None:
    task = new_task(tmp_path, route="small", items=("A",))
    finish(task, "T1")
    ledger.ship(task)
    assert ledger.load(task)[1].kind == "shipped"
    with pytest.raises(TransitionRefused, match="shipped"):
        ledger.requeue(task, "T1", "one more thing")
    assert _refusal(task) == ["the task is already shipped"]


def test_epic_ships_per_milestone(tmp_path: Path) -> None:
    task = new_task(tmp_path, route="epic", items=("A", "B"))
    (task / "roadmap.md").write_text("# Roadmap\n\n## M1: first\n\n## M2: second\n")
    ledger_md = task / "ledger.md"
    ledger_md.write_text(ledger_md.read_text().replace("| T2 | B | M1 |", "| T2 | B | M2 |"))
    finish(task, "T1")
    approve_review(task)
    with pytest.raises(TransitionRefused, match="give --milestone"):
        ledger.ship(task)
    out = ledger.ship(task, milestone="M1")
    assert out.exit_code == 0, out.lines
    checkpoint = read(task, "checkpoint.md")
    assert "- Stage: milestone_loop (in_progress)" in checkpoint  # on to the next milestone
    assert "- Next Action: claim T2: B" in checkpoint
    with pytest.raises(TransitionRefused, match="milestone M1, which is shipped"):
        ledger.requeue(task, "T1", "again")
    assert _refusal(task, milestone="M2") == ["T2 is pending"]
    finish(task, "T2")
    assert ledger.ship(task, milestone="M2").exit_code == 0
    assert "- Stage: long_run_extract (completed)" in read(task, "checkpoint.md")
    assert "Long-run extract:" in read(task, "implementation-notes.md")


@pytest.mark.parametrize(
    ("title", "gate"),
    [
        ("Publish v1.2 to PyPI", "release"),
        ("git push the fix to upstream", "external_push"),
        ("Delete the branch with old experiments", "destructive_cleanup"),
        ("Rotate the API key for the staging bucket", "credentials"),
    ],
)
def test_human_gates_block_for_a_person(tmp_path: Path, title: str, gate: str) -> None:
    task = new_task(tmp_path, items=(title,))
    assert item(task, "T1").gate is not None and item(task, "T1").gate.value == gate
    out = ledger.claim(task, "T1", "agent")
    assert out.exit_code == 1
    blocked = item(task, "T1")
    assert blocked.status is ItemStatus.BLOCKED
    assert blocked.blocker is not None and f"human gate ({gate})" in blocked.blocker.text
    ledger.requeue(task, "T1", "approved", decision="Ana approves, after the changelog review")
    assert f"user_decision item=T1 gate={gate} decision=Ana approves" in read(
        task, "implementation-notes.md"
    )
    assert ledger.claim(task, "T1", "agent").exit_code == 0
    assert item(task, "T1").status is ItemStatus.IN_PROGRESS


def test_gates_are_inferred_when_the_ledger_has_no_gate_column(tmp_path: Path) -> None:
    task = new_task(tmp_path, items=("Fix add", "Publish the release"))
    ledger_md = task / "ledger.md"
    lines = []
    for line in ledger_md.read_text().splitlines():
        cells = line.split("|")
        lines.append("|".join(cells[:5] + cells[6:]) if line.startswith("|") else line)
    ledger_md.write_text("\n".join(lines) + "\n")
    assert state(task).has_gate_column is False
    assert ledger.claim(task, "T2", "agent").exit_code == 1
    assert item(task, "T2").status is ItemStatus.BLOCKED
