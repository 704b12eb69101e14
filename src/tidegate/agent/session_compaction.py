"""A session's conversation compacted: all but its newest rounds replaced by the host's
summary of the evidence (with the last checkpoint and, while finalizing, the note that no
tools are offered), recorded as ``agent.compacted``. The loop decides when."""

from __future__ import annotations

from tidegate.agent.compaction import compact, context_summary, kept_call_ids
from tidegate.agent.session import AgentSession
from tidegate.agent.session_options import FINALIZE_NOTE


def compact_session(s: AgentSession, reason: str, *, keep: int) -> None:
    """Replace all but the newest ``keep`` rounds by the host summary."""
    before = s.meter.request_tokens(s.build_request())
    summary = context_summary(
        s.transcript,
        s.ledger,
        expect_changes=s.expect_changes,
        exclude=kept_call_ids(s.messages, s.head, keep),
    )
    if s.last_checkpoint_hash:
        summary += f"\nLast checkpoint: {s.last_checkpoint_hash}\n"
    if s.finalizing:
        summary += "\n" + FINALIZE_NOTE.format(reason=s.finalizing) + "\n"
    s.messages = compact(s.messages, s.head, summary, keep)
    s.meter.forget(s.messages)
    s.compactions += 1
    s.output_chars = 0
    after = s.meter.request_tokens(s.build_request())
    s.event(
        "agent.compacted",
        {
            "reason": reason,
            "compactions": s.compactions,
            "kept_rounds": keep,
            "tokens_before": before,
            "tokens_after": after,
            "checkpoint": s.last_checkpoint_hash,
        },
    )
