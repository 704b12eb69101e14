"""Matrix 46: repeated observations cannot manufacture progress.

A scripted agent drives the real loop and a real executor: every turn it re-runs the same
(passing) validation under one stable id and re-reads the same complete ``git diff``,
varying only harmless arguments so no call is an exact repeat. The ledger keeps the
newest sequence of each observation, but their semantic projection (status, diff digest,
covered writes) never moves after the first turn, so the no-progress guard pauses the run.
With the same limit, a real edit between the repeats, followed by validation and a diff,
is progress: the run reaches a certified, tool-free final answer instead.
"""

from __future__ import annotations

import sys
from typing import Any

from tests.conformance._agent import answer, call, digest, executor, scripted, session, turn
from tests.conftest import Repo, requires_containment
from tidegate.agent import GuardLimits, run_loop

CHECK = f"{sys.executable} -B -c 'import calc; assert calc.mul(2, 3) == 6'"
"""Passes on the committed calc.py."""
LIMITS = GuardLimits(turns_without_progress=3)


def observe(n: int) -> dict[str, Any]:
    """Validate and diff again; the arguments differ per turn, the observations do not."""
    return turn(
        call("project_validate", validation_id="calc-mul", timeout_s=600.0 - n),
        call("git_exec", args=["diff", f"-U{3 + n}"]),
    )


@requires_containment
def test_identical_observations_do_not_count_as_progress(committed_repo: Repo) -> None:
    model = scripted(*[observe(n) for n in range(8)], answer("never"))
    with executor(committed_repo.root, validation=CHECK) as ex:
        s = session(model, ex, limits=LIMITS)
        outcome = run_loop(s)
    assert outcome.status == "paused" and outcome.guard == "no-progress"
    # the first turn observed something new; three more did not
    assert s.transcript.tool_sequence == ["project.validate", "git.exec"] * 4
    assert all(r.ok and r.dispatched for r in s.transcript.tools)
    assert model.turns_left == 5
    assert s.ledger.progress_version == 2  # the first validation and the first diff only
    last_validate, last_diff = s.transcript.tools[-2:]
    held = s.ledger.validation("calc-mul")
    assert held is not None and held.sequence == last_validate.seq  # newest sequence kept
    assert s.ledger.state.diffs["workspace"].sequence == last_diff.seq
    assert committed_repo.status() == ""


@requires_containment
def test_an_edit_then_validation_is_progress(committed_repo: Repo) -> None:
    note = call(
        "workspace_write",
        path="README.md",
        content="# calc\n\nmul works.\n",
        expect=digest("# calc\n"),
    )
    model = scripted(
        observe(0),
        observe(1),
        observe(2),
        turn(note),
        observe(3),
        answer("README updated; validation passed; diff reviewed."),
    )
    with executor(committed_repo.root, validation=CHECK) as ex:
        s = session(model, ex, limits=LIMITS)
        outcome = run_loop(s)
    assert outcome.status == "completed" and outcome.finalized
    assert s.transcript.tool_sequence == [
        *["project.validate", "git.exec"] * 3,
        "workspace.write",
        "project.validate",
        "git.exec",
    ]
    assert s.ledger.progress_version == 5  # first validation + diff, the write, both again
    assert s.ledger.completion_gaps() == []
    assert model.turns_left == 0
