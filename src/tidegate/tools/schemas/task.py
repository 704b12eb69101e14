"""Input and output of task.checkpoint (bounded durable task state)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from tidegate.tools.schemas.base import SHA256_PATTERN, ToolInput, ToolOutput


class PlanItem(ToolInput):
    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$")
    text: str = Field(min_length=1, max_length=500)
    status: Literal["pending", "in_progress", "done", "blocked"] = "pending"


class CheckpointInput(ToolInput):
    summary: str = Field(min_length=1, max_length=4000)
    items: list[PlanItem] = Field(default_factory=list, max_length=50)
    next_step: str | None = Field(default=None, max_length=1000)


class CheckpointOutput(ToolOutput):
    checkpoint_sha256: str = Field(pattern=SHA256_PATTERN)
    items: int
    sequence: int
