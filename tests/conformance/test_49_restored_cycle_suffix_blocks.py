"""Matrix 49: a fresh host restores the bounded successful-call suffix and blocks an
incomplete alternating cycle before dispatch.

A, B, A run (A appends to a file with a real command, so the workspace moves and no call is
an exact repeat; B reads the file); the step budget then pauses the session before the
next call can run. A fresh host -- new store connection, recorder, executor
and session -- resumes from the verified checkpoint under a larger budget. The restored
suffix holds the three calls (bounded by twice the longest cycle period), so the model's B
would complete A, B, A, B and is stopped before dispatch: the store still holds three calls.
"""

from __future__ import annotations

from tests.conformance._agent import Recorded, answer, call, executor, scripted, session, turn
from tests.conftest import Repo, requires_containment
from tidegate.agent import Budget, GuardLimits, run_loop


@requires_containment
def test_a_fresh_host_blocks_the_cycle_the_first_host_began(committed_repo: Repo) -> None:
    append = {"command": "echo more >> notes.txt"}
    record = Recorded(committed_repo.root)
    model = scripted(
        turn(call("command_run", "a1", **append)),
        turn(call("workspace_read", "b1", path="notes.txt")),
        turn(call("command_run", "a2", **append)),
        turn(call("workspace_read", "b2", path="notes.txt")),
        turn(call("workspace_read", "b3", path="notes.txt")),
        answer("never"),
    )
    limits = GuardLimits(budget=Budget(max_steps=4))
    with executor(committed_repo.root) as ex:
        s = session(model, ex, recorder=record.recorder, limits=limits)
        outcome = run_loop(s)
        record.finish(s, outcome)
    assert outcome.status == "paused" and outcome.guard == "budget"
    assert s.transcript.tool_sequence == ["command.run", "workspace.read", "command.run"]
    limit = 2 * s.guards.limits.max_cycle_period
    assert 3 == len(s.guards.state.successful_suffix) <= limit

    bigger = GuardLimits(budget=Budget(max_steps=20))
    with executor(committed_repo.root) as fresh:
        resumed = record.resume(model, fresh, limits=bigger)
        assert resumed.guards.state.successful_suffix == s.guards.state.successful_suffix
        again = run_loop(resumed)
    assert again.status == "paused" and again.guard == "tool-cycle"
    assert resumed.transcript.tools[-1].call_id == "b3"
    assert resumed.transcript.tools[-1].dispatched is False
    assert len(record.store.tool_calls(record.run_id)) == 3
    assert model.turns_left == 1
    assert committed_repo.read("notes.txt") == "more\nmore\n"
