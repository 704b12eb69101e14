"""The item state machine: every (from, to) pair of the five statuses, legal and illegal."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.ledger.helpers import failing, item, new_task, passing, read
from tidegate import ledger
from tidegate.ledger import ItemStatus, TransitionRefused
from tidegate.ledger.transitions import EDGES

S = ItemStatus
LEGAL = {(a, b) for a, targets in EDGES.items() for b in targets}
ALL_PAIRS = [(a, b) for a in S for b in S]


def _bring_to(task: Path, status: ItemStatus) -> None:
    if status is S.IN_PROGRESS:
        ledger.claim(task, "T1", "tester")
    elif status is S.BLOCKED:
        ledger.block(task, "T1", "which license should the file carry?")
    elif status is S.DONE:
        ledger.claim(task, "T1", "tester")
        passing(task, "T1")
        ledger.done(task, "T1")
    elif status is S.DISCARDED:
        ledger.discard(task, "T1", "out of scope after planning")


def _prepare(task: Path, start: ItemStatus, target: ItemStatus) -> None:
    """Meet the preconditions of the command that leads to ``target`` (evidence)."""
    if target is S.DONE and start in (S.IN_PROGRESS, S.BLOCKED):
        passing(task, "T1")
    if target is S.PENDING and start is S.IN_PROGRESS:
        failing(task, "T1")


def _move(task: Path, target: ItemStatus) -> None:
    """Ask for ``target`` with the command that leads there."""
    if target is S.IN_PROGRESS:
        ledger.claim(task, "T1", "tester")
    elif target is S.DONE:
        ledger.done(task, "T1")
    elif target is S.PENDING:
        ledger.requeue(task, "T1", "try again", decision="use the MIT license")
    elif target is S.BLOCKED:
        ledger.block(task, "T1", "needs a person")
    else:
        ledger.discard(task, "T1", "dropped")


@pytest.mark.parametrize(("start", "target"), ALL_PAIRS, ids=[f"{a}->{b}" for a, b in ALL_PAIRS])
def test_transition_graph(tmp_path: Path, start: ItemStatus, target: ItemStatus) -> None:
    task = new_task(tmp_path)
    _bring_to(task, start)
    assert item(task, "T1").status is start
    _prepare(task, start, target)
    if (start, target) in LEGAL:
        _move(task, target)
        assert item(task, "T1").status is target
        return
    before = {name: read(task, name) for name in ("ledger.md", "checkpoint.md")}
    with pytest.raises(TransitionRefused) as refused:
        _move(task, target)
    message = str(refused.value)
    assert f"T1: {start} -> {target} is not allowed; from {start}: " in message
    for allowed in EDGES[start]:
        assert f"{allowed} ({EDGES[start][allowed]})" in message
    if not EDGES[start]:
        assert "is final" in message
    assert {name: read(task, name) for name in before} == before  # refused: nothing written


def test_edges_match_the_contract() -> None:
    assert {
        (S.PENDING, S.IN_PROGRESS),
        (S.PENDING, S.BLOCKED),
        (S.PENDING, S.DISCARDED),
        (S.IN_PROGRESS, S.DONE),
        (S.IN_PROGRESS, S.PENDING),
        (S.IN_PROGRESS, S.BLOCKED),
        (S.IN_PROGRESS, S.DISCARDED),
        (S.BLOCKED, S.PENDING),
        (S.BLOCKED, S.DISCARDED),
        (S.DONE, S.PENDING),
    } == LEGAL


def test_unknown_item_lists_the_known_ones(tmp_path: Path) -> None:
    task = new_task(tmp_path)
    with pytest.raises(TransitionRefused, match=r"no item 'T9' in ledger.md \(items: T1, T2\)"):
        ledger.claim(task, "T9", "tester")


def test_claim_sets_the_claim_marker_and_resume_pointer(tmp_path: Path) -> None:
    task = new_task(tmp_path)
    out = ledger.claim(task, "T2", "ana")
    assert out.exit_code == 0
    assert item(task, "T2").assignee == "ana"
    assert "- Resume Pointer: T2" in read(task, "checkpoint.md")
    assert "| T2 | Fix mul | in_progress |" in read(task, "ledger.md")


def test_done_needs_passing_evidence_of_this_attempt(tmp_path: Path) -> None:
    task = new_task(tmp_path)
    ledger.claim(task, "T1", "tester")
    with pytest.raises(TransitionRefused, match="no accepted passing evidence"):
        ledger.done(task, "T1")
    failing(task, "T1")
    with pytest.raises(TransitionRefused, match="no accepted passing evidence"):
        ledger.done(task, "T1")
    ledger.record(task, "T1", ["https://ci.example.com/runs/7"])
    with pytest.raises(TransitionRefused, match=r"latest check of T1 \(E-1\) failed"):
        ledger.done(task, "T1")
    passing(task, "T1")
    ledger.done(task, "T1")
    assert item(task, "T1").evidence == ["E-1", "E-2", "E-3"]


def test_high_route_needs_an_executed_check_before_done(tmp_path: Path) -> None:
    task = new_task(tmp_path, route="high")
    ledger.claim(task, "T1", "tester")
    ledger.record(task, "T1", ["https://ci.example.com/runs/8"])
    with pytest.raises(TransitionRefused, match="passing executed check"):
        ledger.done(task, "T1")
    passing(task, "T1")
    ledger.done(task, "T1")


def test_record_needs_a_claimed_item(tmp_path: Path) -> None:
    task = new_task(tmp_path)
    with pytest.raises(TransitionRefused, match="claim T1 first"):
        ledger.record(task, "T1", ["command: pytest (exit 0)"])


def test_requeue_needs_a_reason(tmp_path: Path) -> None:
    task = new_task(tmp_path)
    ledger.claim(task, "T1", "tester")
    failing(task, "T1")
    with pytest.raises(TransitionRefused, match="--reason is required"):
        ledger.requeue(task, "T1", "  ")
