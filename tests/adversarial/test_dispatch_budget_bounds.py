"""A sub-agent that asks for more than its parent has left gets what is left, no more.

The parent's step budget caps a dispatch's ``max_steps`` (a sub-agent asking for 50 steps
of a parent with 2 left takes 2), and the parent's call budget is what the sub-agent's
executor starts from (a parent that made 3 of its 4 calls leaves its sub-agent 1); the
calls the sub-agent made are then the parent's (its next call finds the budget used up).
The scripted sub-agents here would happily take everything they are given."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.adversarial._dispatch import dispatch_turn, editing, parent
from tests.conformance._agent import answer, call, configuration, scripted, task, turn
from tests.conftest import Repo
from tidegate.agent import AgentSession, Budget, GuardLimits, SessionOptions, run_loop
from tidegate.agent.dispatch import SubAgentDispatch
from tidegate.tools.context import ToolContext, ToolLimits
from tidegate.tools.executor import ToolExecutor
from tidegate.tools.policy import ApprovalProfile, TaskMode
from tidegate.workspace.port import WorkspacePort

READS = [turn(call("workspace_read", f"r{i}", path="calc.py", max_lines=i)) for i in range(1, 9)]
"""Eight model steps of a greedy sub-agent, each one read (none repeats another)."""


def parent_read(call_id: str, lines: int) -> dict[str, Any]:
    return call("workspace_read", call_id, path="README.md", max_lines=lines)


def greedy() -> Any:
    return scripted(*READS, answer("never reached"))


def limited_host(root: Path, max_calls: int) -> ToolExecutor:
    context = ToolContext(
        workspace=WorkspacePort(root),
        mode=TaskMode.PATCH,
        approval_profile=ApprovalProfile.BALANCED,
        network="denied",
        limits=ToolLimits(max_calls=max_calls),
    )
    return ToolExecutor(context)


def test_max_steps_cannot_raise_the_parents_step_budget(committed_repo: Repo) -> None:
    sub_model = greedy()
    tool = SubAgentDispatch(editing(model=sub_model))
    model = scripted(dispatch_turn(max_steps=50), answer("never reached either"))
    with limited_host(committed_repo.root, 100) as ex:
        s = parent(model, ex, tool, phase="AGENT", budget=Budget(max_steps=3))
        outcome = run_loop(s)
    assert s.guards.state.usage.steps == 3, "one parent step and what was left: two"
    assert sub_model.turns_left == len(READS) + 1 - 2
    assert outcome.status == "paused" and outcome.guard == "budget", outcome


def test_max_steps_counts_from_the_steps_already_spent(committed_repo: Repo) -> None:
    sub_model = greedy()
    tool = SubAgentDispatch(editing(model=sub_model))
    model = scripted(
        turn(parent_read("p1", 1)),
        turn(parent_read("p2", 2)),
        dispatch_turn(max_steps=2),
        answer("the parent goes on"),
    )
    with limited_host(committed_repo.root, 100) as ex:
        s = parent(model, ex, tool, phase="AGENT", budget=Budget(max_steps=20))
        assert run_loop(s).status == "completed"
    assert sub_model.turns_left == len(READS) + 1 - 2, "two steps, not two minus the spent"
    assert s.guards.state.usage.steps == 3 + 2 + 1


def test_the_sub_agent_gets_only_the_calls_its_parent_has_left(committed_repo: Repo) -> None:
    sub_model = greedy()
    tool = SubAgentDispatch(editing(model=sub_model))
    model = scripted(
        turn(parent_read("p1", 1), parent_read("p2", 2), parent_read("p3", 3)),
        dispatch_turn(max_steps=3),
        turn(parent_read("p4", 4)),
        answer("done", expect_tool_results=[{"id": "p4", "contains": "remaining budget of 0"}]),
    )
    with limited_host(committed_repo.root, 4) as ex:
        s = parent(model, ex, tool, phase="AGENT", budget=Budget(max_steps=20))
        outcome = run_loop(s)
        assert ex.calls_made == 4, "3 of the parent's, 1 of its sub-agent"
    assert outcome.status == "completed", outcome
    sub: AgentSession = tool.last["session"]  # type: ignore[index]
    assert sub.executor.context.limits.max_calls == 1
    statuses = [(r.call_id, r.status) for r in sub.transcript.tools]
    assert statuses == [("r1", "ok"), ("r2", "refused"), ("r3", "refused")]
    assert all("remaining budget of 0" in r.summary for r in sub.transcript.tools[1:])


def test_a_parent_without_a_call_budget_gives_none(committed_repo: Repo, tmp_path: Path) -> None:
    """The other side of the rule: no budget stays no budget (not zero)."""
    sub_model = scripted(READS[0], answer("read it"))
    tool = SubAgentDispatch(editing(model=sub_model))
    context = ToolContext(
        workspace=WorkspacePort(committed_repo.root),
        mode=TaskMode.PATCH,
        approval_profile=ApprovalProfile.BALANCED,
        network="denied",
    )
    with ToolExecutor(context) as ex:
        s = AgentSession.start(
            model=scripted(dispatch_turn(), answer("ok")),
            executor=ex,
            config=configuration(ex),
            task=task(committed_repo.root),
            options=SessionOptions(phase="AGENT", guard_limits=GuardLimits(), checkpoints=False),
            session_tools=tool.tools(),
        )
        assert run_loop(s).status == "completed"
    sub: AgentSession = tool.last["session"]  # type: ignore[index]
    assert sub.executor.context.limits.max_calls is None
    assert sub_model.turns_left == 0
