"""What counts as verified, and what the final answer must say."""

from __future__ import annotations

from tidegate.prompt.modules.base import ModuleContext, PromptModule

_TEXT = """\
# Verification
A command's exit code or output is not validation. Validation evidence comes from \
project.validate{validate_note}, and a passing result counts only when it ran after your \
last change. Running the same failing validation again on an unchanged workspace gives the \
same failure: change something, or stop and report what blocks you. Before you finish a \
change, look at the final diff (git.exec diff{git_note}) so the user receives exactly what \
you intend.

Your final answer says what changed, which validation ran and its outcome, which \
acceptance criteria the evidence supports, and what remains unverified. Never claim a \
criterion is met without evidence, and never add criteria of your own."""


def _render(ctx: ModuleContext) -> str:
    names = ctx.tool_names
    return _TEXT.format(
        validate_note="" if "project.validate" in names else " (not active now)",
        git_note="" if "git.exec" in names else ", when active",
    )


MODULE = PromptModule(name="verification", version="1.0.0", render=_render)
