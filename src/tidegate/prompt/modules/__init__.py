"""The versioned prompt modules, in the order they appear in the system prompt.

Cache-safe modules come first so a provider's prefix cache covers them; per-run content
(the untrusted workspace state) comes last.
"""

from __future__ import annotations

from tidegate.prompt.modules import (
    approach,
    approval,
    editing,
    host_environment,
    identity,
    research,
    safety,
    tool_use,
    trusted_instructions,
    verification,
    workspace_state,
)
from tidegate.prompt.modules.base import (
    COMMAND_TOOLS,
    ModuleContext,
    PromptModule,
    ToolLine,
)

MODULES: tuple[PromptModule, ...] = (
    identity.MODULE,
    approach.MODULE,
    safety.MODULE,
    approval.MODULE,
    host_environment.MODULE,
    tool_use.MODULE,
    editing.MODULE,
    verification.MODULE,
    research.MODULE,
    trusted_instructions.MODULE,
    workspace_state.MODULE,
)

__all__ = ["COMMAND_TOOLS", "MODULES", "ModuleContext", "PromptModule", "ToolLine"]
