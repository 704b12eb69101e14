"""Matrix 1: a read-only session inspects and reports, and changes nothing.

A review-mode session (read-only task mode, the REVIEW phase's tool set) lists, reads and
greps a real repository and answers. The model is offered only inspection tools; the
inspections are recorded as host evidence; a write the model attempts anyway is refused
before anything runs; every byte, mode and mtime of the work tree and the index is as it
was.
"""

from __future__ import annotations

from tests.conformance._agent import answer, call, executor, scripted, session, turn
from tests.conftest import Repo
from tidegate.agent import READ_ONLY_TOOLS, run_loop
from tidegate.tools.policy import TaskMode


def test_inspect_and_report_changes_nothing(committed_repo: Repo) -> None:
    committed_repo.write("notes.txt", "untracked notes\n")
    before = committed_repo.tree_state(with_mtimes=True)
    model = scripted(
        turn(call("workspace_list", "l1", path=".")),
        turn(
            call("workspace_read", "r1", path="calc.py"),
            call("workspace_grep", "g1", pattern="return"),
        ),
        turn(call("workspace_write", "w1", path="calc.py", content="x", expect="must_not_exist")),
        answer(
            "- error calc.py:2: add() subtracts",
            expect_tool_results=[{"id": "w1", "is_error": True}],
        ),
    )
    with executor(committed_repo.root, mode=TaskMode.REVIEW, validation=None) as ex:
        s = session(model, ex, phase="REVIEW", goal="Review calc.py for bugs.")
        offered = {spec.name for spec in s.tool_specs()}
        outcome = run_loop(s)
    assert outcome.status == "completed"
    assert outcome.text == "- error calc.py:2: add() subtracts"
    assert offered <= {t.replace(".", "_") for t in READ_ONLY_TOOLS}
    assert not offered & {"workspace_write", "workspace_edit", "command_run", "project_validate"}
    assert s.transcript.tool_sequence == ["workspace.list", "workspace.read", "workspace.grep"]
    refused = s.transcript.tools[-1]
    assert refused.name == "workspace_write" and not refused.dispatched
    inspected = [r.effects.get("inspect") for r in s.transcript.tools if r.dispatched]
    assert all(inspected), "every inspection is host-attested evidence"
    assert s.inspections == 3 and not s.ledger.state.writes
    assert committed_repo.tree_state(with_mtimes=True) == before
