"""Matrix 47: alternating successful tool calls are stopped before dispatch, and end in a
bounded finalization when the evidence already suffices, or a durable pause when not.

In a fix session the model alternates appending to a file with a real command and reading
it: every append changes the workspace, so no call is an exact repeat, yet nothing is
validated. The call that would complete A, B, A, B is never dispatched; the session pauses
and the run store holds the pause checkpoint. In a review session (which has inspected
enough, and whose repeat window is one call so only the cycle guard sees the
alternation) the model alternates a plan note and a read: the host asks for the final
answer with no tools, and a model that keeps calling tools there is refused a bounded
number of times and then paused.
"""

from __future__ import annotations

from pathlib import Path

from tests.conformance._agent import Recorded, answer, call, executor, scripted, session, turn
from tests.conftest import Repo, requires_containment
from tidegate.agent import GuardLimits, run_loop
from tidegate.tools.policy import TaskMode


def alternation() -> list[dict[str, object]]:
    plan = {"summary": "look at add()"}
    return [
        turn(call("task_checkpoint", **plan)),
        turn(call("workspace_read", path="calc.py")),
        turn(call("task_checkpoint", **plan)),
        turn(call("workspace_read", path="calc.py")),
    ]


def appending() -> list[dict[str, object]]:
    append = {"command": "echo more >> notes.txt"}
    return [
        turn(call("command_run", **append)),
        turn(call("workspace_read", path="notes.txt")),
        turn(call("command_run", **append)),
        turn(call("workspace_read", path="notes.txt")),
    ]


ONE_CALL_WINDOW = GuardLimits(recent_window=1)


@requires_containment
def test_a_cycle_without_sufficient_evidence_pauses_durably(committed_repo: Repo) -> None:
    record = Recorded(committed_repo.root)
    model = scripted(*appending(), answer("never"))
    with executor(committed_repo.root) as ex:
        s = session(model, ex, recorder=record.recorder)
        outcome = run_loop(s)
        record.finish(s, outcome)
    assert outcome.status == "paused" and outcome.guard == "tool-cycle"
    assert s.transcript.tool_sequence == ["command.run", "workspace.read", "command.run"]
    assert committed_repo.read("notes.txt") == "more\nmore\n"
    assert s.transcript.tools[-1].dispatched is False
    assert record.checkpoints()[-1].reason == "pause"
    assert record.store.get(record.run_id).status == "paused"
    assert len(record.store.tool_calls(record.run_id)) == 3


def test_a_cycle_with_sufficient_evidence_finalizes(committed_repo: Repo, tmp_path: Path) -> None:
    model = scripted(*alternation(), answer("- warning calc.py:2: add() subtracts"))
    with executor(committed_repo.root, mode=TaskMode.REVIEW, task_state=tmp_path / "t.json") as ex:
        s = session(model, ex, phase="REVIEW", limits=ONE_CALL_WINDOW)
        outcome = run_loop(s)
    assert outcome.status == "completed" and outcome.finalized
    assert len(s.transcript.tool_sequence) == 3
    assert [t.tools_offered > 0 for t in s.transcript.turns] == [True] * 4 + [False]


def test_finalization_is_bounded(committed_repo: Repo, tmp_path: Path) -> None:
    insist = [turn(call("workspace_list", path=".")) for _ in range(3)]
    model = scripted(*alternation(), *insist, answer("never"))
    with executor(committed_repo.root, mode=TaskMode.REVIEW, task_state=tmp_path / "t.json") as ex:
        s = session(model, ex, phase="REVIEW", limits=ONE_CALL_WINDOW)
        outcome = run_loop(s)
    assert outcome.status == "paused" and outcome.guard == "finalization"
    assert len(s.transcript.tool_sequence) == 3, "nothing ran during finalization"
    assert model.turns_left == 2
