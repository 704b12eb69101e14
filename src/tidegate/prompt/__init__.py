"""The runtime-owned prompt: structured configuration in, a hashed system prompt out.

Hosts supply :class:`PromptConfiguration` (never prompt text); :func:`assemble_prompt`
builds the immutable :class:`PromptSnapshot`; :func:`format_user_task` is the one formatter
of the user's task; :func:`check_resume` compares the hashes a checkpoint recorded.
"""

from tidegate.prompt.assemble import (
    PROMPT_VERSION,
    PromptSection,
    PromptSnapshot,
    TokenEstimate,
    ToolDescriptor,
    assemble_prompt,
    estimate_tokens,
    reassemble,
    require_command_environment,
)
from tidegate.prompt.contract import (
    CommandEnvironment,
    HostEnvironment,
    PromptConfiguration,
    PromptConfigurationError,
    TrustedInstruction,
    load_prompt_configuration,
)
from tidegate.prompt.resume import (
    PromptHashes,
    ResumeIncompatible,
    check_resume,
    require_resume_compatible,
)
from tidegate.prompt.task import (
    AcceptanceCriterion,
    AgentRunRequest,
    RunTask,
    TaskContract,
    format_user_task,
    load_run_request,
)

__all__ = [
    "PROMPT_VERSION",
    "AcceptanceCriterion",
    "AgentRunRequest",
    "CommandEnvironment",
    "HostEnvironment",
    "PromptConfiguration",
    "PromptConfigurationError",
    "PromptHashes",
    "PromptSection",
    "PromptSnapshot",
    "ResumeIncompatible",
    "RunTask",
    "TaskContract",
    "TokenEstimate",
    "ToolDescriptor",
    "TrustedInstruction",
    "assemble_prompt",
    "check_resume",
    "estimate_tokens",
    "format_user_task",
    "load_prompt_configuration",
    "load_run_request",
    "reassemble",
    "require_command_environment",
    "require_resume_compatible",
]
