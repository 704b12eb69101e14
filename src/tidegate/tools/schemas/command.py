"""Inputs and outputs of command.run and command.session."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from tidegate.tools.schemas.base import ToolInput, ToolOutput


class RunInput(ToolInput):
    command: str = Field(
        min_length=1, max_length=8000, description="A command string for the published interpreter."
    )
    cwd: str = Field(default=".", min_length=1, max_length=4096, description="Relative directory.")
    timeout_s: float = Field(
        default=120.0, gt=0, le=1800, description="Seconds before it is killed."
    )


class RunOutput(ToolOutput):
    status: Literal["succeeded", "failed", "timed_out", "cancelled"]
    exit_code: int | None
    stdout: str
    stderr: str
    stdout_truncated: bool
    stderr_truncated: bool
    duration_s: float
    interpreter: dict[str, Any]
    containment: dict[str, Any]


SessionAction = Literal["start", "send", "read", "stop"]


class SessionInput(ToolInput):
    action: SessionAction
    command: str | None = Field(default=None, max_length=8000, description="For start.")
    cwd: str = Field(default=".", min_length=1, max_length=4096, description="For start.")
    session_id: str | None = Field(default=None, max_length=64, description="For send/read/stop.")
    input: str | None = Field(default=None, max_length=64_000, description="For send: stdin text.")
    wait_s: float = Field(default=0.5, ge=0, le=30, description="For read: wait for output.")
    max_bytes: int = Field(default=16_000, ge=256, le=64_000, description="Output per stream.")

    @model_validator(mode="after")
    def _fields_for_action(self) -> SessionInput:
        if self.action == "start":
            if not self.command:
                raise ValueError("start needs a command")
            if self.session_id is not None or self.input is not None:
                raise ValueError("start takes no session_id or input")
        else:
            if not self.session_id:
                raise ValueError(f"{self.action} needs a session_id")
            if self.command is not None:
                raise ValueError(f"{self.action} takes no command")
            if (self.action == "send") != (self.input is not None):
                raise ValueError("input is given with send, and only with send")
        return self


class SessionOutput(ToolOutput):
    session_id: str
    action: SessionAction
    running: bool
    exit_code: int | None
    stdout: str
    stderr: str
    dropped_bytes: int
    """Output lost since the previous read because the buffer bound was exceeded."""
    pending_bytes: int
    """Output already buffered beyond ``max_bytes``: read again to get it."""
    containment: dict[str, Any]
