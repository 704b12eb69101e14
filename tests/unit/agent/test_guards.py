"""Loop guards: repeats, cycles, failure bounds and budgets, as data that survives resume."""

from __future__ import annotations

import pytest

from tidegate.agent.guards import (
    BUDGET,
    EXACT_REPEAT,
    HARD_CAP,
    MUTATION_FAMILY,
    NO_PROGRESS,
    TOOL_CYCLE,
    VALIDATION_FAILURE,
    WRITE_CYCLE,
    Allow,
    Block,
    Budget,
    Finalize,
    GuardLimits,
    LoopGuards,
    Pause,
    Stop,
    ToolCall,
    mutation_family,
)


def read(path: str, state: str = "s0") -> ToolCall:
    return ToolCall("workspace.read", {"path": path}, workspace_state=state)


def dispatch(guards: LoopGuards, call: ToolCall, ok: bool = True) -> None:
    assert isinstance(guards.check_call(call), Allow)
    guards.record_call(call, ok=ok)


# exact repeat


def test_an_identical_call_on_an_unchanged_workspace_is_blocked_then_paused() -> None:
    guards = LoopGuards(GuardLimits(repeat_blocks_allowed=2))
    dispatch(guards, ToolCall("workspace.grep", {"pattern": "x", "path": "src"}))
    same = ToolCall("workspace.grep", {"path": "src", "pattern": "x"})  # key order differs
    assert isinstance(guards.check_call(same), Block)
    assert isinstance(guards.check_call(same), Block)
    decision = guards.check_call(same)
    assert isinstance(decision, Pause) and decision.guard == EXACT_REPEAT


def test_the_same_call_on_a_changed_workspace_is_not_a_repeat() -> None:
    guards = LoopGuards()
    dispatch(guards, read("a.py", state="s0"))
    assert isinstance(guards.check_call(read("a.py", state="s1")), Allow)


def test_repeat_with_sufficient_evidence_finalizes() -> None:
    guards = LoopGuards()
    dispatch(guards, read("a.py"))
    decision = guards.check_call(read("a.py"), evidence_complete=True)
    assert isinstance(decision, Finalize) and decision.guard == EXACT_REPEAT


def test_repeat_allowance_returns_after_semantic_progress() -> None:
    guards = LoopGuards(GuardLimits(repeat_blocks_allowed=1))
    dispatch(guards, read("a.py"))
    assert isinstance(guards.check_call(read("a.py")), Block)
    assert isinstance(guards.record_turn(1), Allow)
    assert isinstance(guards.check_call(read("a.py")), Block)


def test_only_the_recent_window_counts_as_repeat() -> None:
    guards = LoopGuards(GuardLimits(recent_window=2))
    dispatch(guards, read("a.py", "s0"))
    dispatch(guards, read("b.py", "s1"))
    dispatch(guards, read("c.py", "s2"))
    assert isinstance(guards.check_call(read("a.py", "s0")), Allow)


# successful tool cycles (matrix 47, 49)


def test_alternating_successful_calls_are_stopped_before_the_cycle_completes() -> None:
    guards = LoopGuards()
    # the workspace state moves every call, so no call is an exact repeat
    dispatch(guards, read("a.py", "s1"))
    dispatch(guards, read("b.py", "s2"))
    dispatch(guards, read("a.py", "s3"))
    pause = guards.check_call(read("b.py", "s4"))
    assert isinstance(pause, Pause) and pause.guard == TOOL_CYCLE
    final = guards.check_call(read("b.py", "s4"), evidence_complete=True)
    assert isinstance(final, Finalize) and final.guard == TOOL_CYCLE


def test_three_call_cycles_are_found_and_constant_runs_are_left_to_repeat() -> None:
    guards = LoopGuards()
    for i, path in enumerate(["a", "b", "c", "a", "b"]):
        dispatch(guards, read(path, f"s{i}"))
    assert isinstance(guards.check_call(read("c", "s9")), Pause)
    constant = LoopGuards()
    for i in range(3):
        dispatch(constant, read("a", f"s{i}"))
    assert isinstance(constant.check_call(read("a", "s9")), Allow)


def test_failed_calls_do_not_enter_the_successful_suffix() -> None:
    guards = LoopGuards()
    dispatch(guards, read("a", "s1"))
    dispatch(guards, read("b", "s2"), ok=False)
    dispatch(guards, read("a", "s3"))
    assert isinstance(guards.check_call(read("b", "s4")), Allow)


def test_a_fresh_host_restores_the_suffix_and_blocks_the_incomplete_cycle() -> None:
    guards = LoopGuards()
    dispatch(guards, read("a", "s1"))
    dispatch(guards, read("b", "s2"))
    dispatch(guards, read("a", "s3"))
    restored = LoopGuards.from_json(guards.to_json())
    assert isinstance(restored.check_call(read("b", "s4")), Pause)


# write cycles (matrix 23)


def test_a_to_b_to_a_to_b_pauses_at_the_fourth_state() -> None:
    guards = LoopGuards()
    assert isinstance(guards.record_write("x.py", "A", "B"), Allow)
    assert isinstance(guards.record_write("x.py", "B", "A"), Allow)  # a revert is fine
    decision = guards.record_write("x.py", "A", "B")
    assert isinstance(decision, Pause) and decision.guard == WRITE_CYCLE
    assert "x.py" in decision.reason


def test_progressing_writes_and_other_paths_are_not_cycles() -> None:
    guards = LoopGuards()
    for before, after in [("A", "B"), ("B", "C"), ("C", "A"), ("A", "D")]:
        assert isinstance(guards.record_write("x.py", before, after), Allow)
    assert isinstance(guards.record_write("y.py", None, "A"), Allow)
    assert isinstance(guards.record_write("y.py", "A", None), Allow)
    assert isinstance(guards.record_write("y.py", None, "A"), Pause)  # create, delete, create


def test_write_cycle_with_sufficient_evidence_finalizes() -> None:
    guards = LoopGuards()
    guards.record_write("x.py", "A", "B")
    guards.record_write("x.py", "B", "A")
    assert isinstance(guards.record_write("x.py", "A", "B", evidence_complete=True), Finalize)


# validation failures (matrix 24)


def test_validation_failures_on_one_fingerprint_are_bounded() -> None:
    guards = LoopGuards(GuardLimits(validation_failures_per_state=2))
    validate = ToolCall("project.validate", {"scope": "tests"}, workspace_state="fp1")
    assert isinstance(guards.record_validation("fp1", passed=False), Allow)
    decision = guards.record_validation("fp1", passed=False)
    assert isinstance(decision, Pause) and decision.guard == VALIDATION_FAILURE
    blocked = guards.check_call(validate)
    assert isinstance(blocked, Pause) and blocked.guard == VALIDATION_FAILURE
    elsewhere = ToolCall("project.validate", {"scope": "tests"}, workspace_state="fp2")
    assert isinstance(guards.check_call(elsewhere), Allow)
    assert isinstance(guards.record_validation("fp2", passed=True), Allow)


# failed mutation families (matrix 22, 31)


def test_varied_failing_edits_of_one_path_in_one_state_reach_a_pause() -> None:
    guards = LoopGuards(GuardLimits(failures_per_mutation_family=3))
    family = mutation_family("src/a.py", "sha256:aaa")
    for i in range(3):
        edit = ToolCall("workspace.edit", {"path": "src/a.py", "old": f"v{i}"}, "s0", family)
        dispatch(guards, edit, ok=False)
    next_edit = ToolCall("workspace.edit", {"path": "src/a.py", "old": "v9"}, "s0", family)
    decision = guards.check_call(next_edit)
    assert isinstance(decision, Pause) and decision.guard == MUTATION_FAMILY
    other = mutation_family("src/a.py", "sha256:bbb")
    assert isinstance(guards.check_call(ToolCall("workspace.edit", {"o": 1}, "s1", other)), Allow)
    assert mutation_family("new.py", None) == "new.py@absent"


def test_counters_survive_pause_and_resume() -> None:
    limits = GuardLimits(repeat_blocks_allowed=1, failures_per_mutation_family=2)
    guards = LoopGuards(limits)
    family = mutation_family("a.py", "h")
    dispatch(guards, ToolCall("workspace.edit", {"v": 1}, "s0", family), ok=False)
    dispatch(guards, read("a.py"))
    assert isinstance(guards.check_call(read("a.py")), Block)
    text = guards.to_json()

    restored = LoopGuards.from_json(text)
    assert restored.to_json() == text
    # the repeat allowance is spent: the next repeat pauses instead of being blocked again
    assert isinstance(restored.check_call(read("a.py")), Pause)
    restored.record_call(ToolCall("workspace.edit", {"v": 2}, "s0", family), ok=False)
    assert isinstance(
        restored.check_call(ToolCall("workspace.edit", {"v": 3}, "s0", family)), Pause
    )


# no progress


def test_turns_without_semantic_progress_are_bounded() -> None:
    guards = LoopGuards(GuardLimits(turns_without_progress=3))
    assert isinstance(guards.record_turn(1), Allow)
    assert isinstance(guards.record_turn(1), Allow)
    assert isinstance(guards.record_turn(1), Allow)
    decision = guards.record_turn(1)
    assert isinstance(decision, Pause) and decision.guard == NO_PROGRESS
    assert isinstance(guards.record_turn(1, evidence_complete=True), Finalize)
    assert isinstance(guards.record_turn(2), Allow)


# budgets


@pytest.mark.parametrize(
    ("budget", "usage", "name"),
    [
        (Budget(max_steps=3), {"steps": 3}, "steps"),
        (Budget(max_tokens=1000), {"tokens": 1000}, "tokens"),
        (Budget(max_wall_seconds=60), {"seconds": 61.0}, "wall_seconds"),
        (Budget(max_dollars=1.0), {"dollars": 1.0}, "dollars"),
    ],
)
def test_soft_budgets_pause_and_name_the_limit(
    budget: Budget, usage: dict[str, float], name: str
) -> None:
    guards = LoopGuards(GuardLimits(budget=budget))
    assert isinstance(guards.check_model_request(), Allow)
    guards.record_usage(**usage)  # type: ignore[arg-type]
    decision = guards.check_model_request()
    assert isinstance(decision, Pause) and decision.guard == BUDGET
    assert name in decision.reason
    assert isinstance(guards.check_call(read("a.py")), Pause)


def test_hard_dollar_cap_stops_before_it_is_crossed() -> None:
    guards = LoopGuards(GuardLimits(budget=Budget(hard_dollar_cap=1.0)))
    guards.record_usage(dollars=0.9)
    assert isinstance(guards.check_model_request(projected_dollars=0.1), Allow)
    stop = guards.check_model_request(projected_dollars=0.11)
    assert isinstance(stop, Stop) and stop.guard == HARD_CAP


def test_budget_reports_every_exceeded_limit() -> None:
    budget = Budget(max_steps=1, max_tokens=10, max_dollars=5)
    guards = LoopGuards(GuardLimits(budget=budget))
    guards.record_usage(steps=1, tokens=10)
    assert budget.exceeded(guards.state.usage) == ["steps", "tokens"]


def test_resume_with_a_larger_budget_keeps_the_spending() -> None:
    guards = LoopGuards(GuardLimits(budget=Budget(max_steps=2)))
    guards.record_usage(steps=2, tokens=50, dollars=0.5)
    assert isinstance(guards.check_model_request(), Pause)
    resumed = LoopGuards.from_json(guards.to_json(), GuardLimits(budget=Budget(max_steps=5)))
    assert isinstance(resumed.check_model_request(), Allow)
    assert resumed.state.usage.steps == 2 and resumed.state.usage.dollars == 0.5
