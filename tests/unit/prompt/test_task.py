"""The task contract and its one formatter."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.prompt.helpers import INSTRUCTION, config, config_data, snapshot
from tidegate.prompt import (
    AgentRunRequest,
    PromptConfigurationError,
    RunTask,
    TaskContract,
    format_user_task,
    load_run_request,
)
from tidegate.records.modes import Mode


def request_data(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "taskId": "task-123",
        "workspaceRoot": "/workspace/project",
        "goal": "Fix the parser and add regression coverage.",
        "mode": "patch",
        "constraints": ["Do not change the public wire format."],
        "acceptanceCriteria": [
            {"id": "parser-regression", "text": "The reported parser case passes."}
        ],
        "prompt": config_data(),
    }
    for key, value in overrides.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return data


def contract(**overrides: Any) -> TaskContract:
    request = load_run_request(request_data(**overrides))
    return TaskContract.from_task(request.task, request.prompt)


def test_a_spec_shaped_request_parses_into_task_and_prompt() -> None:
    request = load_run_request(request_data())
    assert isinstance(request, AgentRunRequest)
    assert request.task == RunTask(
        task_id="task-123",
        workspace_root="/workspace/project",
        goal="Fix the parser and add regression coverage.",
        mode=Mode.PATCH,
        constraints=("Do not change the public wire format.",),
        acceptance_criteria=request.acceptance_criteria,
    )
    assert request.prompt == config()


@pytest.mark.parametrize(
    "field", ["systemPrompt", "promptHash", "promptVersion", "workspaceInstructions"]
)
def test_legacy_fields_are_refused_on_the_request_too(field: str) -> None:
    with pytest.raises(PromptConfigurationError, match=rf"request\.{field} is a legacy"):
        load_run_request(request_data(**{field: "x"}))


@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        ({"workspaceRoot": "relative/path"}, "absolute"),
        ({"goal": "   "}, "goal is blank"),
        ({"constraints": ["ok", " "]}, "constraint is blank"),
        ({"mode": "auto"}, "mode"),
        ({"taskId": "has space"}, "taskId"),
        ({"extraThing": 1}, "request.extraThing: unknown"),
        (
            {
                "acceptanceCriteria": [
                    {"id": "a", "text": "one"},
                    {"id": "a", "text": "two"},
                ]
            },
            "ids repeat: a",
        ),
    ],
)
def test_bad_requests_fail_with_one_line_naming_the_problem(
    overrides: dict[str, Any], needle: str
) -> None:
    with pytest.raises(PromptConfigurationError) as caught:
        load_run_request(request_data(**overrides))
    assert needle in str(caught.value)
    assert "\n" not in str(caught.value)


def test_user_task_states_goal_mode_constraints_criteria_and_workspace() -> None:
    text = format_user_task(contract())
    assert "Task task-123" in text
    assert "Mode: patch" in text
    assert "Fix the parser and add regression coverage." in text
    assert "- Do not change the public wire format." in text
    assert "- [parser-regression] The reported parser case passes." in text
    assert "Workspace: /workspace/project" in text
    assert "Expected complexity: standard" in text


def test_without_criteria_none_is_invented() -> None:
    bare = contract(acceptanceCriteria=None, constraints=None)
    assert bare.acceptance_criteria == ()
    assert bare.criterion_ids == ()
    text = format_user_task(bare)
    assert "Acceptance criteria: none were given." in text
    assert "- [" not in text
    assert "Constraints: none given." in text


def test_trusted_instructions_stay_out_of_the_user_task() -> None:
    c = contract()
    assert INSTRUCTION not in format_user_task(c)
    assert INSTRUCTION in snapshot(config()).system_prompt


def test_contract_hash_follows_the_task_and_the_complexity_only() -> None:
    base = contract()
    assert base.contract_hash() == contract().contract_hash()
    assert (
        base.contract_hash()
        == contract(prompt=config_data(approvalProfile="strict")).contract_hash()
    )
    changed = [
        contract(goal="Something else."),
        contract(constraints=["Another constraint."]),
        contract(acceptanceCriteria=None),
        contract(mode="review"),
        contract(prompt=config_data(complexity="complex")),
        contract(workspaceRoot="/elsewhere"),
        contract(workspaceSnapshot="0123abcd"),
    ]
    assert len({base.contract_hash(), *(c.contract_hash() for c in changed)}) == len(changed) + 1


def test_review_mode_says_read_only() -> None:
    assert "read-only" in format_user_task(contract(mode="review"))
