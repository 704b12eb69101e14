"""Inputs and outputs of project.detect and project.validate."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from tidegate.tools.schemas.base import ToolInput, ToolOutput


class DetectInput(ToolInput):
    path: str = Field(default=".", min_length=1, max_length=4096)


class DetectOutput(ToolOutput):
    root: str
    project: dict[str, Any]
    """What the host's project detection found (kinds, manifests, validation candidates,
    whether the scan was complete, what it excluded)."""
    validation_command: str | None
    validation_source: str | None
    """Where the validation command comes from (operator, configuration, detection)."""


class ValidateInput(ToolInput):
    validation_id: str = Field(
        default="default",
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$",
        description="A stable name for this validation; a later run supersedes an earlier one.",
    )
    paths: list[str] = Field(
        default_factory=list, max_length=50, description="Limit to these paths (if supported)."
    )
    timeout_s: float = Field(default=600.0, gt=0, le=3600)


class DiagnosticOut(ToolOutput):
    tool: str
    message: str
    path: str | None
    line: int | None
    code: str | None
    severity: str
    test_id: str | None


class ValidateOutput(ToolOutput):
    validation_id: str
    command: str
    status: Literal["passed", "failed", "timed_out", "cancelled"]
    exit_code: int | None
    error_class: str | None
    summary: str
    diagnostics: list[DiagnosticOut]
    failing_tests: list[str]
    output_tail: str
    fingerprint: str
    duration_s: float
    containment: dict[str, Any]
