"""Approval of a dispatch: the parent's approval profile judges the sub-agent's tool set.

Every argument-independent rule of ``tidegate.tools.policy`` is applied to the tools the
sub-agent could use (``decide_tools``; strictest wins). Allow runs it; Deny is a denied
result; Ask goes, as a tool call's Ask does, to a grant given earlier (the request id is
derived from the dispatch's arguments and the workspace, so a grant given while the run
was paused applies to this very dispatch and nothing else), then to the approver (waited
for at most ``approval_timeout_s``), else becomes a pending approval, which pauses the
parent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tidegate.agent.sub_result import TOOL_ID
from tidegate.tools.calls import ApprovalRequest
from tidegate.tools.calls import ToolCall as HostCall
from tidegate.tools.calls import ToolResult as HostResult
from tidegate.tools.effects import ApprovalEffect, sha256_json
from tidegate.tools.policy import Ask, Deny, decide_tools
from tidegate.tools.results import denied, pending_approval

if TYPE_CHECKING:
    from tidegate.agent.session import AgentSession


def approve_dispatch(
    session: AgentSession,
    call: HostCall,
    arguments: Mapping[str, Any],
    tools: Sequence[str],
    started: float,
) -> ApprovalEffect | HostResult:
    """The approval effect to run under, or the result that ends the call instead."""
    ex = session.executor
    ctx = ex.context
    decision = decide_tools(tools, ctx.mode, ctx.approval_profile, ex.policy_context)
    if not isinstance(decision, Ask | Deny):
        return ApprovalEffect(status="not_required")
    raw = dict(arguments)
    digest = sha256_json({"tool": TOOL_ID, "arguments": raw, "workspace": str(ctx.root)})
    request_id = "apr_" + digest[7:31]
    if isinstance(decision, Deny):
        return denied(call, TOOL_ID, request_id, "policy", decision.reasons, started)
    if request_id in ctx.grants:
        return ApprovalEffect(
            status="granted", request_id=request_id, decided_by="grant", reasons=decision.reasons
        )
    request = ApprovalRequest(
        request_id=request_id,
        call_id=call.call_id,
        tool=TOOL_ID,
        arguments=raw,
        reasons=decision.reasons,
    )
    from tidegate.tools.approval import ask_within

    if ctx.approver is None:
        return pending_approval(call, TOOL_ID, "dispatch", request, started)

    answer = ask_within(ctx.approver, request, ctx.limits.approval_timeout_s)
    if answer is None or answer.request_id != request_id or not answer.granted:
        why = (answer.reason if answer is not None and answer.reason else "") or "not approved"
        by = answer.by if answer is not None else "timeout"
        return denied(call, TOOL_ID, request_id, by, (why,), started)
    return ApprovalEffect(
        status="granted", request_id=request_id, decided_by=answer.by, reasons=decision.reasons
    )
