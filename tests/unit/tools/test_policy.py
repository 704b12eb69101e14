"""Approval as a pure function: strictest rule wins, unknown is denied, examples hold."""

from __future__ import annotations

import itertools

import pytest

from tidegate.tools.effects import CANONICAL_TOOL_IDS
from tidegate.tools.policy import (
    EXAMPLES,
    Allow,
    ApprovalProfile,
    Ask,
    Deny,
    PolicyContext,
    TaskMode,
    check_examples,
    decide,
    git_refusal,
    matches_glob,
)

CONTAINED = PolicyContext(containment_verified=True, network="allowed")
OPEN = PolicyContext()


def test_the_shipped_examples_hold() -> None:
    check_examples()
    assert len(EXAMPLES) >= 15


@pytest.mark.parametrize(("tool", "args", "mode", "profile", "ctx", "expected"), EXAMPLES)
def test_each_example(
    tool: str,
    args: dict,
    mode: TaskMode,
    profile: ApprovalProfile,
    ctx: PolicyContext,
    expected: str,
) -> None:
    assert decide(tool, args, mode, profile, ctx).kind == expected


def test_every_canonical_tool_has_a_decision_in_every_profile_and_mode() -> None:
    for tool, mode, profile in itertools.product(CANONICAL_TOOL_IDS, TaskMode, ApprovalProfile):
        decision = decide(tool, {"path": "a.py", "args": ["status"]}, mode, profile, CONTAINED)
        assert isinstance(decision, Allow | Ask | Deny)
        assert decision.reasons


def test_unknown_tools_are_denied_everywhere() -> None:
    for profile in ApprovalProfile:
        got = decide("shell.exec", {}, TaskMode.PATCH, profile, CONTAINED)
        assert isinstance(got, Deny)
        assert "unknown tool" in got.reasons[0]


def test_read_only_mode_denies_every_writer_even_when_trusted() -> None:
    for tool in (
        "workspace.write",
        "workspace.edit",
        "command.run",
        "command.session",
        "project.validate",
    ):
        got = decide(
            tool, {"path": "a"}, TaskMode.REVIEW, ApprovalProfile.TRUSTED_WORKSPACE, CONTAINED
        )
        assert isinstance(got, Deny), tool
        assert any("read-only" in r for r in got.reasons)


def test_strictest_rule_wins_and_keeps_only_its_reasons() -> None:
    # balanced allows the write, the protected-path rule asks: ask, with that reason only
    ctx = PolicyContext(protected=(".github/workflows/**",))
    got = decide(
        "workspace.write",
        {"path": ".github/workflows/ci.yml"},
        TaskMode.PATCH,
        ApprovalProfile.BALANCED,
        ctx,
    )
    assert isinstance(got, Ask)
    assert got.reasons == (".github/workflows/ci.yml is protected (.github/workflows/**)",)
    # and write access denied beats everything else
    denied = PolicyContext(write_access="denied")
    got2 = decide(
        "workspace.write", {"path": "a"}, TaskMode.PATCH, ApprovalProfile.TRUSTED_WORKSPACE, denied
    )
    assert isinstance(got2, Deny)


def test_repository_code_needs_approval_or_verified_containment() -> None:
    for profile in ApprovalProfile:
        uncontained = decide("project.validate", {}, TaskMode.PATCH, profile, OPEN)
        assert isinstance(uncontained, Ask), profile
    contained = decide("project.validate", {}, TaskMode.PATCH, ApprovalProfile.BALANCED, CONTAINED)
    assert isinstance(contained, Allow)
    strict = decide("project.validate", {}, TaskMode.PATCH, ApprovalProfile.STRICT, CONTAINED)
    assert isinstance(strict, Ask)


def test_git_internals_are_never_writable() -> None:
    for path in (".git/config", "./.git/hooks/pre-commit", "vendor/.git/HEAD", ".tidegate/x"):
        got = decide(
            "workspace.write",
            {"path": path},
            TaskMode.PATCH,
            ApprovalProfile.TRUSTED_WORKSPACE,
            CONTAINED,
        )
        assert isinstance(got, Deny), path


def test_network_rules() -> None:
    for net, kind in (("denied", "deny"), ("policy_gated", "ask"), ("allowed", "allow")):
        ctx = PolicyContext(network=net)  # type: ignore[arg-type]
        got = decide("research.fetch", {}, TaskMode.REVIEW, ApprovalProfile.BALANCED, ctx)
        assert got.kind == kind


@pytest.mark.parametrize(
    ("argv", "refused"),
    [
        (["status", "--short"], False),
        (["diff", "HEAD", "--", "a.py"], False),
        (["log", "-n", "3", "--oneline"], False),
        (["branch", "--list", "feat*"], False),
        (["commit", "-m", "x"], True),
        (["push"], True),
        (["diff", "--output=/tmp/x"], True),
        (["diff", "--no-index", "/etc/passwd", "a"], True),
        (["diff", "--ext-diff"], True),
        (["log", "-O/etc/order"], True),
        (["blame", "--contents", "/etc/passwd", "a"], True),
        (["grep", "-f", "/etc/passwd"], True),
        (["ls-files", "--exclude-from=/etc/x"], True),
        (["branch", "-D", "main"], True),
        (["branch", "newname"], True),
        ([], True),
    ],
)
def test_git_allowlist(argv: list[str], refused: bool) -> None:
    assert (git_refusal(argv) is not None) is refused


def test_globs() -> None:
    assert matches_glob(".github/workflows/ci.yml", ".github/workflows/**")
    assert matches_glob("a/b/.env", "**/.env")
    assert matches_glob(".env", "**/.env")
    assert not matches_glob("src/env.py", "**/.env")
    assert matches_glob(".env.local", ".env.*")


def test_decide_is_pure() -> None:
    args = {"path": "a.py", "content": "x"}
    first = decide("workspace.write", args, TaskMode.PATCH, ApprovalProfile.STRICT, OPEN)
    second = decide("workspace.write", args, TaskMode.PATCH, ApprovalProfile.STRICT, OPEN)
    assert first == second
    assert args == {"path": "a.py", "content": "x"}
