"""``workspace.prep_slots``: which phases a run keeps its slot through, and slots taken and
given back on real lock files (the processes' side: ``tests/adversarial/test_prep_slots.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tidegate.records.modes import Phase
from tidegate.workspace.prep_slots import (
    MAX_SLOTS,
    PREP_WAIT_S,
    PrepSlot,
    held_through,
    slot_count,
    wait_limit,
)

OWN = {
    Phase.PREFLIGHT,
    Phase.CONTEXT,
    Phase.EXPLORE,
    Phase.VALIDATE,
    Phase.AST_VALIDATE,
    Phase.APPLY,
}


@pytest.mark.parametrize("planner", ["structured", "scripted", "given", "rebase"])
def test_a_local_planner_keeps_the_slot_up_to_verify(planner: str) -> None:
    kept = {phase for phase in Phase if held_through(phase, planner)}
    assert kept == OWN | {Phase.PLAN, Phase.PATCH}


@pytest.mark.parametrize("planner", ["model:openai:gpt", "agent:codex", "", "structured2"])
def test_a_model_or_an_agent_gets_no_slot_while_it_plans(planner: str) -> None:
    kept = {phase for phase in Phase if held_through(phase, planner)}
    assert kept == OWN


def test_phases_that_wait_outside_never_keep_it() -> None:
    for phase in (Phase.VERIFY, Phase.REVIEW, Phase.REPORT, Phase.ANALYZE_ISSUES,
                  Phase.ROLLBACK, Phase.SHRINK, Phase.APPLY_BACK):  # fmt: skip
        assert not held_through(phase, "structured")


def test_slots_are_taken_waited_for_and_given_back(tmp_path: Path) -> None:
    runtime = tmp_path / "tidegate"
    first = PrepSlot.take(runtime, slots=2, wait_s=0)
    second = PrepSlot.take(runtime, slots=2, wait_s=0)
    assert first.held and second.held and not first.queued
    told: list[int] = []
    third = PrepSlot.take(runtime, slots=2, wait_s=0.05, waiting=lambda: told.append(1))
    assert not third.held and third.gave_up and third.queued and told == [1]
    assert third.waited_s >= 0.05
    first.release()
    first.release()  # twice: nothing more happens
    fourth = PrepSlot.take(runtime, slots=2, wait_s=5)
    assert fourth.held and not fourth.gave_up
    second.release()
    fourth.release()
    assert sorted(p.name for p in (runtime / "prep").iterdir()) == ["slot-0.lock", "slot-1.lock"]


def test_no_slots_means_nothing_to_wait_for_and_nothing_written(tmp_path: Path) -> None:
    slot = PrepSlot.take(tmp_path / "tidegate", slots=0)
    assert not slot.held and not slot.queued and not slot.gave_up
    assert not (tmp_path / "tidegate").exists()


@pytest.mark.parametrize(
    ("value", "expected"), [("3", 3), ("0", 0), ("100000", MAX_SLOTS), ("-1", None), ("x", None)]
)
def test_the_slot_count_setting(
    monkeypatch: pytest.MonkeyPatch, value: str, expected: int | None
) -> None:
    monkeypatch.delenv("TIDEGATE_PREP_SLOTS", raising=False)
    default = slot_count()
    assert 1 <= default <= MAX_SLOTS
    monkeypatch.setenv("TIDEGATE_PREP_SLOTS", value)
    assert slot_count() == (default if expected is None else expected)


@pytest.mark.parametrize(
    ("value", "expected"), [("2.5", 2.5), ("0", 0.0), ("-1", PREP_WAIT_S), ("nan", PREP_WAIT_S),
                            ("inf", PREP_WAIT_S), ("soon", PREP_WAIT_S)]
)  # fmt: skip
def test_the_wait_limit_setting(
    monkeypatch: pytest.MonkeyPatch, value: str, expected: float
) -> None:
    monkeypatch.setenv("TIDEGATE_PREP_WAIT_S", value)
    assert wait_limit() == expected
