"""Conformance 35: a failed result may carry only a denial. An adapter reports a failure
only by raising ToolFailure, which carries no effects, so:

* an edit committed before the failure is a host-observed write next to ok=false: an
  unknown outcome, recorded with the write, and every later call is refused;
* a validation that ran (and passed) before its adapter reported failure leaves no
  validate evidence in the failed result - the pass is never certified - and the
  executor's state version does not move;
* a validation that changed host-observed state (a derived directory, moving the state
  version) before failing is likewise an unknown outcome carrying that mutation and the
  new state version;
* through the agent loop such a run ends failed with UNKNOWN_OUTCOME and never reaches
  the model's final answer.
"""

from __future__ import annotations

import sys

import pytest

from tests.conformance._agent import CHECK, answer, digest, scripted, session, turn
from tests.conformance._agent import call as model_call
from tests.conftest import Repo, requires_containment
from tests.integration.tools.support import (
    PortEditThenFails,
    PortWriteThen,
    ValidatesThenFails,
    call,
    executor,
    sha,
)
from tidegate.agent import run_loop
from tidegate.errors import ErrorClass
from tidegate.tools.calls import ToolOutcomeUnknown
from tidegate.tools.scripted import ListRecorder

PASSES_AS_COMMITTED = f"{sys.executable} -B -c 'import calc; assert calc.add(2, 3) == -1'"
"""A validation that passes on the committed (subtracting) calc.py and writes nothing."""
WRITES_PYCACHE = (
    f'{sys.executable} -c \'import pathlib; d = pathlib.Path("__pycache__"); '
    'd.mkdir(); (d / "calc.cpython-311.pyc").write_bytes(b"compiled")\''
)
"""A passing validation that leaves a derived directory behind."""


def test_failure_with_a_write_cannot_be_ignored(committed_repo: Repo) -> None:
    recorder = ListRecorder()
    with executor(
        committed_repo.root, overrides={"workspace.edit": PortEditThenFails()}, recorder=recorder
    ) as ex:
        expect = sha(ex, "calc.py")
        with pytest.raises(ToolOutcomeUnknown) as caught:
            ex.execute(
                call("workspace_edit", path="calc.py", old="a - b", new="a + b", expect=expect)
            )
        result = caught.value.result
        assert "edit_failed" in caught.value.reason
        assert not result.ok and result.status == "unknown_outcome"
        assert [w.path for w in result.effects.write] == ["calc.py"]
        assert result.effects.write[0].before.sha256 == expect
        assert recorder.calls[-1][1] is result
        after = ex.execute(call("workspace_read", path="calc.py"))
        assert after.status == "error" and after.error is not None
        assert after.error.code == "run_ended"


def test_honest_failure_carries_no_effect(committed_repo: Repo) -> None:
    with executor(committed_repo.root, overrides={"workspace.write": PortWriteThen("fail")}) as ex:
        # the port refuses the stale create, so nothing is written and the failure stands
        result = ex.execute(
            call("workspace_write", path="calc.py", content="x", expect="must_not_exist")
        )
        assert result.status == "error" and result.effects.present() == []
        assert result.error is not None and result.error.code == "stale_precondition"
        assert ex.ended is None


@requires_containment
def test_a_failed_validation_call_certifies_nothing(committed_repo: Repo) -> None:
    adapter = ValidatesThenFails()
    with executor(
        committed_repo.root,
        overrides={"project.validate": adapter},
        validation_command=PASSES_AS_COMMITTED,
    ) as ex:
        result = ex.execute(call("project_validate"))
        assert ex.ended is None and ex.state_version == 0
    (ran,) = adapter.seen
    assert ran.claims.validate_ is not None and ran.claims.validate_.status == "passed"
    assert not result.ok and result.status == "error"
    assert result.error is not None and result.error.code == "validation_lost"
    assert result.effects.present() == []  # the pass the adapter saw is not evidence
    assert result.effects.validate_ is None and result.effects.state_version is None


@requires_containment
def test_a_failed_validation_that_moved_state_is_unknown(committed_repo: Repo) -> None:
    adapter = ValidatesThenFails()
    with executor(
        committed_repo.root,
        overrides={"project.validate": adapter},
        validation_command=WRITES_PYCACHE,
    ) as ex:
        with pytest.raises(ToolOutcomeUnknown) as caught:
            ex.execute(call("project_validate"))
        assert ex.ended is not None and ex.state_version == 1
    assert adapter.seen[0].claims.validate_ is not None
    result = caught.value.result
    assert "validation_lost" in caught.value.reason
    assert not result.ok and result.status == "unknown_outcome"
    assert [d.path for d in result.effects.derived] == ["__pycache__"]
    assert result.effects.state_version == 1
    assert result.effects.validate_ is None
    assert (committed_repo.root / "__pycache__").is_dir()


def test_the_loop_never_completes_after_such_a_failure(committed_repo: Repo) -> None:
    edit = model_call(
        "workspace_edit",
        "c-edit",
        path="calc.py",
        old="a - b",
        new="a + b",
        expect=digest(committed_repo.read("calc.py")),
    )
    model = scripted(turn(edit), answer("Fixed add()."))
    with executor(
        committed_repo.root,
        overrides={"workspace.edit": PortEditThenFails()},
        network="denied",
        validation_command=CHECK,
    ) as ex:
        s = session(model, ex)
        outcome = run_loop(s)
    assert outcome.status == "failed"
    assert outcome.error_class is ErrorClass.UNKNOWN_OUTCOME
    assert not outcome.finalized and outcome.text != "Fixed add()."
    assert model.turns_left == 1, "the model's final answer was never requested"
    (record,) = s.transcript.tools
    assert record.call_id == "c-edit" and record.status == "unknown_outcome"
    assert "a + b" in committed_repo.read("calc.py")  # the edit really landed
