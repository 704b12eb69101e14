"""Matrix 15: legacy free-form prompt fields and unknown prompt keys are rejected.

A host can only hand tidegate structured prompt facts. ``systemPrompt``, ``promptHash``,
``promptVersion`` and ``workspaceInstructions`` (in either spelling, on the request or in
its prompt block), and any key tidegate does not know, fail validation at once with one
line that names the field — before any prompt could be assembled from them.
"""

from __future__ import annotations

import pytest

from tests.unit.prompt.helpers import config_data
from tidegate.prompt import PromptConfigurationError, load_prompt_configuration, load_run_request

LEGACY = ["systemPrompt", "promptHash", "promptVersion", "workspaceInstructions"]


def request(**extra: object) -> dict[str, object]:
    return {
        "taskId": "t-15",
        "workspaceRoot": "/workspace/project",
        "goal": "Fix the parser.",
        "prompt": config_data(),
        **extra,
    }


@pytest.mark.parametrize("field", LEGACY)
def test_legacy_prompt_fields_are_rejected_in_the_prompt_block(field: str) -> None:
    data = request(prompt={**config_data(), field: "You are a helpful assistant."})
    with pytest.raises(PromptConfigurationError) as caught:
        load_run_request(data)
    assert f"prompt.{field} is a legacy free-form prompt field" in str(caught.value)


@pytest.mark.parametrize("field", LEGACY)
def test_legacy_prompt_fields_are_rejected_on_the_request(field: str) -> None:
    with pytest.raises(PromptConfigurationError, match=rf"request\.{field} is a legacy"):
        load_run_request(request(**{field: "sha256:" + "0" * 64}))


@pytest.mark.parametrize("field", ["system_prompt", "prompt_hash", "prompt_version"])
def test_snake_case_spellings_are_rejected_too(field: str) -> None:
    with pytest.raises(PromptConfigurationError, match=field):
        load_prompt_configuration({**config_data(), field: "x"})


@pytest.mark.parametrize(
    ("where", "data", "named"),
    [
        ("prompt", {**config_data(), "aprovalProfile": "strict"}, "prompt.aprovalProfile"),
        (
            "prompt",
            config_data(hostEnvironment={"operatingSystem": "linux", "shellPath": "/bin/zsh"}),
            "prompt.hostEnvironment.shellPath",
        ),
        ("request", request(priority="high"), "request.priority"),
    ],
)
def test_unknown_keys_are_rejected_by_name(where: str, data: dict[str, object], named: str) -> None:
    loader = load_prompt_configuration if where == "prompt" else load_run_request
    with pytest.raises(PromptConfigurationError) as caught:
        loader(data)
    message = str(caught.value)
    assert f"{named}: unknown field" in message
    assert "\n" not in message
