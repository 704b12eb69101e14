"""Tool calls and their results, as the agent loop, the CLI and the MCP server see them.

A result's ``status`` says how the call ended:

``ok``                the tool ran; ``ok=True`` (a failing command is still ``ok``: its exit
                      code is in the output). Only these results carry effects beyond a
                      denial.
``error``             a structured failure the model may correct (bad arguments, unknown or
                      inactive tool, stale precondition, path refused); no effects
``denied``            the approval policy or the approver said no; effects hold only the
                      denial and its request ID
``pending_approval``  the policy asks and nobody could answer now; ``approval_request``
                      says what to approve (re-run with the request ID granted)
``paused``            a guard stopped the call before dispatch (repeated failing edits)
``cancelled``         cancellation arrived before dispatch
``skipped``           a batch stopped before this call (or refused the whole batch)
``unknown_outcome``   the side effects are not known; only ever inside ToolOutcomeUnknown
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tidegate.errors import UnknownOutcome
from tidegate.tools.effects import Effects, json_safe

Status = Literal[
    "ok", "error", "denied", "pending_approval", "paused", "cancelled", "skipped", "unknown_outcome"
]
STOPPING: frozenset[str] = frozenset({"pending_approval", "paused", "cancelled", "unknown_outcome"})
"""Statuses that stop a batch: later calls are not dispatched."""


class ToolCall(BaseModel):
    """One call as a model emitted it. ``arguments`` may be the provider's raw JSON text."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    call_id: str = Field(min_length=1, max_length=200)
    name: str = Field(min_length=1, max_length=200)
    arguments: dict[str, Any] | str = Field(default_factory=dict)


class ToolError(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    code: str
    message: str
    retryable: bool = True
    details: dict[str, Any] = Field(default_factory=dict)


class ApprovalRequest(BaseModel):
    """What an approver is asked. ``request_id`` is stable for the same tool and arguments
    in the same workspace, so a grant given after a pause applies when the call is re-run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    request_id: str
    call_id: str
    tool: str
    arguments: dict[str, Any]
    reasons: tuple[str, ...]


class ToolResult(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    call_id: str
    name: str
    """The name the call used (model-facing or canonical)."""
    tool: str | None
    """The canonical ID, None when the name matched no tool."""
    ok: bool
    status: Status
    output: dict[str, Any] | None = None
    error: ToolError | None = None
    effects: Effects = Field(default_factory=Effects)
    effects_authority: Literal["host"] = "host"
    approval_request: ApprovalRequest | None = None
    label: str | None = None
    """The adapter's label when it is a double or a test adapter."""
    duration_ms: float = 0.0

    @field_validator("output", mode="before")
    @classmethod
    def _json_safe_output(cls, value: Any) -> Any:
        """An adapter's output naming a non-UTF-8 file shows it escaped (``\\xff``)."""
        return json_safe(value)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = json_safe(self.model_dump(mode="json", exclude={"effects"}))
        data["effects"] = self.effects.to_json()
        return data


class ToolOutcomeUnknown(UnknownOutcome):
    """A call's side effects are unknown: the run must end, durably, and never retry it.

    ``result`` is the recorded result (status ``unknown_outcome``) with whatever effects
    the host could still observe, e.g. the files a command wrote before its adapter threw.
    """

    def __init__(self, result: ToolResult, reason: str) -> None:
        super().__init__(f"{result.tool or result.name} call {result.call_id}: {reason}")
        self.result = result
        self.reason = reason
        self.batch: BatchResult | None = None
        """Set by ``execute_batch``: every result of the round, later calls ``skipped``."""


class BatchResult(BaseModel):
    """The results of one round of calls, in the order the model emitted them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    results: list[ToolResult]
    rejected: str | None = None
    """Why the whole batch was refused before its first side effect (nothing dispatched)."""
    stopped: Status | None = None
    """The status that stopped the batch early (later calls are ``skipped``)."""
    stopped_at: str | None = None
    """The call ID that stopped it."""
