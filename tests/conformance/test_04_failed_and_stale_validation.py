"""Matrix 4: failed and stale validation never count as completion.

A scripted agent makes a wrong edit and validates it (a real failing subprocess), fixes it
and validates again (passing), then writes a note and reviews the complete diff. The
failure, and then the pass that no longer covers the last write, each keep the session
offering tools even though a complete diff follows the write; only a new pass after the
last write makes the host finalize with no tools offered. A session that ends right after
pass, write, diff is left with exactly one gap: no passing validation after that write.
"""

from __future__ import annotations

from tests.conformance._agent import answer, call, digest, executor, scripted, session, turn
from tests.conftest import CALC, Repo, requires_containment
from tidegate.agent import run_loop

WRONG = CALC.replace("a - b", "a * b")
FIXED = CALC.replace("a - b", "a + b")
NOTES_SEQUENCE = 3


@requires_containment
def test_failed_then_stale_validation_keeps_the_session_open(committed_repo: Repo) -> None:
    model = scripted(
        turn(call("workspace_edit", path="calc.py", old="a - b", new="a * b", expect=digest(CALC))),
        turn(call("project_validate", "v1")),
        turn(
            call(
                "workspace_edit",
                path="calc.py",
                old="a * b\n\n",
                new="a + b\n\n",
                expect=digest(WRONG),
            ),
            expect_tool_results=[{"id": "v1", "contains": "failed"}],
        ),
        turn(call("project_validate", "v2")),
        turn(
            call("workspace_write", path="NOTES.md", content="fixed add\n", expect="must_not_exist")
        ),
        turn(call("git_exec", "d1", args=["diff"])),
        turn(call("project_validate", "v3")),
        answer("done"),
    )
    with executor(committed_repo.root) as ex:
        s = session(model, ex)
        outcome = run_loop(s)
    assert outcome.status == "completed" and outcome.finalized
    offered = [t.tools_offered for t in s.transcript.turns]
    assert all(n > 0 for n in offered[:-1]) and offered[-1] == 0
    validations = [r.summary for r in s.transcript.tools if r.tool == "project.validate"]
    assert "failed" in validations[0] and "passed" in validations[1] and "passed" in validations[2]
    # after v2 passed, the NOTES.md write made it stale: with a complete diff after the
    # write, tools were still offered for the next turn (v3)
    assert [r.tool for r in s.transcript.tools[3:6]] == [
        "project.validate",
        "workspace.write",
        "git.exec",
    ]
    assert offered[6] > 0 and s.transcript.turns[6].tool_calls == ("project_validate",)
    assert s.ledger.completion_gaps() == []
    assert committed_repo.read("calc.py") == FIXED


@requires_containment
def test_the_ledger_reports_why_completion_is_missing(committed_repo: Repo) -> None:
    model = scripted(
        turn(call("workspace_edit", path="calc.py", old="a - b", new="a * b", expect=digest(CALC))),
        turn(call("project_validate", "v1")),
        answer("I think it is fine"),
    )
    with executor(committed_repo.root) as ex:
        s = session(model, ex)
        outcome = run_loop(s)
    assert outcome.status == "completed" and not outcome.finalized
    gaps = s.ledger.completion_gaps()
    assert any("failure for validation default" in g for g in gaps)
    assert any("no passing validation after the last write" in g for g in gaps)
    assert all(t.tools_offered > 0 for t in s.transcript.turns)


@requires_containment
def test_a_write_after_a_pass_makes_it_stale_even_with_a_diff(committed_repo: Repo) -> None:
    model = scripted(
        turn(call("workspace_edit", path="calc.py", old="a - b", new="a + b", expect=digest(CALC))),
        turn(call("project_validate", "v1")),
        turn(
            call("workspace_write", path="NOTES.md", content="fixed add\n", expect="must_not_exist")
        ),
        turn(call("git_exec", "d1", args=["diff"])),
        answer("done"),
    )
    with executor(committed_repo.root) as ex:
        s = session(model, ex)
        outcome = run_loop(s)
    assert outcome.status == "completed" and not outcome.finalized
    assert [r.status for r in s.transcript.tools] == ["ok"] * 4
    assert "passed" in s.transcript.tools[1].summary
    # the diff after the write is complete, so only the stale pass keeps tools offered
    assert all(t.tools_offered > 0 for t in s.transcript.turns)
    notes = s.ledger.state.writes[-1]
    assert notes.path == "NOTES.md" and notes.sequence == NOTES_SEQUENCE
    assert s.ledger.completion_gaps() == [
        f"no passing validation after the last write (sequence {NOTES_SEQUENCE})"
    ]
