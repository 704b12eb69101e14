"""Matrix 38: oversized accumulated tool output is checkpointed before the next request.

The model reads files whose output together exceeds the session's limit for tool output
between compactions. Before the next request the loop writes a checkpoint and compacts;
that request still carries the task verbatim and names the checkpoint's hash, which is the
hash the run store sealed.
"""

from __future__ import annotations

from tests.conformance._agent import Recorded, answer, call, executor, scripted, session, turn
from tests.conftest import Repo
from tidegate.agent import LoopSettings, run_loop
from tidegate.models.messages import UserMessage


def test_oversized_output_checkpoints_before_the_next_request(committed_repo: Repo) -> None:
    committed_repo.write(
        "big.log", "".join(f"entry {n:05d} " + "x" * 60 + "\n" for n in range(400))
    )
    record = Recorded(committed_repo.root)
    model = scripted(
        turn(call("workspace_read", "r1", path="big.log")),
        answer("summarised", expect_user_contains="Last checkpoint: sha256:"),
    )
    settings = LoopSettings(accumulated_output_chars=4_000, tool_result_chars=20_000)
    with executor(committed_repo.root) as ex:
        s = session(model, ex, recorder=record.recorder, settings=settings, expect_changes=False)
        outcome = run_loop(s)
    assert outcome.status == "completed"
    checkpoints = record.checkpoints()
    reasons = [c.reason for c in checkpoints]
    assert "tool-output" in reasons
    sealed = checkpoints[reasons.index("tool-output")]
    summary = next(
        m.text for m in s.messages if isinstance(m, UserMessage) and "Last checkpoint" in m.text
    )
    assert f"Last checkpoint: {sealed.hash}" in summary
    assert s.messages[0].text.startswith("Task task-1")  # type: ignore[union-attr]
    assert "entry 00399" not in summary, "the output itself is summarised, not carried"
    assert sealed.state["transcript"]["tools"][0]["summary"].startswith("read big.log")
