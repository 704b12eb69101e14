"""Matrix 23: A -> B -> A -> B write-hash cycles pause rather than oscillate indefinitely.

A scripted agent keeps flipping calc.py between two versions with ``workspace_write``
through the real loop and a real executor. Each write is attested by the host with real
before/after digests; once the file returns a second time to a state it just left, the
write-cycle guard pauses the run after the third dispatched write, although the script
would go on flipping. The pause is checkpointed: a fresh host resuming from it pauses on
the very next flip (made with ``workspace_edit``, so no call repeats an earlier one),
because the recorded write states came back with the guards.
(Finalizing instead of pausing when evidence already suffices is a guard-level rule,
covered in tests/unit/agent/test_guards.py.)
"""

from __future__ import annotations

from typing import Any

from tests.conformance._agent import Recorded, answer, call, digest, executor, scripted, session
from tests.conformance._agent import turn as model_turn
from tests.conftest import Repo
from tidegate.agent import run_loop

VERSION_A = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
"""calc.py as committed."""
VERSION_B = VERSION_A.replace("a - b", "a + b")


def flips(count: int, start: str = VERSION_A) -> list[dict[str, Any]]:
    """``count`` turns, each overwriting calc.py with the other version."""
    turns, current = [], start
    for _ in range(count):
        other = VERSION_B if current == VERSION_A else VERSION_A
        write = call("workspace_write", path="calc.py", content=other, expect=digest(current))
        turns.append(model_turn(write))
        current = other
    return turns


def test_oscillating_writes_pause_after_the_third_write(committed_repo: Repo) -> None:
    model = scripted(*flips(8), answer("never"))
    with executor(committed_repo.root) as ex:
        s = session(model, ex)
        outcome = run_loop(s)
    assert outcome.status == "paused" and outcome.guard == "write-cycle"
    assert "calc.py" in outcome.reason
    assert s.transcript.tool_sequence == ["workspace.write"] * 3
    assert [r.status for r in s.transcript.tools] == ["ok"] * 3
    assert model.turns_left == 6, "the script wanted to keep flipping"
    assert committed_repo.read("calc.py") == VERSION_B  # A -> B -> A -> B
    assert s.last_checkpoint is not None and s.last_checkpoint["reason"] == "pause"


def test_the_pause_holds_across_a_resume(committed_repo: Repo) -> None:
    record = Recorded(committed_repo.root)
    back = call(
        "workspace_edit", path="calc.py", old="a + b", new="a - b", expect=digest(VERSION_B)
    )
    model = scripted(*flips(3), model_turn(back), *flips(1), answer("never"))
    with executor(committed_repo.root) as ex:
        s = session(model, ex, recorder=record.recorder)
        outcome = run_loop(s)
        record.finish(s, outcome)
    assert outcome.status == "paused" and outcome.guard == "write-cycle"
    assert model.turns_left == 3

    with executor(committed_repo.root) as fresh:
        resumed = record.resume(model, fresh)
        again = run_loop(resumed)
        record.finish(resumed, again)
    # one more flip (B -> A) completes the cycle again at once
    assert again.status == "paused" and again.guard == "write-cycle"
    assert resumed.transcript.tool_sequence == ["workspace.write"] * 3 + ["workspace.edit"]
    assert committed_repo.read("calc.py") == VERSION_A
    assert model.turns_left == 2
    stored = [c.canonical_tool for c in record.store.tool_calls(record.run_id)]
    assert stored == ["workspace.write"] * 3 + ["workspace.edit"]
