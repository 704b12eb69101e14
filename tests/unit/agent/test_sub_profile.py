"""The read-only profile filter is fail-closed, and a sub-agent's tool set is judged by the
same approval rules as the tools themselves."""

from __future__ import annotations

from tidegate.agent.sub_profile import (
    DEFAULT_PROFILE,
    cli_equivalents,
    cli_tool,
    profile_capabilities,
    read_only_profile,
)
from tidegate.tools.effects import CANONICAL_TOOL_IDS, PROFILE
from tidegate.tools.policy import ApprovalProfile, PolicyContext, TaskMode, decide_tools

CONTAINED = PolicyContext(containment_verified=True, network="allowed")
OPEN = PolicyContext(containment_verified=False, network="denied")


def test_every_canonical_tool_that_may_write_is_removed() -> None:
    filtered = read_only_profile(DEFAULT_PROFILE)
    assert set(filtered.kept) == {
        "workspace.read",
        "workspace.list",
        "workspace.glob",
        "workspace.grep",
        "git.exec",
        "project.detect",
        "task.checkpoint",
        "artifact.list",
        "artifact.read",
        "perception.analyze",
        "research.fetch",
        "research.search",
        "user.ask",
    }
    for tool in filtered.removed:
        assert PROFILE[tool] - {"approval", "inspect", "diff_review", "research"}, tool
    assert set(filtered.kept) | set(filtered.removed) == set(CANONICAL_TOOL_IDS)


def test_unknown_tools_and_unknown_capabilities_count_as_writes() -> None:
    declared = {
        "workspace.read": frozenset({"approval", "inspect"}),
        "odd.reader": frozenset({"inspect", "teleport"}),
    }
    filtered = read_only_profile(
        ["workspace.read", "shell.exec", "odd.reader", cli_tool("codex")], declared.get
    )
    assert filtered.kept == ("workspace.read",)
    assert filtered.removed == ("shell.exec", "odd.reader", "agent-cli:codex")
    reasons = dict(filtered.why)
    assert "unknown capabilities" in reasons["shell.exec"]
    assert "teleport" in reasons["odd.reader"]


def test_plan_notes_stay_only_as_the_plan_note_tool() -> None:
    assert read_only_profile(["task.checkpoint"]).kept == ("task.checkpoint",)
    fake_planner = {"plan.writer": frozenset({"approval", "plan", "state_version"})}
    assert read_only_profile(["plan.writer"], fake_planner.get).kept == ()
    assert profile_capabilities("task.checkpoint") == PROFILE["task.checkpoint"]


def test_a_sub_agents_tool_set_takes_the_strictest_verdict() -> None:
    reads = ("workspace.read", "git.exec")
    assert decide_tools(reads, TaskMode.PATCH, ApprovalProfile.BALANCED, OPEN).kind == "allow"
    strict = decide_tools(reads, TaskMode.PATCH, ApprovalProfile.STRICT, OPEN)
    assert strict.kind == "ask" and any("git.exec" in r for r in strict.reasons)
    writers = ("workspace.read", "workspace.write", "command.run")
    assert (
        decide_tools(writers, TaskMode.REVIEW, ApprovalProfile.TRUSTED_WORKSPACE, CONTAINED).kind
        == "deny"
    )
    assert decide_tools(writers, TaskMode.PATCH, ApprovalProfile.BALANCED, OPEN).kind == "ask"
    assert (
        decide_tools(writers, TaskMode.PATCH, ApprovalProfile.BALANCED, CONTAINED).kind == "allow"
    )
    assert (
        decide_tools(
            ("no.such",), TaskMode.PATCH, ApprovalProfile.TRUSTED_WORKSPACE, CONTAINED
        ).kind
        == "deny"
    )
    assert decide_tools((), TaskMode.REVIEW, ApprovalProfile.STRICT, OPEN).kind == "allow"


def test_a_writable_agent_cli_is_judged_as_a_shell_with_network() -> None:
    assert cli_equivalents(read_only=False) == ("command.run", "research.fetch", "workspace.write")
    no_network = PolicyContext(containment_verified=True, network="denied")
    verdict = decide_tools(
        cli_equivalents(False), TaskMode.PATCH, ApprovalProfile.BALANCED, no_network
    )
    assert verdict.kind == "deny" and any("network" in r for r in verdict.reasons)


def test_a_read_only_agent_cli_is_not_refused_in_a_models_read_only_session() -> None:
    # The model's planning session: review mode, writes and network denied. A read-only
    # CLI run (isolated copy, tree bound read-only, containment required) the user named
    # with --sub-agent must be dispatchable there.
    session = PolicyContext(containment_verified=True, network="denied", write_access="denied")
    verdict = decide_tools(
        cli_equivalents(True), TaskMode.REVIEW, ApprovalProfile.BALANCED, session
    )
    assert verdict.kind == "allow"
