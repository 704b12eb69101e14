"""The task an agent run works on, and the one formatter that turns it into the user message.

A :class:`RunTask` is what the caller asked for. :class:`TaskContract` is the frozen form
the runtime hashes and checkpoints (the task plus the configured complexity and the
workspace identity); :func:`format_user_task` renders it as the first user message and is
the only such formatter. Trusted workspace instructions never enter the user message: they
belong to the system prompt, with their provenance. No acceptance criterion is ever made up:
a task without criteria says so.
"""

from __future__ import annotations

from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tidegate.prompt.contract import (
    Complexity,
    HostInput,
    PromptConfiguration,
    PromptConfigurationError,
    describe_validation_error,
    reject_legacy_fields,
)
from tidegate.prompt.hashing import sha256_json
from tidegate.records.modes import Mode

_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"

_MODE_MEANING = {
    Mode.PATCH: "change the code to achieve the goal, then validate the change",
    Mode.REVIEW: "read-only: inspect and report; change nothing in the workspace",
    Mode.DEBUG: "find the cause first and report it, then fix it and validate the fix",
}


class AcceptanceCriterion(HostInput):
    id: str = Field(pattern=_ID_PATTERN)
    text: str = Field(min_length=1, max_length=2_000)


class RunTask(HostInput):
    """What the caller asks an agent run to do."""

    task_id: str = Field(pattern=_ID_PATTERN)
    workspace_root: str = Field(min_length=1)
    workspace_snapshot: str | None = None
    """The T0 snapshot the run started from: stable across pause and resume."""
    goal: str = Field(min_length=1, max_length=20_000)
    mode: Mode = Mode.PATCH
    constraints: tuple[str, ...] = ()
    acceptance_criteria: tuple[AcceptanceCriterion, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _no_legacy_fields(cls, data: Any) -> Any:
        reject_legacy_fields(data, "request")
        return data

    @field_validator("workspace_root")
    @classmethod
    def _absolute_root(cls, value: str) -> str:
        if not (PurePosixPath(value).is_absolute() or PureWindowsPath(value).is_absolute()):
            raise ValueError(f"workspaceRoot must be an absolute path, got {value!r}")
        return value

    @field_validator("goal")
    @classmethod
    def _goal_has_text(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("goal is blank")
        return value

    @field_validator("constraints")
    @classmethod
    def _constraints_have_text(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if any(not item.strip() for item in value):
            raise ValueError("a constraint is blank")
        return value

    @field_validator("acceptance_criteria")
    @classmethod
    def _unique_criteria(
        cls, value: tuple[AcceptanceCriterion, ...]
    ) -> tuple[AcceptanceCriterion, ...]:
        ids = [c.id for c in value]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"acceptance criterion ids repeat: {', '.join(duplicates)}")
        return value


class AgentRunRequest(RunTask):
    """A whole run request as a host sends it: the task plus the structured prompt input."""

    prompt: PromptConfiguration

    @property
    def task(self) -> RunTask:
        return RunTask.model_validate(self.model_dump(exclude={"prompt"}))


def load_run_request(data: dict[str, Any]) -> AgentRunRequest:
    """Validate a run request, turning every problem into one ``PromptConfigurationError``."""
    try:
        return AgentRunRequest.model_validate(data)
    except ValidationError as exc:
        raise PromptConfigurationError(describe_validation_error(exc, "request")) from exc


class TaskContract(BaseModel):
    """The frozen task a run is bound to; its hash is one of the resume hashes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_id: str
    goal: str
    mode: Mode
    complexity: Complexity
    constraints: tuple[str, ...]
    acceptance_criteria: tuple[AcceptanceCriterion, ...]
    workspace_root: str
    workspace_snapshot: str | None

    @classmethod
    def from_task(cls, task: RunTask, config: PromptConfiguration) -> TaskContract:
        return cls(
            task_id=task.task_id,
            goal=task.goal,
            mode=task.mode,
            complexity=config.complexity,
            constraints=task.constraints,
            acceptance_criteria=task.acceptance_criteria,
            workspace_root=task.workspace_root,
            workspace_snapshot=task.workspace_snapshot,
        )

    @property
    def criterion_ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.acceptance_criteria)

    def contract_hash(self) -> str:
        return sha256_json(self.model_dump(mode="json"))


def format_user_task(contract: TaskContract) -> str:
    """The first user message of a run: the only place a task becomes model-visible text."""
    lines = [
        f"Task {contract.task_id}",
        f"Mode: {contract.mode.value} ({_MODE_MEANING[contract.mode]})",
        f"Expected complexity: {contract.complexity}",
        "",
        "Goal:",
        contract.goal.strip(),
        "",
    ]
    if contract.constraints:
        lines.append("Constraints:")
        lines.extend(f"- {item.strip()}" for item in contract.constraints)
    else:
        lines.append("Constraints: none given.")
    lines.append("")
    if contract.acceptance_criteria:
        lines.append("Acceptance criteria (cite the id when you report on one):")
        lines.extend(f"- [{c.id}] {c.text.strip()}" for c in contract.acceptance_criteria)
    else:
        lines.append("Acceptance criteria: none were given.")
    lines.append("")
    workspace = f"Workspace: {contract.workspace_root}"
    if contract.workspace_snapshot:
        workspace += f" (starting snapshot {contract.workspace_snapshot})"
    lines.append(workspace)
    return "\n".join(lines) + "\n"
