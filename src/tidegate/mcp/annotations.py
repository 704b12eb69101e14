"""MCP tool annotations, derived from what the tool catalog already declares.

A client (Codex, Claude Code) decides from ``readOnlyHint`` and ``destructiveHint`` whether
to ask before a call; without them every tool reads as destructive. Nothing here is a
second table of tools: each hint is read from the facts the executor itself acts on --

- the effect profile's capabilities (``ToolSpec.capabilities``): ``write`` (the host may
  attest a changed workspace path), ``state_version`` and ``plan`` (durable state the call
  advances: an artifact, a task checkpoint, an activation);
- the approval policy's sets: ``EXECUTABLE`` (the tool runs repository code: a command, a
  session, the validation command) and ``NETWORKED`` (research, previews);
- ``ToolSpec.capture``: ``target_path`` is a write to the one path named in the arguments,
  preconditioned on its sha256 (``expect``), so repeating the call changes nothing more;
- the session's containment: a command run under verified containment without network
  access cannot reach the outside world.

The hints, per tool:

``readOnlyHint``     no write, no durable state, runs nothing
``destructiveHint``  may change or delete an existing workspace file (``write``, or runs code)
``idempotentHint``   read-only, or a preconditioned single-path write
``openWorldHint``    networked, or runs code that may reach the network
"""

from __future__ import annotations

import msgspec
from mcp_types import ToolAnnotations

from tidegate.tools.catalog import ToolSpec
from tidegate.tools.policy import EXECUTABLE, NETWORKED, PolicyContext

_STATEFUL = frozenset({"write", "state_version", "plan"})


class Traits(msgspec.Struct, frozen=True):
    """What a tool does, as the hints need it."""

    writes: bool
    """May change a workspace file (create, replace, delete)."""
    keeps_state: bool
    """Advances durable state outside the workspace (artifacts, checkpoints, the registry)."""
    runs_code: bool
    """Runs a command or the repository's own code."""
    networked: bool
    """Reaches the network itself."""
    preconditioned: bool = False
    """A single-path write refused unless the path is still in the state the caller read."""


def traits(spec: ToolSpec) -> Traits:
    """A catalog tool's traits, from its profile capabilities, the policy's sets and how
    the executor captures its effects."""
    caps = spec.capabilities
    return Traits(
        writes="write" in caps,
        keeps_state=bool(caps & _STATEFUL),
        runs_code=spec.tool_id in EXECUTABLE,
        networked=spec.tool_id in NETWORKED,
        preconditioned=spec.capture == "target_path",
    )


def hints(tool: Traits, policy: PolicyContext, title: str | None = None) -> ToolAnnotations:
    """The MCP hints for a tool with ``tool``'s traits in a session under ``policy``."""
    read_only = not (tool.writes or tool.keeps_state or tool.runs_code)
    sealed = policy.containment_verified and policy.network != "allowed"
    return ToolAnnotations(
        title=title,
        read_only_hint=read_only,
        destructive_hint=tool.writes or tool.runs_code,
        idempotent_hint=read_only or (tool.preconditioned and not tool.runs_code),
        open_world_hint=tool.networked or (tool.runs_code and not sealed),
    )
