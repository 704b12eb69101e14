"""A sub-agent's tool profile: what it may hold, filtered fail-closed for read-only phases.

A dispatched sub-agent starts from a *requested* profile (canonical tool IDs; by default
every canonical tool). In a read-only phase the profile is filtered before the sub-agent's
loop starts: a tool stays only when every capability it holds is one that cannot change a
workspace (:data:`READ_CAPABILITIES`), or when it is the plan-note tool
(``task.checkpoint``, which writes only the host-chosen plan file). Everything else is
removed -- a tool whose capabilities are unknown (not in the effect profile), or that
names a capability this module does not know, counts as a write.

An agent CLI is one opaque tool: what its shell and editor can do is not in any profile,
so it is ``agent-cli:<name>`` with unknown capabilities -- removed in a read-only phase.
Because the CLI cannot be taken apart, that removal is enforced on its run instead: its
work tree is bound read-only under required containment. For approval it counts as the
canonical tools it is equivalent to (:func:`cli_equivalents`).

Pure functions, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import msgspec

from tidegate.tools.effects import CANONICAL_TOOL_IDS, PROFILE

PLAN_NOTE_TOOL = "task.checkpoint"
READ_CAPABILITIES = frozenset({"approval", "inspect", "diff_review", "research"})
"""Capabilities that report on the world without changing a workspace."""
DEFAULT_PROFILE: tuple[str, ...] = CANONICAL_TOOL_IDS
CLI_PREFIX = "agent-cli:"

Capabilities = Callable[[str], frozenset[str] | None]


def profile_capabilities(tool: str) -> frozenset[str] | None:
    """The effect profile's capabilities of ``tool``; None when it has no entry."""
    return PROFILE.get(tool)


class FilteredProfile(msgspec.Struct, frozen=True):
    kept: tuple[str, ...]
    removed: tuple[str, ...]
    """In the order requested; each removed tool with the reason in ``why``."""
    why: tuple[tuple[str, str], ...] = ()


def read_only_profile(
    requested: Iterable[str], capabilities: Capabilities = profile_capabilities
) -> FilteredProfile:
    """Split ``requested`` into the tools a read-only sub-agent keeps and those removed."""
    kept: list[str] = []
    removed: list[tuple[str, str]] = []
    for tool in dict.fromkeys(requested):
        caps = capabilities(tool)
        if tool == PLAN_NOTE_TOOL and caps is not None:
            kept.append(tool)
        elif caps is None:
            removed.append((tool, "unknown capabilities: counted as a write"))
        elif caps - READ_CAPABILITIES:
            extra = ", ".join(sorted(caps - READ_CAPABILITIES))
            removed.append((tool, f"may change state ({extra})"))
        else:
            kept.append(tool)
    return FilteredProfile(tuple(kept), tuple(t for t, _ in removed), tuple(removed))


def cli_tool(name: str) -> str:
    return f"{CLI_PREFIX}{name}"


def cli_equivalents(read_only: bool) -> tuple[str, ...]:
    """The canonical tools an agent CLI's run is judged as for approval.

    Read-only (every dispatch from a model's planning session): nothing. The run is
    forced onto an isolated copy whose tree and git directory are bound read-only, under
    required containment (refused where bubblewrap is unusable), so its shell writes
    nothing of the user's; and its network, which it needs to reach its own model, was
    granted by the user who named the agent with ``--sub-agent NAME``. Judged as a shell
    with network in a read-only, network-denied session, every such dispatch was refused,
    so a model could never hand work to a CLI agent at all.

    Writable: a shell (``command.run``), its model endpoint over the network
    (``research.fetch`` follows the network rule), and file writes."""
    if read_only:
        return ()
    return ("command.run", "research.fetch", "workspace.write")
