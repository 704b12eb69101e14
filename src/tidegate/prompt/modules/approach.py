"""How much exploration and planning the configured complexity calls for."""

from __future__ import annotations

from tidegate.prompt.modules.base import ModuleContext, PromptModule

_BY_COMPLEXITY = {
    "simple": (
        "The task is expected to be small. Look only at what the change needs, make the "
        "focused change, validate it and finish."
    ),
    "standard": (
        "Read the relevant code and its tests before you edit. Make the change, validate "
        "it, review the diff, then finish."
    ),
    "complex": (
        "Split the work into stages and say what each stage is for. When task.checkpoint "
        "is available, record the plan and what is done, so the run can resume without "
        "repeating work. Validate after each stage, not only at the end."
    ),
}


def _render(ctx: ModuleContext) -> str:
    return "# Approach\n" + _BY_COMPLEXITY[ctx.config.complexity]


MODULE = PromptModule(name="approach", version="1.0.0", render=_render)
