"""Matrix 48: finalization turns expose no tools and refuse tool calls without dispatch,
yet inspect-then-edit and multi-step review sessions are not stopped early.

Evidence-ready mutation: after a real edit, a passing validation and a complete diff,
the next request (through the real Anthropic SDK, to a loopback server) carries no tool
definitions; the model calls a tool anyway and the call is refused without running. In a
review session, repeating a call once the evidence suffices turns into the same tool-free
finalization. A session that reads several files before editing, and a review that reads,
lists and searches, are offered tools on every turn until they answer on their own.
"""

from __future__ import annotations

import json

from tests.conformance._agent import (
    Loopback,
    answer,
    call,
    digest,
    executor,
    loopback_fixture,  # noqa: F401
    scripted,
    session,
    turn,
)
from tests.conftest import CALC, Repo, requires_containment
from tests.integration.models.servers import Reply, an_stream
from tidegate.agent import run_loop
from tidegate.tools.policy import TaskMode

FIXED = CALC.replace("a - b", "a + b")


def tool(tid: str, name: str, args: dict[str, object]) -> Reply:
    return Reply(sse=an_stream(tools=[(tid, name, [json.dumps(args)])], stop="tool_use"))


@requires_containment
def test_evidence_ready_turn_has_no_tools_over_http(
    committed_repo: Repo, loopback: Loopback
) -> None:
    edit = {"path": "calc.py", "old": "a - b", "new": "a + b", "expect": digest(CALC)}
    server, model = loopback(
        "anthropic",
        tool("t1", "workspace_edit", edit),
        tool("t2", "project_validate", {}),
        tool("t3", "git_exec", {"args": ["diff"]}),
        tool("t4", "workspace_edit", {**edit, "expect": digest(FIXED)}),
        Reply(sse=an_stream(text=["add() fixed and verified."])),
    )
    with executor(committed_repo.root) as ex:
        s = session(model, ex)
        outcome = run_loop(s)
    assert outcome.status == "completed" and outcome.finalized
    bodies = [r.json() for r in server.received]
    assert [bool(b.get("tools")) for b in bodies] == [True, True, True, False, False]
    assert s.transcript.tool_sequence == ["workspace.edit", "project.validate", "git.exec"]
    rejected = s.transcript.tools[-1]
    assert rejected.status == "rejected" and not rejected.dispatched
    assert committed_repo.read("calc.py") == FIXED
    last = json.dumps(bodies[-1]["messages"][-1])
    assert "not run" in last and "t4" in last


def test_an_evidence_complete_review_finalizes_on_repetition(committed_repo: Repo) -> None:
    read = call("workspace_read", path="calc.py")
    model = scripted(
        turn(read),
        turn({**read, "id": "again"}),
        turn(call("workspace_grep", pattern="x")),
        answer("- error calc.py:2: add() subtracts"),
    )
    with executor(committed_repo.root, mode=TaskMode.REVIEW) as ex:
        s = session(model, ex, phase="REVIEW")
        outcome = run_loop(s)
    assert outcome.status == "completed" and outcome.finalized
    assert s.transcript.tool_sequence == ["workspace.read"]
    assert [t.tools_offered > 0 for t in s.transcript.turns] == [True, True, False, False]
    assert [r.status for r in s.transcript.tools][1:] == ["not-run", "rejected"]


@requires_containment
def test_inspect_then_edit_is_not_stopped_early(committed_repo: Repo) -> None:
    model = scripted(
        turn(call("workspace_list", path=".")),
        turn(call("workspace_read", path="README.md")),
        turn(call("workspace_read", path="calc.py")),
        turn(call("workspace_grep", pattern="add")),
        turn(call("workspace_edit", path="calc.py", old="a - b", new="a + b", expect=digest(CALC))),
        turn(call("project_validate")),
        turn(call("git_exec", args=["diff"])),
        answer("done"),
    )
    with executor(committed_repo.root) as ex:
        s = session(model, ex)
        outcome = run_loop(s)
    assert outcome.status == "completed"
    assert len(s.transcript.tool_sequence) == 7
    assert [t.tools_offered > 0 for t in s.transcript.turns] == [True] * 7 + [False]


def test_a_multi_step_review_is_not_stopped_early(committed_repo: Repo) -> None:
    model = scripted(
        turn(call("workspace_list", path=".")),
        turn(call("workspace_read", path="calc.py")),
        turn(call("workspace_grep", pattern="return")),
        turn(call("workspace_read", path="README.md")),
        turn(call("git_exec", args=["log", "--oneline"])),
        answer("- info README.md:1: fine"),
    )
    with executor(committed_repo.root, mode=TaskMode.REVIEW) as ex:
        s = session(model, ex, phase="REVIEW")
        outcome = run_loop(s)
    assert outcome.status == "completed" and not outcome.finalized
    assert len(s.transcript.tool_sequence) == 5
    assert all(t.tools_offered > 0 for t in s.transcript.turns)
