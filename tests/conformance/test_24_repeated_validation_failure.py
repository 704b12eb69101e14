"""Matrix 24: repeated validation failure on one workspace fingerprint is bounded.

A scripted agent keeps asking for the same failing validation without changing anything.
Each run is a real subprocess; the guards count failures per workspace fingerprint and,
once the bound is reached, refuse the next validation before it is dispatched, so the
number of real runs equals the bound. After a real change the fingerprint moves and
validation may run again.
"""

from __future__ import annotations

from tests.conftest import Repo
from tests.unit.agent.host import fingerprint, run_validation
from tidegate.agent.guards import (
    VALIDATION_FAILURE,
    Allow,
    GuardLimits,
    LoopGuards,
    Pause,
    ToolCall,
)

CHECK = "import calc; assert calc.add(2, 3) == 5"


def validate_call(repo: Repo, attempt: int = 0) -> ToolCall:
    # the arguments vary, so the exact-repeat guard is not what ends the loop
    args = {"id": "calc-unit", "verbosity": attempt}
    return ToolCall("project.validate", args, workspace_state=fingerprint(repo.root))


def test_validation_on_an_unchanged_workspace_is_bounded(committed_repo: Repo) -> None:
    guards = LoopGuards(GuardLimits(validation_failures_per_state=3))
    runs = 0
    outcome = None
    for attempt in range(20):
        call = validate_call(committed_repo, attempt)
        decision = guards.check_call(call)
        if not isinstance(decision, Allow):
            outcome = decision
            break
        runs += 1
        passed = run_validation(committed_repo.root, CHECK)
        guards.record_call(call, ok=True)
        after = guards.record_validation(call.workspace_state, passed=passed)
        if not isinstance(after, Allow):
            outcome = after
            break
    assert runs == 3
    assert isinstance(outcome, Pause) and outcome.guard == VALIDATION_FAILURE

    # before dispatch, the same fingerprint stays refused (also after a checkpoint)
    restored = LoopGuards.from_json(guards.to_json())
    assert isinstance(restored.check_call(validate_call(committed_repo, 99)), Pause)

    committed_repo.write("calc.py", "def add(a, b):\n    return a + b\n")
    call = validate_call(committed_repo)
    assert isinstance(restored.check_call(call), Allow)
    assert run_validation(committed_repo.root, CHECK)
    assert isinstance(restored.record_validation(call.workspace_state, passed=True), Allow)
