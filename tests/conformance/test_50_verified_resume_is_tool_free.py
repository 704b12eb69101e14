"""Matrix 50: a verified resume with current validation and final-diff evidence sends a
tool-free first request and cannot repeat completed tool work.

A fix session edits, validates and reviews the diff; the person cancels it while the
model writes its final answer, and the run is recorded as paused with a checkpoint that
holds complete evidence. A fresh host verifies the checkpoint chain and the workspace
fingerprint, and its first request offers no tools. The model replays the edit anyway:
the call is refused without running, the file changes once, and the store holds exactly
the three original calls.
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
from tidegate.agent import run_loop
from tidegate.models.events import ModelEvent, TextDelta

FIXED = CALC.replace("a - b", "a + b")


@requires_containment
def test_a_verified_resume_starts_tool_free(committed_repo: Repo) -> None:
    edit = {"path": "calc.py", "old": "a - b", "new": "a + b", "expect": digest(CALC)}
    record = Recorded(committed_repo.root)
    model = scripted(
        turn(call("workspace_edit", "e1", **edit)),
        turn(call("project_validate", "v1")),
        turn(call("git_exec", "d1", args=["diff"])),
        {"text": "Writing the answer", "stall_s": 30.0},
        turn(
            call("workspace_edit", "e1", **edit),
            expect_user_contains="completion evidence is sufficient",
        ),
        answer("add() fixed; validation passed; diff reviewed"),
    )
    with executor(committed_repo.root) as ex:

        def cancel_on_answer(event: ModelEvent) -> None:
            if isinstance(event, TextDelta):
                ex.context.cancel.set()

        s = session(model, ex, recorder=record.recorder)
        outcome = run_loop(s, on_event=cancel_on_answer)
        record.finish(s, outcome)
    assert outcome.status == "cancelled" and outcome.resumable
    assert record.store.get(record.run_id).status == "paused"
    assert record.checkpoints()[-1].state["counters"]["finalizing"]

    with executor(committed_repo.root) as fresh:
        resumed = record.resume(model, fresh)
        assert resumed.build_request().tools == ()
        finished = run_loop(resumed)
        record.finish(resumed, finished)
    assert finished.status == "completed" and finished.finalized
    assert [t.tools_offered for t in resumed.transcript.turns[-2:]] == [0, 0]
    replay = resumed.transcript.tools[-1]
    assert replay.call_id == "e1" and replay.status == "rejected" and not replay.dispatched
    assert committed_repo.read("calc.py") == FIXED
    calls = record.store.tool_calls(record.run_id)
    assert [c.canonical_tool for c in calls] == ["workspace.edit", "project.validate", "git.exec"]
    assert record.store.get(record.run_id).status == "succeeded"
