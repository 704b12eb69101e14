"""What a session's prompt states about the host and the model it runs on."""

from __future__ import annotations

import platform

from tidegate.models.ports import ModelPort
from tidegate.prompt import HostEnvironment, PromptConfiguration


def model_facts(model: ModelPort) -> tuple[dict[str, object], dict[str, object]]:
    """(identity, capabilities) of a model as the prompt records them."""
    i = model.identity
    identity = {
        "provider": i.provider,
        "model": i.model,
        "endpoint": i.endpoint,
        "revision": i.revision,
        "contract_double": i.contract_double,
        "probed_at": i.probed_at,
    }
    capabilities = {
        "context_window": i.context_window,
        "max_output_tokens": i.max_output_tokens,
        "tool_calling": i.tool_calling,
        "streaming": i.streaming,
        "prompt_caching": i.prompt_caching,
        "token_counting": i.token_counting,
        "capability_source": i.capability_source,
    }
    return identity, capabilities


def default_prompt_configuration(
    *, write: bool, commands: bool, approval: str = "balanced", network: str = "denied"
) -> PromptConfiguration:
    """The prompt configuration this host states about itself: its OS and, when command
    tools are active, the interpreter the runner really spawns."""
    command = None
    if commands:
        from tidegate.exec.interpreter import host_interpreter

        command = host_interpreter().describe()
    return PromptConfiguration.model_validate(
        {
            "approvalProfile": approval,
            "complexity": "standard",
            "networkAccess": network,
            "writeAccess": "allowed" if write else "denied",
            "hostEnvironment": HostEnvironment.model_validate(
                {
                    "operatingSystem": platform.system().lower() or "unknown",
                    "architecture": platform.machine() or "unknown",
                    "command": command,
                }
            ),
        }
    )
