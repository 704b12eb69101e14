"""Matrix 24: repeated validation failure on one workspace state is bounded.

A scripted agent drives the real loop, a real executor and a recorded run: it asks three
times for the same failing validation (one stable id, varied timeouts so no call is an
exact repeat) without changing anything. Each is a real subprocess; the third failure on
the unchanged workspace pauses the run. A fresh host resumes and asks once more: the call
is refused before dispatch and the run pauses again, so the store still holds three
validations. Resumed again, the agent fixes calc.py: the workspace state moved, so the
next validation is dispatched, passes, and the run completes.
"""

from __future__ import annotations

from typing import Any

from tests.conformance._agent import Recorded, answer, call, digest, executor, scripted, session
from tests.conformance._agent import turn as model_turn
from tests.conftest import CALC, Repo, requires_containment
from tidegate.agent import GuardLimits, run_loop

LIMITS = GuardLimits(validation_failures_per_state=3)


def validate(n: int) -> dict[str, Any]:
    return model_turn(call("project_validate", validation_id="calc-unit", timeout_s=600.0 - n))


def stored_validations(record: Recorded) -> list[str]:
    return [
        c.status
        for c in record.store.tool_calls(record.run_id)
        if c.canonical_tool == "project.validate"
    ]


@requires_containment
def test_failures_on_one_state_pause_until_the_workspace_changes(committed_repo: Repo) -> None:
    record = Recorded(committed_repo.root)
    fix = call("workspace_edit", path="calc.py", old="a - b", new="a + b", expect=digest(CALC))
    model = scripted(
        *[validate(n) for n in range(3)],
        validate(3),  # after the first resume: refused before dispatch
        model_turn(fix),  # after the second resume
        validate(4),
        model_turn(call("git_exec", args=["diff"])),
        answer("add() adds; validation passed."),
    )
    with executor(committed_repo.root) as ex:
        s = session(model, ex, recorder=record.recorder, limits=LIMITS)
        outcome = run_loop(s)
        record.finish(s, outcome)
    assert outcome.status == "paused" and outcome.guard == "repeated-validation-failure"
    assert s.transcript.tool_sequence == ["project.validate"] * 3
    assert all("failed" in r.summary for r in s.transcript.tools)
    assert model.turns_left == 5

    with executor(committed_repo.root) as fresh:
        resumed = record.resume(model, fresh, limits=LIMITS)
        again = run_loop(resumed)
        record.finish(resumed, again)
    assert again.status == "paused" and again.guard == "repeated-validation-failure"
    refused = resumed.transcript.tools[-1]
    assert refused.tool == "project.validate" and not refused.dispatched
    assert len(stored_validations(record)) == 3, "the fourth validation never ran"

    with executor(committed_repo.root) as fresh:
        last = record.resume(model, fresh, limits=LIMITS)
        final = run_loop(last)
        record.finish(last, final)
    assert final.status == "completed" and final.finalized
    validations = [r for r in last.transcript.tools if r.tool == "project.validate"]
    assert validations[-1].dispatched and "passed" in validations[-1].summary
    assert len(stored_validations(record)) == 4
    held = last.ledger.validation("calc-unit")
    assert held is not None and held.status.value == "passed"
    assert model.turns_left == 0
