"""Matrix 31: exact-repeat and failed-mutation-family counters survive pause and resume.

Failed mutations: three edits of calc.py built on stale views (each with other arguments)
fail against the real file; the fourth is stopped before dispatch and the session pauses.
A fresh host resumes from the verified checkpoint -- new store connection, recorder,
executor (whose own per-process counters start at zero) and session -- and a fifth
variation is stopped before dispatch at once: the file keeps its bytes and inode and the
store still holds three edits.

Exact repeats: a repeated read is blocked once; the session then pauses on its step
budget (the third step's call is not run). After a resume with a larger budget, the next
identical read pauses the session instead of being blocked again, because the block
already given was restored.
"""

from __future__ import annotations

import os

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
from tests.conftest import Repo
from tidegate.agent import Budget, GuardLimits, run_loop
from tidegate.tools.guards import state_key


def stale_edit(n: int) -> dict[str, object]:
    return call(
        "workspace_edit",
        path="calc.py",
        old=f"a - b{' ' * n}",
        new="a + b",
        expect=digest(f"old view {n}"),
    )


def test_failed_mutation_family_counter_survives_resume(committed_repo: Repo) -> None:
    target = committed_repo.root / "calc.py"
    before = (os.lstat(target).st_ino, target.read_bytes())
    record = Recorded(committed_repo.root)
    model = scripted(
        turn(stale_edit(1)),
        turn(stale_edit(2)),
        turn(stale_edit(3)),
        turn(stale_edit(4)),
        turn(stale_edit(5)),
        answer("never"),
    )
    key = state_key("file", digest(committed_repo.read("calc.py")))
    with executor(committed_repo.root) as ex:
        s = session(model, ex, recorder=record.recorder)
        outcome = run_loop(s)
        record.finish(s, outcome)
    assert ex.guard.count("calc.py", key) == 3, "the first host counted the failed edits"
    assert outcome.status == "paused" and outcome.guard == "failed-mutation-family"
    assert [r.status for r in s.transcript.tools] == ["error", "error", "error", "not-run"]
    assert record.store.get(record.run_id).status == "paused"

    with executor(committed_repo.root) as fresh:
        assert fresh.guard.count("calc.py", key) == 0, "the executor's own counters start empty"
        resumed = record.resume(model, fresh)
        again = run_loop(resumed)
        record.finish(resumed, again)
    assert again.status == "paused" and again.guard == "failed-mutation-family"
    assert resumed.transcript.tools[-1].dispatched is False
    assert (os.lstat(target).st_ino, target.read_bytes()) == before
    edits = [
        c for c in record.store.tool_calls(record.run_id) if c.canonical_tool == "workspace.edit"
    ]
    assert len(edits) == 3
    assert model.turns_left == 1


def test_exact_repeat_counter_survives_resume(committed_repo: Repo) -> None:
    record = Recorded(committed_repo.root)
    read = {"path": "calc.py"}
    model = scripted(
        turn(call("workspace_read", "r1", **read)),
        turn(call("workspace_read", "r2", **read)),
        turn(call("workspace_grep", "g1", pattern="def")),
        turn(call("workspace_read", "r3", **read)),
        answer("never"),
    )
    limits = GuardLimits(repeat_blocks_allowed=1, budget=Budget(max_steps=3))
    with executor(committed_repo.root) as ex:
        s = session(model, ex, recorder=record.recorder, limits=limits)
        outcome = run_loop(s)
        record.finish(s, outcome)
    assert outcome.status == "paused" and outcome.guard == "budget"
    assert [r.status for r in s.transcript.tools] == ["ok", "blocked", "not-run"]
    assert s.guards.state.repeat_blocks == 1

    bigger = GuardLimits(repeat_blocks_allowed=1, budget=Budget(max_steps=10))
    with executor(committed_repo.root) as fresh:
        resumed = record.resume(model, fresh, limits=bigger)
        again = run_loop(resumed)
    assert again.status == "paused" and again.guard == "exact-repeat"
    assert resumed.transcript.tools[-1].status == "not-run"
    reads = [
        c for c in record.store.tool_calls(record.run_id) if c.canonical_tool == "workspace.read"
    ]
    assert len(reads) == 1
