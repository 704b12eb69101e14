"""The trace: an append-only sequence of events per run.

Every event carries the IDs that correlate it: run, task, execution (one process working
on the run: the first one, then one per resume), attempt, event, tool call, and a sequence
number that grows by one per event across all executions of the run. ``payload`` holds the
deterministic facts (what a replay compares); ``meta`` holds what varies from one run to
the next (durations, temp paths, commit ids that embed a timestamp). Both are redacted
and canonical before they are kept.

A ``Trace`` buffers events in memory; the store makes them durable in one transaction at
each phase boundary and at the end of the run (``flush``).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from tidegate.store.corrupt import CorruptRecord
from tidegate.store.redact import Redactor


def new_execution_id() -> str:
    return "exec-" + secrets.token_hex(5)


def now_ms() -> int:
    return int(time.time() * 1000)


class TraceEvent(msgspec.Struct, frozen=True):
    run_id: str
    seq: int
    event_id: str
    task_id: str
    execution_id: str
    attempt: int | None
    tool_call_id: str | None
    kind: str
    phase: str | None
    payload: str
    """Canonical JSON text (redacted): the deterministic part of the event."""
    meta: str
    """Canonical JSON text (redacted): the volatile part of the event."""
    at_ms: int

    def payload_value(self) -> dict[str, Any]:
        """A fresh copy of the payload."""
        value = json.loads(self.payload)
        assert isinstance(value, dict)
        return value

    def meta_value(self) -> dict[str, Any]:
        value = json.loads(self.meta)
        assert isinstance(value, dict)
        return value

    def to_json(self) -> dict[str, object]:
        return {
            "run_id": self.run_id,
            "seq": self.seq,
            "event_id": self.event_id,
            "task_id": self.task_id,
            "execution_id": self.execution_id,
            "attempt": self.attempt,
            "tool_call_id": self.tool_call_id,
            "kind": self.kind,
            "phase": self.phase,
            "payload": self.payload_value(),
            "meta": self.meta_value(),
            "at_ms": self.at_ms,
        }


def check_event(event: TraceEvent) -> None:
    """Raise ``CorruptRecord`` unless the stored ``event`` is what the store writes: its
    payload and meta JSON objects, its numbers integers."""
    where = f"run {event.run_id}: trace event {event.seq!r}"
    if not isinstance(event.seq, int) or not isinstance(event.kind, str):
        raise CorruptRecord(f"{where} has a field of the wrong type")
    for name in ("payload", "meta"):
        text = getattr(event, name)
        try:
            value = json.loads(text) if isinstance(text, str) else None
        except ValueError:
            value = None
        if not isinstance(value, dict):
            raise CorruptRecord(f"{where} has a {name} that is not a JSON object")


def _canonical(value: Mapping[str, object] | None, redactor: Redactor) -> str:
    return redactor.canonical(dict(value or {})).decode("ascii")


class Trace:
    """The events of one execution of a run, numbered as they are appended."""

    def __init__(
        self,
        run_id: str,
        task_id: str,
        execution_id: str,
        *,
        first_seq: int = 1,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.run_id = run_id
        self.task_id = task_id
        self.execution_id = execution_id
        self._next = first_seq
        self._clock = clock
        self._events: list[TraceEvent] = []
        self._first = first_seq
        self._flushed = first_seq - 1
        self._redactor = Redactor()  # the same keys and texts, event after event

    @property
    def next_seq(self) -> int:
        return self._next

    @property
    def last_seq(self) -> int:
        return self._next - 1

    def append(
        self,
        kind: str,
        *,
        attempt: int | None = None,
        phase: str | None = None,
        tool_call_id: str | None = None,
        payload: Mapping[str, object] | None = None,
        meta: Mapping[str, object] | None = None,
    ) -> TraceEvent:
        seq = self._next
        event = TraceEvent(
            run_id=self.run_id,
            seq=seq,
            event_id=f"{self.run_id}/{seq}",
            task_id=self.task_id,
            execution_id=self.execution_id,
            attempt=attempt,
            tool_call_id=tool_call_id,
            kind=kind,
            phase=phase,
            payload=_canonical(payload, self._redactor),
            meta=_canonical(meta, self._redactor),
            at_ms=self._clock(),
        )
        self._events.append(event)
        self._next += 1
        return event

    @property
    def events(self) -> list[TraceEvent]:
        """Every event of this execution, flushed or not (a copy of the list)."""
        return list(self._events)

    def pending(self) -> list[TraceEvent]:
        """Events not yet acknowledged by the store, oldest first."""
        return self._events[self._flushed + 1 - self._first :]  # numbered in order

    def mark_flushed(self, upto_seq: int) -> None:
        self._flushed = max(self._flushed, upto_seq)
