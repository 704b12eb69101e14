"""The structured prompt configuration: both spellings in, nothing unknown or legacy."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tests.unit.prompt.helpers import INSTRUCTION, POSIX_COMMAND, config, config_data, sha
from tidegate.errors import UsageError
from tidegate.prompt import (
    CommandEnvironment,
    PromptConfiguration,
    PromptConfigurationError,
    load_prompt_configuration,
)

SNAKE = {
    "approval_profile": "balanced",
    "complexity": "standard",
    "network_access": "policy_gated",
    "write_access": "allowed",
    "host_environment": {
        "operating_system": "linux",
        "architecture": "x64",
        "command": {
            "executable": "/bin/sh",
            "arguments_prefix": ["-c"],
            "command_mode": "shell_string",
            "shell": "sh",
            "dialect": "posix-sh",
            "path_style": "posix",
            "interactive": False,
            "stdin": "closed",
            "tty": False,
        },
    },
    "dirty_state_summary": "modified: src/parser.py",
    "trusted_workspace_instructions": [
        {"source": "AGENTS.md", "content": INSTRUCTION, "content_hash": sha(INSTRUCTION)}
    ],
}


def test_camel_and_snake_spellings_give_the_same_configuration() -> None:
    camel = config()
    snake = PromptConfiguration.model_validate(SNAKE)
    assert camel == snake
    assert camel.configuration_hash() == snake.configuration_hash()
    assert camel.wire()["hostEnvironment"]["command"]["argumentsPrefix"] == ["-c"]


@pytest.mark.parametrize(
    "field",
    [
        "systemPrompt",
        "promptHash",
        "promptVersion",
        "workspaceInstructions",
        "system_prompt",
        "prompt_hash",
        "prompt_version",
        "workspace_instructions",
    ],
)
def test_each_legacy_field_is_refused_by_name(field: str) -> None:
    with pytest.raises(PromptConfigurationError) as caught:
        load_prompt_configuration(config_data(**{field: "anything"}))
    message = str(caught.value)
    assert f"prompt.{field}" in message
    assert "legacy" in message
    assert "\n" not in message


def test_unknown_keys_are_refused_with_their_path() -> None:
    with pytest.raises(PromptConfigurationError, match=r"prompt\.approvalProfil: unknown"):
        load_prompt_configuration({**config_data(), "approvalProfil": "strict"})
    command = {**POSIX_COMMAND, "loginShell": "/bin/zsh"}
    env = {"operatingSystem": "linux", "architecture": "x64", "command": command}
    with pytest.raises(PromptConfigurationError, match=r"hostEnvironment\.command\.loginShell"):
        load_prompt_configuration(config_data(hostEnvironment=env))


def test_a_key_in_both_spellings_is_refused() -> None:
    with pytest.raises(ValidationError):
        PromptConfiguration.model_validate({**config_data(), "approval_profile": "strict"})


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("approvalProfile", "yolo"),
        ("complexity", "epic"),
        ("networkAccess", "sometimes"),
        ("writeAccess", True),
    ],
)
def test_policy_values_are_closed_sets(key: str, value: object) -> None:
    with pytest.raises(PromptConfigurationError, match=key):
        load_prompt_configuration(config_data(**{key: value}))


@pytest.mark.parametrize(
    ("key", "value"), [("tty", True), ("stdin", "inherit"), ("interactive", True)]
)
def test_only_closed_stdin_and_no_tty_are_accepted(key: str, value: object) -> None:
    with pytest.raises(ValidationError):
        CommandEnvironment.model_validate({**POSIX_COMMAND, key: value})


def test_missing_required_policy_field_is_named() -> None:
    with pytest.raises(PromptConfigurationError, match=r"prompt\.writeAccess: Field required"):
        load_prompt_configuration(config_data(writeAccess=None))


def test_trusted_instruction_hash_must_match_its_content() -> None:
    record = {"source": "AGENTS.md", "content": INSTRUCTION, "contentHash": sha("other text")}
    with pytest.raises(PromptConfigurationError, match="does not match its content"):
        load_prompt_configuration(config_data(trustedWorkspaceInstructions=[record]))


def test_trusted_instruction_hash_accepts_bare_hex_and_normalises_it() -> None:
    bare = sha(INSTRUCTION).removeprefix("sha256:").upper()
    record = {"source": "AGENTS.md", "content": INSTRUCTION, "contentHash": bare}
    cfg = config(trustedWorkspaceInstructions=[record])
    assert cfg.trusted_workspace_instructions[0].content_hash == sha(INSTRUCTION)
    with pytest.raises(PromptConfigurationError, match="64 hex"):
        load_prompt_configuration(
            config_data(trustedWorkspaceInstructions=[{**record, "contentHash": "md5:abc"}])
        )


def test_a_trusted_instruction_given_twice_is_refused() -> None:
    record = {"source": "AGENTS.md", "content": INSTRUCTION, "contentHash": sha(INSTRUCTION)}
    with pytest.raises(PromptConfigurationError, match="given twice"):
        load_prompt_configuration(config_data(trustedWorkspaceInstructions=[record, record]))


def test_an_oversized_dirty_summary_is_refused() -> None:
    with pytest.raises(PromptConfigurationError, match="dirtyStateSummary"):
        load_prompt_configuration(config_data(dirtyStateSummary="x" * 20_001))


def test_configuration_is_frozen_and_its_hash_tracks_every_field() -> None:
    base = config()
    with pytest.raises(ValidationError):
        base.complexity = "simple"
    variants = [
        config(approvalProfile="strict"),
        config(complexity="complex"),
        config(networkAccess="denied"),
        config(writeAccess="policy_gated"),
        config(dirtyStateSummary="modified: other.py"),
        config(trustedWorkspaceInstructions=None),
        config(hostEnvironment=None),
    ]
    hashes = {base.configuration_hash(), *(v.configuration_hash() for v in variants)}
    assert len(hashes) == len(variants) + 1


def test_configuration_error_is_a_usage_error() -> None:
    assert issubclass(PromptConfigurationError, UsageError)
