"""Matrix 37: hard token exhaustion after a write resumes from durable edit evidence and
does not run the mutation twice.

The token budget runs out in the turn after a real edit (that turn's call is not run); the
session pauses with a checkpoint.
A fresh host resumes under a larger budget. Its first request carries the host's record of
the edit; the model replays the very same edit call (same id), which is answered from the
record without running, and then an identical edit under a new id, which the real file
refuses as stale. Validation and the diff follow; the file holds the change once and the
store holds exactly one successful edit.
"""

from __future__ import annotations

from tests.conformance._agent import (
    Recorded,
    answer,
    call,
    digest,
    executor,
    scripted,
    session,
    turn,
)
from tests.conftest import CALC, Repo, requires_containment
from tidegate.agent import Budget, GuardLimits, run_loop

FIXED = CALC.replace("a - b", "a + b")


@requires_containment
def test_token_exhaustion_after_a_write_resumes_without_repeating_it(committed_repo: Repo) -> None:
    edit = {"path": "calc.py", "old": "a - b", "new": "a + b", "expect": digest(CALC)}
    record = Recorded(committed_repo.root)
    model = scripted(
        turn(
            call("workspace_edit", "e1", **edit), usage={"input_tokens": 500, "output_tokens": 50}
        ),
        turn(call("project_validate", "v0"), usage={"input_tokens": 600, "output_tokens": 50}),
        turn(call("workspace_edit", "e1", **edit), expect_user_contains="write #1: calc.py"),
        turn(
            call("workspace_edit", "e2", **edit),
            expect_tool_results=[{"id": "e1", "contains": "already ran"}],
        ),
        turn(
            call("project_validate", "v1"),
            expect_tool_results=[{"id": "e2", "contains": "stale_precondition"}],
        ),
        turn(call("git_exec", args=["diff"])),
        answer("add() fixed"),
    )
    with executor(committed_repo.root) as ex:
        s = session(
            model, ex, recorder=record.recorder, limits=GuardLimits(budget=Budget(max_tokens=1000))
        )
        outcome = run_loop(s)
        record.finish(s, outcome)
    assert outcome.status == "paused" and outcome.guard == "budget" and "tokens" in outcome.reason
    assert committed_repo.read("calc.py") == FIXED
    assert record.store.get(record.run_id).status == "paused"

    with executor(committed_repo.root) as fresh:
        resumed = record.resume(model, fresh, limits=GuardLimits(budget=Budget(max_tokens=10**9)))
        finished = run_loop(resumed)
        record.finish(resumed, finished)
    assert finished.status == "completed" and finished.text == "add() fixed"
    assert committed_repo.read("calc.py") == FIXED
    edits = [
        c for c in record.store.tool_calls(record.run_id) if c.canonical_tool == "workspace.edit"
    ]
    assert [(c.tool_call_id, c.status) for c in edits] == [("e1", "succeeded"), ("e2", "failed")]
    assert [w.path for w in resumed.ledger.state.writes] == ["calc.py"]
    assert resumed.ledger.is_complete()
    assert model.turns_left == 0
