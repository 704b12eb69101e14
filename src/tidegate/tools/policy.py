"""Approval: a pure function from a call to Allow, Ask or Deny, with the reasons.

``decide(tool, args, mode, profile, context)`` evaluates every rule below and keeps the
strictest verdict (Deny over Ask over Allow); the reasons are those of the rules that
reached that verdict. A tool no baseline names is denied. Nothing here performs I/O: the
context carries the facts (is containment verified? which paths are protected?).

Rules:

``baseline``       the profile's default for the tool (strict asks before any mutation or
                   command; balanced asks before network use and previews;
                   trusted-workspace allows everything the other rules allow)
``mode``           read-only task modes deny every tool that may write
``write-access``   the run's write access: denied -> deny writers, policy_gated -> ask
``protected``      writing ``.git``/``.tidegate`` is denied; other protected paths ask.
                   Both the spelled path and the one it resolves to (symlinked
                   directories followed, given by the executor) are checked
``executable``     repository code (command.run, command.session, project.validate) runs
                   only with approval or under verified containment
``network``        research and previews: network denied -> deny, policy_gated -> ask
``git-readonly``   git.exec runs only what ``git_allowlist`` parses and accepts; under
                   strict without verified containment it asks

The module checks a table of examples against ``decide`` the first time it is used, so
a rule change that breaks an expectation fails loudly rather than silently.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from enum import StrEnum
from functools import cache
from typing import Any, Literal

import msgspec

from tidegate.tools.git_allowlist import Refused, canonical


class TaskMode(StrEnum):
    """What the task may do. Read-only modes expose no tool that may write."""

    PATCH = "patch"
    DEBUG = "debug"
    REVIEW = "review"

    @property
    def read_only(self) -> bool:
        return self is TaskMode.REVIEW


class ApprovalProfile(StrEnum):
    STRICT = "strict"
    BALANCED = "balanced"
    TRUSTED_WORKSPACE = "trusted-workspace"


NetworkAccess = Literal["allowed", "denied", "policy_gated"]
WriteAccess = Literal["allowed", "denied", "policy_gated"]


class Allow(msgspec.Struct, frozen=True):
    reasons: tuple[str, ...] = ()
    kind: Literal["allow"] = "allow"


class Ask(msgspec.Struct, frozen=True):
    reasons: tuple[str, ...] = ()
    kind: Literal["ask"] = "ask"


class Deny(msgspec.Struct, frozen=True):
    reasons: tuple[str, ...] = ()
    kind: Literal["deny"] = "deny"


Decision = Allow | Ask | Deny
_RANK = {"allow": 0, "ask": 1, "deny": 2}

ALWAYS_DENIED_PATHS = (".git", ".git/**", ".tidegate", ".tidegate/**", "**/.git", "**/.git/**")


class PolicyContext(msgspec.Struct, frozen=True):
    """The facts the rules need, gathered by the executor before it decides."""

    containment_verified: bool = False
    network: NetworkAccess = "policy_gated"
    write_access: WriteAccess = "allowed"
    protected: tuple[str, ...] = ()
    """Globs (``*`` within a segment, ``**`` across) of paths writes must ask for."""


# --- baselines ------------------------------------------------------------------------

_READ = ("allow", "allow", "allow")
_BASELINE: Mapping[str, tuple[str, str, str]] = {
    # tool: (strict, balanced, trusted-workspace)
    "artifact.create": _READ,
    "artifact.list": _READ,
    "artifact.read": _READ,
    "catalog.search": _READ,
    "command.run": ("ask", "allow", "allow"),
    "command.session": ("ask", "allow", "allow"),
    "git.exec": _READ,
    "perception.analyze": _READ,
    "preview.manage": ("ask", "ask", "allow"),
    "project.detect": _READ,
    "project.validate": ("ask", "allow", "allow"),
    "research.fetch": ("ask", "allow", "allow"),
    "research.search": ("ask", "allow", "allow"),
    "task.checkpoint": _READ,
    "user.ask": _READ,
    "workspace.edit": ("ask", "allow", "allow"),
    "workspace.glob": _READ,
    "workspace.grep": _READ,
    "workspace.list": _READ,
    "workspace.read": _READ,
    "workspace.write": ("ask", "allow", "allow"),
}
_PROFILE_INDEX = {
    ApprovalProfile.STRICT: 0,
    ApprovalProfile.BALANCED: 1,
    ApprovalProfile.TRUSTED_WORKSPACE: 2,
}

WRITERS = frozenset(
    {"workspace.write", "workspace.edit", "command.run", "command.session", "project.validate"}
)
PATH_WRITERS = frozenset({"workspace.write", "workspace.edit"})
EXECUTABLE = frozenset({"command.run", "command.session", "project.validate"})
NETWORKED = frozenset({"research.fetch", "research.search", "preview.manage"})


def git_refusal(argv: Sequence[str]) -> str | None:
    """Why ``git *argv`` is not a call git.exec may make; None when it is. The allowlist,
    its parser and the argv that actually runs are ``tidegate.tools.git_allowlist``'s."""
    verdict = canonical(argv)
    return verdict.reason if isinstance(verdict, Refused) else None


def _baseline(tool: str, profile: ApprovalProfile) -> Decision | None:
    row = _BASELINE.get(tool)
    if row is None:
        return None
    verdict = row[_PROFILE_INDEX[profile]]
    why = f"{profile.value} profile: {tool} {'is allowed' if verdict == 'allow' else 'needs approval'}"
    return Allow((why,)) if verdict == "allow" else Ask((why,))


def _mode(tool: str, mode: TaskMode) -> Decision | None:
    if mode.read_only and tool in WRITERS:
        return Deny((f"{mode.value} mode is read-only: {tool} may write",))
    return None


def _write_access(tool: str, ctx: PolicyContext) -> Decision | None:
    if tool not in WRITERS:
        return None
    if ctx.write_access == "denied":
        return Deny((f"write access is denied for this run: {tool} may write",))
    if ctx.write_access == "policy_gated":
        return Ask((f"write access is policy-gated: {tool} may write",))
    return None


def matches_glob(path: str, pattern: str) -> bool:
    """``*`` matches within one segment, ``**`` any number of segments."""
    parts = path.strip("/").split("/")
    pats = pattern.strip("/").split("/")
    return _match(parts, pats)


def _match(parts: list[str], pats: list[str]) -> bool:
    if not pats:
        return not parts
    if pats[0] == "**":
        return any(_match(parts[i:], pats[1:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], pats[0]) and _match(parts[1:], pats[1:])


def _normal(path: str) -> str:
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    return "/".join(parts)


def _protected(
    tool: str, args: Mapping[str, Any], ctx: PolicyContext, resolved: str | None
) -> Decision | None:
    if tool not in PATH_WRITERS or not isinstance(args.get("path"), str):
        return None
    spelled = _normal(args["path"])
    forms = [spelled] + ([resolved] if resolved is not None and resolved != spelled else [])
    for path in forms:
        shown = path if path == spelled else f"{spelled} (which resolves to {path})"
        if any(matches_glob(path.lower(), g) for g in ALWAYS_DENIED_PATHS):
            return Deny((f"{shown} is inside .git or .tidegate, which tools never write",))
    for path in forms:
        shown = path if path == spelled else f"{spelled} (which resolves to {path})"
        hit = next((g for g in ctx.protected if matches_glob(path, g)), None)
        if hit is not None:
            return Ask((f"{shown} is protected ({hit})",))
    return None


def _executable(tool: str, ctx: PolicyContext) -> Decision | None:
    if tool not in EXECUTABLE:
        return None
    if ctx.containment_verified:
        return Allow((f"{tool} runs under verified containment",))
    return Ask((f"{tool} runs repository code without verified containment",))


def _network(tool: str, ctx: PolicyContext) -> Decision | None:
    if tool not in NETWORKED:
        return None
    if ctx.network == "denied":
        return Deny((f"network access is denied: {tool} needs it",))
    if ctx.network == "policy_gated":
        return Ask((f"network access is policy-gated: {tool} needs it",))
    return None


def _git(
    tool: str, args: Mapping[str, Any], profile: ApprovalProfile, ctx: PolicyContext
) -> Decision | None:
    if tool != "git.exec":
        return None
    argv = args.get("args")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        return Deny(("git.exec needs a list of string arguments",))
    refusal = git_refusal(argv)
    if refusal is not None:
        return Deny((refusal,))
    if profile is ApprovalProfile.STRICT and not ctx.containment_verified:
        # strict asks before any program runs on the host that nothing but a parser bounds
        return Ask(("strict profile: git.exec runs uncontained (only the allowlist holds)",))
    return None


def decide(
    tool: str,
    args: Mapping[str, Any],
    mode: TaskMode,
    profile: ApprovalProfile,
    context: PolicyContext,
    resolved: str | None = None,
) -> Decision:
    """The approval decision for one call: the strictest verdict of every rule.

    ``resolved`` is where a path-writing call's ``path`` lands once symlinked directories
    are followed (the executor asks the workspace port); the path rules judge both."""
    baseline = _baseline(tool, profile)
    if baseline is None:
        return Deny((f"unknown tool {tool}: no policy",))
    verdicts = [
        baseline,
        _mode(tool, mode),
        _write_access(tool, context),
        _protected(tool, args, context, resolved),
        _executable(tool, context),
        _network(tool, context),
        _git(tool, args, profile, context),
    ]
    found = [v for v in verdicts if v is not None]
    worst = max(_RANK[v.kind] for v in found)
    reasons = tuple(r for v in found if _RANK[v.kind] == worst for r in v.reasons)
    if worst == 2:
        return Deny(reasons)
    if worst == 1:
        return Ask(reasons)
    return Allow(reasons)


def decide_tools(
    tools: Sequence[str], mode: TaskMode, profile: ApprovalProfile, context: PolicyContext
) -> Decision:
    """The strictest argument-independent verdict over ``tools``: what handing a sub-agent
    that tool set asks for (``agent.dispatch``). Every rule that judges a tool rather than
    its arguments is applied -- baseline, mode, write access, executable, network, and
    git.exec's strict-and-uncontained ask; the per-call rules (protected paths, the git
    allowlist) still judge each of the sub-agent's own calls. An unknown tool is denied.
    An empty set is allowed."""
    found: list[Decision] = [Allow(("no tools",))] if not tools else []
    for tool in tools:
        baseline = _baseline(tool, profile)
        if baseline is None:
            found.append(Deny((f"unknown tool {tool}: no policy",)))
            continue
        found += [
            v
            for v in (
                baseline,
                _mode(tool, mode),
                _write_access(tool, context),
                _executable(tool, context),
                _network(tool, context),
                _git(tool, {"args": ["status"]}, profile, context),
            )
            if v is not None
        ]
    worst = max(_RANK[v.kind] for v in found)
    reasons = tuple(dict.fromkeys(r for v in found if _RANK[v.kind] == worst for r in v.reasons))
    if worst == 2:
        return Deny(reasons)
    if worst == 1:
        return Ask(reasons)
    return Allow(reasons)


# --- examples checked when the policy is first used -------------------------------------

_CONTAINED = PolicyContext(containment_verified=True, network="allowed")
_OPEN = PolicyContext(containment_verified=False, network="policy_gated")
S, B, T = ApprovalProfile.STRICT, ApprovalProfile.BALANCED, ApprovalProfile.TRUSTED_WORKSPACE
P, R = TaskMode.PATCH, TaskMode.REVIEW

EXAMPLES: tuple[tuple[str, dict[str, Any], TaskMode, ApprovalProfile, PolicyContext, str], ...] = (
    ("workspace.read", {"path": "a.py"}, R, S, _OPEN, "allow"),
    ("workspace.write", {"path": "a.py"}, P, B, _OPEN, "allow"),
    ("workspace.write", {"path": "a.py"}, P, S, _OPEN, "ask"),
    ("workspace.write", {"path": "a.py"}, R, T, _CONTAINED, "deny"),
    ("workspace.write", {"path": ".git/config"}, P, T, _CONTAINED, "deny"),
    ("workspace.edit", {"path": "sub/.git/HEAD"}, P, T, _CONTAINED, "deny"),
    ("command.run", {"command": "make"}, P, B, _CONTAINED, "allow"),
    ("command.run", {"command": "make"}, P, T, _OPEN, "ask"),
    ("project.validate", {}, P, T, _OPEN, "ask"),
    ("project.validate", {}, P, B, _CONTAINED, "allow"),
    ("project.validate", {}, R, T, _CONTAINED, "deny"),
    ("research.search", {"query": "x"}, R, B, PolicyContext(network="denied"), "deny"),
    ("research.search", {"query": "x"}, R, T, _OPEN, "ask"),
    ("git.exec", {"args": ["diff"]}, R, S, _CONTAINED, "allow"),
    ("git.exec", {"args": ["diff"]}, R, S, _OPEN, "ask"),
    ("git.exec", {"args": ["diff"]}, R, B, _OPEN, "allow"),
    ("git.exec", {"args": ["grep", "-iO/bin/sh", "x"]}, R, T, _CONTAINED, "deny"),
    ("git.exec", {"args": ["grep", "--open=sh", "x"]}, R, T, _CONTAINED, "deny"),
    ("git.exec", {"args": ["blame", "--cont=/etc/passwd", "a"]}, R, T, _CONTAINED, "deny"),
    ("git.exec", {"args": ["log", "--", "-x"]}, R, S, _CONTAINED, "allow"),
    ("git.exec", {"args": ["log", "-x"]}, R, T, _CONTAINED, "deny"),
    ("git.exec", {"args": ["push"]}, P, T, _CONTAINED, "deny"),
    ("git.exec", {"args": ["diff", "--output=x"]}, P, T, _CONTAINED, "deny"),
    ("git.exec", {"args": ["branch", "new-name"]}, P, T, _CONTAINED, "deny"),
    ("no.such.tool", {}, P, T, _CONTAINED, "deny"),
)


@cache
def check_examples() -> None:
    """Raise AssertionError naming the first example ``decide`` disagrees with."""
    for tool, args, mode, profile, ctx, expected in EXAMPLES:
        got = decide(tool, args, mode, profile, ctx).kind
        if got != expected:
            raise AssertionError(
                f"approval policy example failed: {tool} {args} in {mode.value}/"
                f"{profile.value}: expected {expected}, got {got}"
            )
