"""Matrix 26: a provider overflow that persists fails with a resumable checkpoint.

The provider keeps refusing the request as too long. After the allowed compactions the
session ends with CONTEXT_BUDGET (not a provider failure), the run is recorded as paused
with a verified checkpoint chain, and a fresh host resumes from that checkpoint and
finishes. (The scripted model is one deployment: the same script continues after the
resume, since a different script would be a different model identity and is refused.)
"""

from __future__ import annotations

from tests.conformance._agent import Recorded, answer, call, executor, scripted, session, turn
from tests.conftest import Repo
from tidegate.agent import run_loop
from tidegate.errors import ErrorClass


def test_persistent_overflow_fails_resumably(committed_repo: Repo) -> None:
    record = Recorded(committed_repo.root)
    model = scripted(
        turn(call("workspace_read", path="calc.py")),
        {"error": "overflow"},
        {"error": "overflow"},
        {"error": "overflow"},
        answer("resumed and finished", expect_user_contains="resumes from a checkpoint"),
    )
    with executor(committed_repo.root) as ex:
        s = session(model, ex, recorder=record.recorder, expect_changes=False)
        outcome = run_loop(s)
        record.finish(s, outcome)
    assert outcome.status == "failed"
    assert outcome.error_class is ErrorClass.CONTEXT_BUDGET
    assert outcome.resumable and outcome.checkpoint is not None
    assert model.turns_left == 1
    stored = record.store.get(record.run_id)
    assert stored.status == "paused" and stored.error_class == "CONTEXT_BUDGET"
    checkpoints = record.checkpoints()
    assert [c.reason for c in checkpoints].count("context-overflow") == 3
    assert checkpoints[-1].hash == outcome.checkpoint

    # a fresh host (new store connection, recorder, executor, session); the same model
    with executor(committed_repo.root) as ex:
        resumed = record.resume(model, ex, expect_changes=False)
        finished = run_loop(resumed)
        record.finish(resumed, finished)
    assert finished.status == "completed" and finished.text == "resumed and finished"
    assert resumed.transcript.tool_sequence == ["workspace.read"]
    assert record.store.get(record.run_id).status == "succeeded"
