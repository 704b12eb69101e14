"""Matrix 25: a provider context overflow checkpoints, compacts, recounts and continues.

Through the real OpenAI SDK against a loopback server: after two rounds of tool work the
provider answers HTTP 400 ``context_length_exceeded``. The loop writes a checkpoint, replaces
the older rounds by the host's summary (the task stays verbatim), counts the smaller
request again, and sends it; the session then finishes normally. The same happens with
the scripted model, where the run store shows the ``context-overflow`` checkpoint.
"""

from __future__ import annotations

import json

from tests.conformance._agent import (
    Loopback,
    Recorded,
    answer,
    call,
    executor,
    loopback_fixture,  # noqa: F401
    scripted,
    session,
    turn,
)
from tests.conftest import Repo
from tests.integration.models.servers import Reply, oa_error, oa_text_stream, oa_tool_stream
from tidegate.agent import LoopSettings, run_loop
from tidegate.agent.compaction import SUMMARY_MARK


def test_overflow_over_http_compacts_and_continues(
    committed_repo: Repo, loopback: Loopback
) -> None:
    server, model = loopback(
        "openai",
        Reply(sse=oa_tool_stream([("t1", "workspace_read", ['{"path": "calc.py"}'])])),
        Reply(sse=oa_tool_stream([("t2", "workspace_read", ['{"path": "README.md"}'])])),
        Reply(sse=oa_tool_stream([("t3", "workspace_list", ['{"path": "."}'])])),
        oa_error(
            400, "This model's maximum context length is exceeded.", code="context_length_exceeded"
        ),
        Reply(sse=oa_text_stream("Summary understood; add() subtracts.")),
    )
    settings = LoopSettings(keep_recent_rounds=1)
    with executor(committed_repo.root) as ex:
        s = session(model, ex, settings=settings, expect_changes=False)  # type: ignore[arg-type]
        outcome = run_loop(s)
    assert outcome.status == "completed"
    assert outcome.text == "Summary understood; add() subtracts."
    bodies = [r.json() for r in server.received]
    assert len(bodies) == 5
    overflowed, retried = bodies[3], bodies[4]
    assert overflowed["messages"][:2] == retried["messages"][:2]  # system + the task, verbatim
    assert "Task task-1" in retried["messages"][1]["content"]
    assert len(json.dumps(retried)) < len(json.dumps(overflowed))
    texts = json.dumps(retried["messages"])
    assert SUMMARY_MARK in texts and "read calc.py" in texts
    assert '"t3"' in texts and '"t1"' not in texts, (
        "the newest round is kept, older ones summarised"
    )
    assert s.compactions == 1


def test_overflow_writes_a_checkpoint_before_compacting(committed_repo: Repo) -> None:
    committed_repo.write("data.txt", "".join(f"row {n}: some recorded value\n" for n in range(300)))
    record = Recorded(committed_repo.root)
    model = scripted(
        turn(call("workspace_read", path="data.txt")),
        turn(call("workspace_read", path="README.md")),
        {"error": "overflow"},
        answer("continued", expect_user_contains=SUMMARY_MARK),
    )
    with executor(committed_repo.root) as ex:
        s = session(model, ex, recorder=record.recorder)
        task_message = s.messages[0]
        outcome = run_loop(s)
        record.finish(s, outcome)
    assert outcome.status == "completed" and outcome.text == "continued"
    reasons = [c.reason for c in record.checkpoints()]
    assert reasons[:2] == ["start", "context-overflow"]
    events = [e for e in record.store.events(record.run_id) if e.kind == "agent.compacted"]
    (compacted,) = events
    facts = compacted.payload_value()
    assert facts["tokens_after"] < facts["tokens_before"]
    assert facts["reason"] == "provider-overflow"
    assert s.messages[0] == task_message, "the task message survives compaction verbatim"
    assert task_message.text.startswith("Task task-1")  # type: ignore[union-attr]
    assert any(SUMMARY_MARK in getattr(m, "text", "") for m in s.messages[1:])
