"""The results of calls that end without success: refused, failed, ended, denied, or
waiting for an approval; and how long a call took."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from tidegate.tools.adapters.base import ToolFailure
from tidegate.tools.calls import ApprovalRequest, Status, ToolCall, ToolError, ToolResult
from tidegate.tools.catalog import ToolSpec
from tidegate.tools.effects import ApprovalEffect, Effects


def elapsed_ms(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 3)


def failed(
    call: ToolCall,
    spec: ToolSpec | None,
    code: str,
    message: str,
    started: float,
    *,
    retryable: bool = True,
    details: Mapping[str, Any] | None = None,
) -> ToolResult:
    return ToolResult(
        call_id=call.call_id,
        name=call.name,
        tool=spec.tool_id if spec else None,
        ok=False,
        status="error",
        error=ToolError(
            code=code, message=message, retryable=retryable, details=dict(details or {})
        ),
        duration_ms=elapsed_ms(started),
    )


def failure_result(
    call: ToolCall, spec: ToolSpec, failure: ToolFailure, started: float
) -> ToolResult:
    return failed(
        call,
        spec,
        failure.code,
        failure.message,
        started,
        retryable=failure.retryable,
        details=failure.details,
    )


def ended(
    call: ToolCall,
    spec: ToolSpec,
    status: Status,
    message: str,
    started: float,
    code: str | None = None,
) -> ToolResult:
    return ToolResult(
        call_id=call.call_id,
        name=call.name,
        tool=spec.tool_id,
        ok=False,
        status=status,
        error=ToolError(code=code or status, message=message, retryable=False),
        duration_ms=elapsed_ms(started),
    )


def denied(
    call: ToolCall,
    tool_id: str,
    request_id: str,
    by: str,
    reasons: tuple[str, ...],
    started: float,
) -> ToolResult:
    """The answer to a ``call`` of ``tool_id`` whose approval was denied (by the policy,
    the approver, or a timeout): the denial is the call's only effect."""
    return ToolResult(
        call_id=call.call_id,
        name=call.name,
        tool=tool_id,
        ok=False,
        status="denied",
        error=ToolError(code="approval_denied", message="; ".join(reasons)),
        effects=Effects(
            approval=ApprovalEffect(
                status="denied", request_id=request_id, decided_by=by, reasons=reasons
            )
        ),
        duration_ms=elapsed_ms(started),
    )


def pending_approval(
    call: ToolCall, tool_id: str, what: str, request: ApprovalRequest, started: float
) -> ToolResult:
    """The answer to a ``call`` of ``tool_id`` that needs an approval nobody here can give
    (no approver: MCP over stdio, a non-interactive run): the request, for a later grant."""
    return ToolResult(
        call_id=call.call_id,
        name=call.name,
        tool=tool_id,
        ok=False,
        status="pending_approval",
        error=ToolError(
            code="approval_pending",
            message=f"this {what} needs approval: " + "; ".join(request.reasons),
            retryable=False,
        ),
        approval_request=request,
        duration_ms=elapsed_ms(started),
    )
