"""The transcript of an agent session: what was asked, what it cost, which tools ran.

It is the record a person (or a test) reads to see what a model-driven session did: one
``TurnRecord`` per model request (stop reason, token usage, cost, the tools it offered and
the calls it made) and one ``ToolRecord`` per tool call (canonical tool, status, the
host-attested effects and a short host-written summary of the result).

No model prose is kept. A turn records only the digest and length of the text the model
produced, so nothing resembling a chain of thought reaches a checkpoint or the store; the
tool summaries are written by the host from the structured result, never copied from the
model. Costs are kept as decimal strings (canonical JSON refuses floats).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import msgspec

from tidegate.prompt.hashing import sha256_text


class TurnRecord(msgspec.Struct, frozen=True):
    """One model request and its response, without the response's words."""

    step: int
    phase: str
    stop_reason: str
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    usage_exact: bool
    cost_usd: str | None
    """Decimal string; None when the model has no known price."""
    tools_offered: int
    """How many tools the request exposed (0 for a finalization turn)."""
    tool_calls: tuple[str, ...]
    """The tool names the model called, in the order it emitted them."""
    text_sha256: str
    text_chars: int
    duration_ms: int

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "phase": self.phase,
            "stop_reason": self.stop_reason,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_input_tokens": self.cached_input_tokens,
            "usage_exact": self.usage_exact,
            "cost_usd": self.cost_usd,
            "tools_offered": self.tools_offered,
            "tool_calls": list(self.tool_calls),
            "text_sha256": self.text_sha256,
            "text_chars": self.text_chars,
            "duration_ms": self.duration_ms,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TurnRecord:
        return cls(**{**data, "tool_calls": tuple(data["tool_calls"])})


class ToolRecord(msgspec.Struct, frozen=True):
    """One tool call as the host handled it.

    ``dispatched`` is False for calls the loop answered itself (blocked by a guard,
    rejected during finalization, already completed before a resume, skipped after a
    stop): their ``status`` says why and they have no effects.
    """

    seq: int
    call_id: str
    record_id: str
    """The id the call is stored under (``call_id`` behind the session's scope)."""
    name: str
    tool: str | None
    phase: str
    status: str
    ok: bool
    dispatched: bool
    input_sha256: str
    result_sha256: str | None
    summary: str
    effects: dict[str, Any] = msgspec.field(default_factory=dict)
    duration_us: int = 0
    """The executor's own time for the call (zero for calls that were not run)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "call_id": self.call_id,
            "record_id": self.record_id,
            "name": self.name,
            "tool": self.tool,
            "phase": self.phase,
            "status": self.status,
            "ok": self.ok,
            "dispatched": self.dispatched,
            "input_sha256": self.input_sha256,
            "result_sha256": self.result_sha256,
            "summary": self.summary,
            "effects": self.effects,
            "duration_us": self.duration_us,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ToolRecord:
        return cls(**data)


class Transcript:
    """Turns and tool calls of a session, with running totals; checkpointed as JSON."""

    def __init__(self) -> None:
        self.turns: list[TurnRecord] = []
        self.tools: list[ToolRecord] = []
        self.cost_usd = Decimal(0)
        self.cost_known = True

    # recording

    def add_turn(self, turn: TurnRecord) -> None:
        self.turns.append(turn)
        if turn.cost_usd is None:
            self.cost_known = False
        else:
            self.cost_usd += Decimal(turn.cost_usd)

    def add_tool(self, record: ToolRecord) -> None:
        self.tools.append(record)

    # reading

    @property
    def tool_sequence(self) -> list[str]:
        """Canonical ids of the calls that were actually dispatched, in order."""
        return [r.tool or r.name for r in self.tools if r.dispatched]

    @property
    def input_tokens(self) -> int:
        return sum(t.input_tokens for t in self.turns)

    @property
    def output_tokens(self) -> int:
        return sum(t.output_tokens for t in self.turns)

    def completed_ids(self) -> set[str]:
        """Record ids of calls that were dispatched (and so must never run again)."""
        return {r.record_id for r in self.tools if r.dispatched}

    def summary(self) -> dict[str, Any]:
        """The totals a report or trace event carries."""
        return {
            "steps": len(self.turns),
            "tool_calls": len(self.tool_sequence),
            "tool_sequence": self.tool_sequence,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": str(self.cost_usd) if self.cost_known else None,
        }

    # serialisation

    def to_json(self) -> dict[str, Any]:
        return {
            "turns": [t.to_json() for t in self.turns],
            "tools": [r.to_json() for r in self.tools],
            "cost_usd": str(self.cost_usd),
            "cost_known": self.cost_known,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Transcript:
        transcript = cls()
        transcript.turns = [TurnRecord.from_json(t) for t in data["turns"]]
        transcript.tools = [ToolRecord.from_json(r) for r in data["tools"]]
        transcript.cost_usd = Decimal(data["cost_usd"])
        transcript.cost_known = bool(data["cost_known"])
        return transcript


def text_digest(text: str) -> tuple[str, int]:
    """What a turn keeps of the model's words: their digest and length."""
    return sha256_text(text), len(text)
