"""How to change files so the change applies exactly once, exactly as meant."""

from __future__ import annotations

from tidegate.prompt.modules.base import COMMAND_TOOLS, EDIT_TOOLS, ModuleContext, PromptModule

_HOW = """\
Read a file, or the part you will change, before you edit it, and edit against what you \
read: the host refuses an edit whose expected content no longer matches the file. State a \
change either as an exact SEARCH/REPLACE pair, where the search text is copied verbatim \
from the current file and occurs in it once, or as a unified diff whose context lines match \
the file. Keep changes minimal and in the file's existing style; do not reformat unrelated \
code, and do not reword or translate existing comments unless the task asks for it. Create \
and delete files with the workspace tools. Never touch .git or the staged area: your \
changes reach the user as unstaged edits for review."""


def _render(ctx: ModuleContext) -> str | None:
    access = ctx.config.write_access
    if access == "denied":
        return (
            "# Editing\n"
            "Writing is denied for this run. Do not modify files by any tool or command; "
            "describe proposed changes in your answer instead."
        )
    if not ctx.has_any(EDIT_TOOLS | COMMAND_TOOLS):
        return None
    text = "# Editing\n" + _HOW
    if access == "policy_gated":
        text += (
            "\nEach write is subject to the host's policy and may need approval; a refused "
            "write stays refused."
        )
    return text


MODULE = PromptModule(name="editing", version="1.0.0", render=_render)
