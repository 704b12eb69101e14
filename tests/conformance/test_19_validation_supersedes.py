"""Matrix 19: a passing validation supersedes older failed evidence with the same ID.

A scripted agent drives the real loop over a real executor and a recorded run. Its
validation under a stable id (``calc-unit``) fails (a real subprocess), it fixes calc.py
and reviews the diff -- the recorded failure still blocks completion -- and the same id then
passes: the ledger holds only the newest result for that id and the host finalizes. A pass
under a *different* id does not clear the failure: the session ends without certification,
and the ledger names the failing id.
"""

from __future__ import annotations

from tests.conformance._agent import Recorded, answer, call, digest, executor, scripted, session
from tests.conformance._agent import turn as model_turn
from tests.conftest import CALC, Repo, requires_containment
from tidegate.agent import run_loop
from tidegate.agent.evidence import EvidenceLedger, ValidationStatus

FAILED_GAP = "newest result is a failure for validation calc-unit"


def fix() -> dict[str, object]:
    return model_turn(
        call("workspace_edit", path="calc.py", old="a - b", new="a + b", expect=digest(CALC))
    )


def validate(validation_id: str) -> dict[str, object]:
    return model_turn(call("project_validate", validation_id=validation_id))


def diff() -> dict[str, object]:
    return model_turn(call("git_exec", args=["diff"]))


@requires_containment
def test_pass_supersedes_the_failure_with_the_same_id(committed_repo: Repo) -> None:
    record = Recorded(committed_repo.root)
    model = scripted(
        validate("calc-unit"), fix(), diff(), validate("calc-unit"), answer("add() adds.")
    )
    with executor(committed_repo.root) as ex:
        s = session(model, ex, recorder=record.recorder)
        outcome = run_loop(s)
        record.finish(s, outcome)
    assert outcome.status == "completed" and outcome.finalized
    summaries = [r.summary for r in s.transcript.tools if r.tool == "project.validate"]
    assert "failed" in summaries[0] and "passed" in summaries[1]
    # after the fix the failure recorded for calc-unit still stood (the last checkpoint
    # before the final validation), and the turn after the diff still offered tools
    after_fix = [c for c in record.checkpoints() if c.reason == "round"][-2]
    ledger = EvidenceLedger.from_json(str(after_fix.state["ledger"]))
    assert FAILED_GAP in ledger.completion_gaps()
    offered = [t.tools_offered for t in s.transcript.turns]
    assert offered[3] > 0 and offered[4] == 0
    # the newer pass replaced it
    assert list(s.ledger.state.validations) == ["calc-unit"]
    held = s.ledger.validation("calc-unit")
    assert held is not None and held.status is ValidationStatus.PASSED
    assert held.sequence == s.transcript.tools[-1].seq
    assert s.ledger.completion_gaps() == []


@requires_containment
def test_a_pass_under_another_id_does_not_clear_the_failure(committed_repo: Repo) -> None:
    model = scripted(
        validate("calc-unit"), fix(), validate("calc-import"), diff(), answer("I think it works.")
    )
    with executor(committed_repo.root) as ex:
        s = session(model, ex)
        outcome = run_loop(s)
    assert outcome.status == "completed" and not outcome.finalized
    assert all(t.tools_offered > 0 for t in s.transcript.turns)
    passed = s.ledger.validation("calc-import")
    assert passed is not None and passed.status is ValidationStatus.PASSED
    assert s.ledger.completion_gaps() == [FAILED_GAP]
