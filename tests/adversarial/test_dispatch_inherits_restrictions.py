"""A sub-agent is never freer than its parent: dispatching cannot shed a restriction. Its
executor has the parent's approval profile, network, containment, write access, grants,
approver, protected paths, validation command, cancellation and deadline, and its guards
the parent's limits; the only things of its own are its copy, its scratch and (when the
parent's phase or mode is read-only, or the parent may not write) a read-only profile. A
parent that may not write -- even in a writing phase and mode -- gets a read-only
sub-agent."""

from __future__ import annotations

import time
from decimal import Decimal
from pathlib import Path

from tests.adversarial._dispatch import EDITING, dispatch_turn
from tests.conformance._agent import PRICE, answer, call, configuration, scripted, task, turn
from tests.conftest import Repo
from tidegate.agent import AgentSession, Budget, GuardLimits, SessionOptions, run_loop
from tidegate.agent.dispatch import SubAgentDispatch
from tidegate.agent.sub_settings import DispatchSettings
from tidegate.tools.context import ToolContext
from tidegate.tools.executor import ToolExecutor
from tidegate.tools.policy import ApprovalProfile, TaskMode
from tidegate.tools.scripted import ScriptedApprover
from tidegate.workspace.port import WorkspacePort

LIMITS = GuardLimits(
    budget=Budget(
        max_steps=40, max_tokens=900_000, max_wall_seconds=600.0, max_dollars=Decimal("1000")
    )
)


def restricted(root: Path, **overrides: object) -> ToolContext:
    fields: dict[str, object] = {
        "workspace": WorkspacePort(root),
        "mode": TaskMode.PATCH,
        "approval_profile": ApprovalProfile.STRICT,
        "network": "denied",
        "write_access": "policy_gated",
        "containment": "required",
        "approver": ScriptedApprover({"agent.dispatch": "grant"}),
        "grants": frozenset({"apr_000000000000000000000001"}),
        "deadline": time.monotonic() + 900,
        "validation_command": "python3 -c 'print(1)'",
        "protected": ("secrets/**", "deploy/*.pem"),
        **overrides,
    }
    return ToolContext(**fields)  # type: ignore[arg-type]


def run(
    root: Path, context: ToolContext, sub_model: object
) -> tuple[AgentSession, SubAgentDispatch]:
    tool = SubAgentDispatch(DispatchSettings(model=sub_model, pricing=PRICE, profile=EDITING))  # type: ignore[arg-type]
    with ToolExecutor(context) as ex:
        s = AgentSession.start(
            model=scripted(dispatch_turn(), answer("ok")),
            executor=ex,
            config=configuration(ex),
            task=task(root),
            options=SessionOptions(phase="AGENT", guard_limits=LIMITS, checkpoints=False),
            session_tools=tool.tools(),
            pricing=PRICE,
        )
        run_loop(s)
    return s, tool


def test_every_restriction_of_the_parent_holds_for_its_sub_agent(committed_repo: Repo) -> None:
    parent_ctx = restricted(committed_repo.root)
    parent, tool = run(committed_repo.root, parent_ctx, scripted(answer("nothing to do")))
    sub: AgentSession = tool.last["session"]  # type: ignore[index]
    ctx = sub.executor.context
    assert ctx.root != parent_ctx.root, "its own copy"
    for name in (
        "mode", "approval_profile", "network", "write_access", "containment", "approver",
        "grants", "deadline", "validation_command", "protected", "cancel",
    ):  # fmt: skip
        assert getattr(ctx, name) == getattr(parent_ctx, name), name
    assert ctx.cancel is parent_ctx.cancel, "cancelling the parent cancels its sub-agent"
    assert sub.guards.limits.budget == LIMITS.budget
    assert sub.guards.state.usage is parent.guards.state.usage


def test_a_parent_that_may_not_write_gets_a_read_only_sub_agent(
    committed_repo: Repo, tmp_path: Path
) -> None:
    """Not a read-only phase, not a read-only mode: write access alone is denied."""
    sub_model = scripted(
        turn(
            call("workspace_write", "w1", path="pwned.txt", content="x\n", expect="must_not_exist")
        ),
        answer("tried"),
    )
    context = restricted(
        committed_repo.root,
        approval_profile=ApprovalProfile.BALANCED,
        write_access="denied",
        containment="auto",
        approver=None,
        grants=frozenset(),
    )
    _, tool = run(committed_repo.root, context, sub_model)
    assert tool.last is not None and tool.last["read_only"] is True
    sub: AgentSession = tool.last["session"]
    assert sub.executor.context.write_access == "denied"
    assert sub.options.dry_run
    assert not {"workspace.write", "workspace.edit"} & set(sub.executor.registry.available)
    assert not any(w for w in sub.ledger.state.writes)
    assert not (committed_repo.root / "pwned.txt").exists()
