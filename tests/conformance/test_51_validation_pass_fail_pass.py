"""Matrix 51: pass -> fail -> pass selects the newest status; a later identical pass can
certify a same-call artifact cleanup without weakening mutation-after-validation rejection.

A scripted agent drives the real loop over a real executor and a recorded run; every
validation is the same real subprocess under one stable id. The validation command also
deletes a stale artifact when one exists, so the third validation's own call removes the
artifact the agent wrote before it: the host attests that deletion as a write at the
validating call's sequence, and the pass of that same call cannot certify it. The next
identical pass does, and the host finalizes. In another session a write made after the
passing validation leaves the run uncertified.
"""

from __future__ import annotations

import sys

from tests.conformance._agent import Recorded, answer, call, digest, executor, scripted, session
from tests.conformance._agent import turn as model_turn
from tests.conftest import Repo, requires_containment
from tidegate.agent import run_loop
from tidegate.agent.evidence import EvidenceLedger, ValidationStatus

ORIGINAL = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
GOOD = ORIGINAL.replace("a - b", "a + b")
WRONG = ORIGINAL.replace("a - b", "a + b + 1")
CLEANUP = (
    f"{sys.executable} -B -c 'import pathlib, calc; "
    'pathlib.Path("stale.log").unlink(missing_ok=True); '
    'assert calc.add(2, 3) == 5, "add is wrong"\''
)
"""Validation that also removes a stale artifact left in the work tree."""


def edit(old: str, new: str, before: str) -> dict[str, object]:
    return model_turn(
        call("workspace_edit", path="calc.py", old=old, new=new, expect=digest(before))
    )


def validate() -> dict[str, object]:
    return model_turn(call("project_validate", validation_id="calc-unit"))


@requires_containment
def test_pass_fail_pass_and_same_call_cleanup(committed_repo: Repo) -> None:
    record = Recorded(committed_repo.root)
    artifact = call("workspace_write", path="stale.log", content="old\n", expect="must_not_exist")
    model = scripted(
        edit("a - b", "a + b", ORIGINAL),
        validate(),  # passes
        edit("a + b", "a + b + 1", GOOD),
        validate(),  # fails
        edit("a + b + 1", "a + b", WRONG),
        model_turn(artifact),
        validate(),  # passes and deletes stale.log in the same call
        model_turn(call("git_exec", args=["diff"])),
        validate(),  # the identical pass that certifies the cleanup
        answer("add() adds; validated twice."),
    )
    with executor(committed_repo.root, validation=CLEANUP) as ex:
        s = session(model, ex, recorder=record.recorder)
        outcome = run_loop(s)
        record.finish(s, outcome)
    assert outcome.status == "completed" and outcome.finalized
    tools = s.transcript.tools
    statuses = [
        "passed" if "passed" in r.summary else "failed"
        for r in tools
        if r.tool == "project.validate"
    ]
    assert statuses == ["passed", "failed", "passed", "passed"]
    assert not (committed_repo.root / "stale.log").exists()

    # the third validation's call carries both the pass and the deletion it made
    cleanup = tools[6]
    assert cleanup.tool == "project.validate"
    assert [w["path"] for w in cleanup.effects["write"]] == ["stale.log"]
    rounds = [c for c in record.checkpoints() if c.reason == "round"]
    after_cleanup = EvidenceLedger.from_json(str(rounds[-2].state["ledger"]))
    held = after_cleanup.validation("calc-unit")
    assert held is not None and held.status is ValidationStatus.PASSED  # newest of p/f/p
    assert held.sequence == cleanup.seq == after_cleanup.last_write_sequence
    assert after_cleanup.completion_gaps() == [
        f"no passing validation after the last write (sequence {cleanup.seq})",
        f"no complete diff observed after the last write (sequence {cleanup.seq})",
    ]
    # the complete diff alone did not certify it: the turn after the diff offered tools
    offered = [t.tools_offered for t in s.transcript.turns]
    assert offered[8] > 0 and offered[9] == 0

    # the next identical pass certifies it
    held = s.ledger.validation("calc-unit")
    assert held is not None and held.sequence == tools[-1].seq
    assert s.ledger.is_complete() and s.ledger.completion_gaps() == []


@requires_containment
def test_a_write_after_the_pass_is_still_rejected(committed_repo: Repo) -> None:
    note = call("workspace_write", path="NOTES.md", content="fixed\n", expect="must_not_exist")
    model = scripted(
        edit("a - b", "a + b", ORIGINAL),
        validate(),
        model_turn(note),
        model_turn(call("git_exec", args=["diff"])),
        answer("done, I believe"),
    )
    with executor(committed_repo.root, validation=CLEANUP) as ex:
        s = session(model, ex)
        outcome = run_loop(s)
    assert outcome.status == "completed" and not outcome.finalized
    write_seq = s.transcript.tools[2].seq
    assert s.ledger.completion_gaps() == [
        f"no passing validation after the last write (sequence {write_seq})"
    ]
