"""Approval of one call: the policy's decision, a standing grant, or the approver's
answer within a bounded wait."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from tidegate.tools.calls import ApprovalRequest, ToolCall, ToolResult
from tidegate.tools.catalog import ToolSpec
from tidegate.tools.context import ApprovalAnswer, ApprovalPort, ToolContext
from tidegate.tools.effects import ApprovalEffect, sha256_json
from tidegate.tools.policy import PATH_WRITERS, Allow, Ask, Deny, PolicyContext, decide
from tidegate.tools.results import denied, pending_approval


def approve(
    ctx: ToolContext,
    policy: PolicyContext,
    call: ToolCall,
    spec: ToolSpec,
    raw: dict[str, Any],
    started: float,
) -> ApprovalEffect | ToolResult:
    """The approval a call (its validated arguments ``raw``) runs under, or the result it
    ends with: denied by the policy or the approver, timed out, or pending approval."""
    decision = decide(
        spec.tool_id,
        raw,
        ctx.mode,
        ctx.approval_profile,
        policy,
        write_target(ctx, spec.tool_id, raw),
    )
    if isinstance(decision, Allow):
        return ApprovalEffect(status="not_required")
    request_id = (
        "apr_"
        + sha256_json({"tool": spec.tool_id, "arguments": raw, "workspace": str(ctx.root)})[7:31]
    )
    if isinstance(decision, Deny):
        return denied(call, spec.tool_id, request_id, "policy", decision.reasons, started)
    assert isinstance(decision, Ask)
    if request_id in ctx.grants:
        return ApprovalEffect(
            status="granted",
            request_id=request_id,
            decided_by="grant",
            reasons=decision.reasons,
        )
    request = ApprovalRequest(
        request_id=request_id,
        call_id=call.call_id,
        tool=spec.tool_id,
        arguments=raw,
        reasons=decision.reasons,
    )
    if ctx.approver is None:
        return pending_approval(call, spec.tool_id, "call", request, started)
    answer = ask_within(ctx.approver, request, ctx.limits.approval_timeout_s)
    if answer is None:
        return denied(call, spec.tool_id, request_id, "timeout", ("no answer in time",), started)
    if answer.request_id != request_id:
        why = ("the answer named another request",)
        return denied(call, spec.tool_id, request_id, "approver", why, started)
    if not answer.granted:
        reasons = (answer.reason,) if answer.reason else decision.reasons
        return denied(call, spec.tool_id, request_id, answer.by, reasons, started)
    return ApprovalEffect(
        status="granted", request_id=request_id, decided_by=answer.by, reasons=decision.reasons
    )


def write_target(ctx: ToolContext, tool: str, raw: Mapping[str, Any]) -> str | None:
    """Where a path-writing call would land, symlinked directories followed (None: not
    such a call, or a path the port refuses anyway when the call is dispatched)."""
    from tidegate.workspace.confine.refusal import PathRefused

    path = raw.get("path")
    if tool not in PATH_WRITERS or not isinstance(path, str):
        return None
    try:
        return ctx.workspace.resolved(path)
    except (PathRefused, OSError):
        return None


def ask_within(
    approver: ApprovalPort, request: ApprovalRequest, timeout_s: float
) -> ApprovalAnswer | None:
    """The approver's answer, or None when none came within ``timeout_s``.

    The approver runs in a daemon worker thread and the executor waits at most
    ``timeout_s`` for it, so an approver that ignores its timeout (a person who walked
    away, a hung remote service) cannot hold the call, or the run, open. A late answer is
    dropped: the call has already ended as a timed-out denial and nothing was dispatched.
    An approver that raises raises here.
    """
    done = threading.Event()
    outcome: list[ApprovalAnswer | None] = []
    failure: list[BaseException] = []

    def ask() -> None:
        try:
            outcome.append(approver.request(request, timeout_s))
        except BaseException as exc:  # handed to the waiting thread
            failure.append(exc)
        finally:
            done.set()

    worker = threading.Thread(
        target=ask, name=f"tidegate-approval-{request.request_id}", daemon=True
    )
    worker.start()
    if not done.wait(max(timeout_s, 0.0)):
        return None
    if failure:
        raise failure[0]
    return outcome[0]
