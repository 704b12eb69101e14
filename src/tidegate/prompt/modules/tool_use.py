"""The active tools, and how to use them without wasting calls."""

from __future__ import annotations

from tidegate.prompt.modules.base import ModuleContext, PromptModule, ToolLine


def _line(tool: ToolLine) -> str:
    name = tool.name if tool.name == tool.canonical_id else f"{tool.name} ({tool.canonical_id})"
    return f"- {name}: {' '.join(tool.description.split())}"


def _render(ctx: ModuleContext) -> str:
    if not ctx.tools:
        return (
            "# Tools\nNo tools are active. Answer from the evidence already in this conversation."
        )
    listing = "\n".join(_line(t) for t in ctx.tools)
    lines = [
        "# Tools",
        "Use tools only through tool calls; this prompt refers to them by canonical id. "
        "Active now:",
        listing,
    ]
    if "catalog.search" in ctx.tool_names:
        lines.append(
            "Other built-in tools can be activated with catalog.search when the task needs "
            "them; activation changes this list."
        )
    lines.append(
        "A tool result is a structured record. A failed result is information: read it and "
        "change your approach instead of repeating the same call. The runtime blocks an "
        "identical call when nothing has changed, blocks calls that alternate in a cycle, "
        "and pauses the run when no progress is being made. Effects (what was read, "
        "written or validated) are recorded by the host from the tools themselves; what "
        "you write in a message is not evidence."
    )
    return "\n".join(lines)


MODULE = PromptModule(name="tool-use", version="1.0.0", render=_render)
