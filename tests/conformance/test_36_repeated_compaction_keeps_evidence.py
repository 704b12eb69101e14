"""Matrix 36: repeated compaction keeps the task and accumulates the evidence.

The provider overflows three times during a fix: after the write, after the validation,
and after the final diff. Each compaction rebuilds the host summary from the whole record,
so the request after each overflow carries the original task verbatim and every piece of
evidence gathered so far -- the write, then the write and the passing validation, then all
three with the completion verdict -- never a summary of a summary.
"""

from __future__ import annotations

from tests.conformance._agent import answer, call, digest, executor, scripted, session, turn
from tests.conftest import CALC, Repo, requires_containment
from tidegate.agent import LoopSettings, run_loop
from tidegate.agent.compaction import SUMMARY_MARK
from tidegate.models.messages import UserMessage


@requires_containment
def test_repeated_compaction_accumulates_evidence(committed_repo: Repo) -> None:
    model = scripted(
        turn(call("workspace_edit", path="calc.py", old="a - b", new="a + b", expect=digest(CALC))),
        {"error": "overflow"},
        turn(call("project_validate"), expect_user_contains="write #1: calc.py"),
        {"error": "overflow"},
        turn(call("git_exec", args=["diff"]), expect_user_contains="validation default: passed"),
        {"error": "overflow"},
        answer("fixed", expect_user_contains="complete diff"),
    )
    with executor(committed_repo.root) as ex:
        s = session(model, ex, settings=LoopSettings(keep_recent_rounds=1))
        task_message = s.messages[0]
        outcome = run_loop(s)
    assert outcome.status == "completed" and outcome.text == "fixed"
    assert s.compactions == 3
    assert s.messages[0] is task_message and task_message.text.startswith("Task task-1")  # type: ignore[union-attr]
    summaries = [
        m.text for m in s.messages if isinstance(m, UserMessage) and SUMMARY_MARK in m.text
    ]
    (last,) = summaries
    assert "write #1: calc.py" in last
    assert "validation default: passed" in last
    assert "complete" in last and "completion evidence is sufficient" in last
    assert SUMMARY_MARK not in last.split(SUMMARY_MARK, 1)[1], "never a summary of a summary"
    assert s.transcript.tool_sequence == ["workspace.edit", "project.validate", "git.exec"]
