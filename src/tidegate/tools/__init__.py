"""tidegate.tools: the 21 canonical tools, their effect profile, approval and the executor.

- :mod:`.effects`: the effect profile as data (pinned digest) and the Effects a result carries
- :mod:`.catalog`: tool specs, model-facing names, the active registry and its hash
- :mod:`.policy`: approval as a pure function (Allow | Ask | Deny)
- :mod:`.executor` / :mod:`.batch`: validate -> policy -> capture -> dispatch -> capture
- :mod:`.adapters`: one module per tool family; :mod:`.adapters.doubles` the labelled doubles
"""

from tidegate.tools.calls import (
    ApprovalRequest,
    BatchResult,
    ToolCall,
    ToolError,
    ToolOutcomeUnknown,
    ToolResult,
)
from tidegate.tools.catalog import CATALOG, ToolDefinition, ToolRegistry, ToolSpec
from tidegate.tools.context import (
    ApprovalAnswer,
    ApprovalPort,
    CallRecorder,
    ToolContext,
    ToolLimits,
    UserPort,
)
from tidegate.tools.effects import PROFILE, PROFILE_SHA256, PROFILE_VERSION, Effects
from tidegate.tools.executor import ToolExecutor
from tidegate.tools.policy import ApprovalProfile, TaskMode, decide

__all__ = [
    "CATALOG",
    "PROFILE",
    "PROFILE_SHA256",
    "PROFILE_VERSION",
    "ApprovalAnswer",
    "ApprovalPort",
    "ApprovalProfile",
    "ApprovalRequest",
    "BatchResult",
    "CallRecorder",
    "Effects",
    "TaskMode",
    "ToolCall",
    "ToolContext",
    "ToolDefinition",
    "ToolError",
    "ToolExecutor",
    "ToolLimits",
    "ToolOutcomeUnknown",
    "ToolRegistry",
    "ToolResult",
    "ToolSpec",
    "UserPort",
    "decide",
]
