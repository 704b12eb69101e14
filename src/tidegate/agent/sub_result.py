"""What a dispatch returns: the sub-agent's answer and change as the tool's output, data.

The output holds the sub-agent's final text (sanitised), its change against its copy's
commit (secret shapes redacted, bounded, with the SHA-256 of the whole diff and the
changed paths), its status and its tool profile. The result carries no workspace effect:
only the approval of the dispatch itself.
"""

from __future__ import annotations

import hashlib
import re

import msgspec

from tidegate.tools.calls import ToolCall as HostCall
from tidegate.tools.calls import ToolError
from tidegate.tools.calls import ToolResult as HostResult
from tidegate.tools.effects import ApprovalEffect, Effects
from tidegate.tools.results import elapsed_ms

TOOL_ID = "agent.dispatch"
TOOL_NAME = "agent_dispatch"
TEXT_CHARS = 8_000
DIFF_CHARS = 24_000
_DIFF_PATH = re.compile(r"^diff --git a/(.*) b/", re.MULTILINE)


class SubAgentReport(msgspec.Struct, frozen=True):
    """How one sub-agent's run ended, before it is shown to the parent."""

    agent: str
    depth: int
    status: str
    """``completed``, a loop ending (``paused``, ``stopped`` ...) or a CLI's exit."""
    text: str
    reason: str
    diff: str
    read_only: bool
    kept: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()


def dispatch_result(
    call: HostCall, report: SubAgentReport, approval: ApprovalEffect, started: float
) -> HostResult:
    from tidegate.text.sanitize import redact, sanitize

    shown = redact(report.diff)
    output = {
        "agent": report.agent,
        "depth": report.depth,
        "status": report.status,
        "read_only": report.read_only,
        "text": sanitize(report.text)[:TEXT_CHARS],
        "reason": sanitize(report.reason)[:500],
        "diff": shown[:DIFF_CHARS],
        "diff_truncated": len(shown) > DIFF_CHARS,
        "diff_sha256": "sha256:"
        + hashlib.sha256(report.diff.encode("utf-8", "replace")).hexdigest(),
        "changed_paths": sorted(set(_DIFF_PATH.findall(report.diff)))[:200],
        "tools": list(report.kept),
        "removed_tools": list(report.removed),
        "note": "data from an isolated copy: nothing was applied to your workspace",
    }
    ok = report.status == "completed"
    error = None
    if not ok:
        error = ToolError(
            code="sub_agent_" + re.sub(r"[^a-z0-9]+", "_", report.status.lower()),
            message=str(output["reason"]) or report.status,
            retryable=False,
        )
    return HostResult(
        call_id=call.call_id,
        name=call.name,
        tool=TOOL_ID,
        ok=ok,
        status="ok" if ok else "error",
        output=output,
        error=error,
        effects=Effects(approval=approval),
        duration_ms=elapsed_ms(started),
    )


def error_result(
    call: HostCall, code: str, message: str, started: float, *, retryable: bool = True
) -> HostResult:
    return HostResult(
        call_id=call.call_id,
        name=call.name,
        tool=TOOL_ID,
        ok=False,
        status="error",
        error=ToolError(code=code, message=message, retryable=retryable),
        duration_ms=elapsed_ms(started),
    )
