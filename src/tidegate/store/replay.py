"""The replay hash: one digest of what a run did, comparable across machines and runs.

It covers each event's kind, attempt, phase and payload, in sequence order. It leaves out
everything that differs between two runs of the same scenario: times, durations, run,
execution, event and tool-call IDs, temp-dir paths and commit ids (all of which live in
an event's ``meta``, never in its payload). Two isolated runs of one scripted scenario
therefore produce the same hash, and any difference in what was proposed, judged,
verified or applied changes it.
"""

from __future__ import annotations

from collections.abc import Iterable

from tidegate.store.canonical import value_digest
from tidegate.store.trace import TraceEvent

FORMAT = "tidegate.replay/1"


def replay_projection(events: Iterable[TraceEvent]) -> list[dict[str, object]]:
    ordered = sorted(events, key=lambda e: e.seq)
    return [
        {"kind": e.kind, "attempt": e.attempt, "phase": e.phase, "payload": e.payload_value()}
        for e in ordered
    ]


def replay_hash(events: Iterable[TraceEvent]) -> str:
    """``sha256:<hex>`` over the canonical projection of ``events``."""
    return value_digest({"format": FORMAT, "events": replay_projection(events)})
