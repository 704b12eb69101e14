"""What a prompt module is, and what it is rendered from.

A module is one named, versioned piece of policy text. Its version changes whenever its
text (or the way it is rendered from the configuration) changes; the test that pins each
module's rendered digest fails until the version is bumped, so a snapshot's module versions
always say which words the model saw.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from tidegate.prompt.contract import PromptConfiguration

COMMAND_TOOLS = frozenset({"command.run", "command.session"})
"""Tools that run commands through the published interpreter."""
EDIT_TOOLS = frozenset({"workspace.edit", "workspace.write"})
RESEARCH_TOOLS = frozenset({"research.search", "research.fetch"})


class ToolLine(msgspec.Struct, frozen=True):
    """An active tool as the prompt lists it: the name the model calls it by, and its
    canonical id (the name policy text uses)."""

    name: str
    canonical_id: str
    description: str


class ModuleContext(msgspec.Struct, frozen=True):
    """Everything a module may render from: the configuration and the active tools."""

    config: PromptConfiguration
    tools: tuple[ToolLine, ...]

    @property
    def tool_names(self) -> frozenset[str]:
        return frozenset(t.canonical_id for t in self.tools)

    def has_any(self, names: frozenset[str]) -> bool:
        return not self.tool_names.isdisjoint(names)


class PromptModule(msgspec.Struct, frozen=True):
    name: str
    version: str
    render: Callable[[ModuleContext], str | None]
    """The module's text for this context, or None when it does not apply."""
    cache_safe: bool = True
    """False for per-run content that must not feed provider cache keys."""


def fenced(kind: str, label: str, digest: str, body: str) -> str:
    """Quote ``body`` between markers that carry its digest, so text inside it cannot fake
    the end of the block."""
    short = digest.removeprefix("sha256:")[:16]
    return f"<<<{kind} {label} {short}>>>\n{body.rstrip()}\n<<<end {kind} {short}>>>"
