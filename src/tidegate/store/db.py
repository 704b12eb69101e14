"""The run store: SQLite in WAL mode with versioned migrations.

Tables: ``runs`` (one row per run, its status and final report), ``trace`` (the
append-only events), ``phase_events``, ``attempts`` and ``tool_calls`` (projections of
the trace written in the same transaction as the events they come from),
``checkpoints`` (hash-chained and signed), ``records`` (memory and evidence) and
``artifacts`` (an index of files kept for a run).

Writes are transactions (``BEGIN IMMEDIATE``, retried while another writer holds the
lock) committed with ``synchronous=FULL``: durable when they return. Each write is then
acknowledged by reading back what it wrote; a write that fails, or commits but cannot be
acknowledged, raises ``PersistenceError``. A final report counts only once acknowledged:
until then readers see the run as failed with PERSISTENCE_ERROR. Everything is redacted
before it is written. Read-only stores never write, not even a migration.

The connections, transactions and acknowledgement are ``connection``'s; the schema and its
migrations are in ``schema``, the records read back and their rows in ``rows``, the SQL
each write transaction runs in ``writes``.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tidegate.errors import PersistenceError
from tidegate.store.chain_rows import ChainTip
from tidegate.store.checkpoints import Checkpoint, CheckpointKey
from tidegate.store.connection import StoreConnection
from tidegate.store.corrupt import CorruptRecord
from tidegate.store.faults import StoreFaults
from tidegate.store.group import QueuedWrite
from tidegate.store.holder import ProcessIdentity
from tidegate.store.reading import RESUMABLE, TERMINAL
from tidegate.store.record_reads import RecordReads
from tidegate.store.redact import Redactor
from tidegate.store.rows import (
    RunStart,
    StoredAttempt,
    StoredRun,
    StoredToolCall,
)
from tidegate.store.schema import MIGRATIONS, SCHEMA_VERSION
from tidegate.store.trace import TraceEvent, now_ms
from tidegate.store.writes import (
    insert_checkpoint,
    insert_events,
    redacted_report,
    upsert_report,
)
from tidegate.text.sanitize import redact_value

if TYPE_CHECKING:  # the report model (pydantic) is loaded only by code that uses it
    from tidegate.records.report import FlowReport

__all__ = [
    "MIGRATIONS",
    "RESUMABLE",
    "SCHEMA_VERSION",
    "TERMINAL",
    "CorruptRecord",
    "ProcessIdentity",
    "RunStart",
    "RunStore",
    "StoredAttempt",
    "StoredRun",
    "StoredToolCall",
]


class RunStore(StoreConnection, RecordReads):
    """One repository's run store. ``key`` signs checkpoints; ``faults`` injects failures."""

    def __init__(
        self,
        path: Path,
        *,
        key: CheckpointKey | None = None,
        faults: StoreFaults | None = None,
        busy_timeout_s: float = 30.0,
    ) -> None:
        faults = faults if faults is not None else StoreFaults.from_env()
        super().__init__(path, faults=faults, busy_timeout_s=busy_timeout_s)
        self._keep(key)

    @classmethod
    def open_read_only(cls, path: Path, *, key: CheckpointKey | None = None) -> RunStore:
        """A store that never writes: opened ``mode=ro``; an older schema is migrated in a
        private in-memory copy, never in place."""
        store = cls._connect_read_only(path)
        store._keep(key)
        return store

    def _keep(self, key: CheckpointKey | None) -> None:
        """What the writes keep between transactions: the key, each run's chain tip, the
        redactor, and how far each run's trace was read back."""
        self.key = key
        self._tips: dict[str, ChainTip] = {}
        self._redactor = Redactor()
        self._read_upto: dict[str, int] = {}

    # -- writing runs ---------------------------------------------------------------------

    def begin_run(self, start: RunStart, *, resumed: bool = False) -> int:
        """Mark the run as running in this process; return the next trace sequence number.

        A new run gets a row; a resumed one must already have one."""
        holder = ProcessIdentity.current()
        request = (
            json.dumps(redact_value(dict(start.request)), sort_keys=True)
            if start.request is not None
            else None
        )

        def write(db: sqlite3.Connection) -> int:
            stamp = now_ms()
            if resumed:
                changed = db.execute(
                    "UPDATE runs SET status = 'running', execution_id = ?, pid = ?, "
                    "pid_start = ?, host = ?, updated_ms = ?, acknowledged = 0 WHERE run_id = ?",
                    (
                        start.execution_id,
                        holder.pid,
                        holder.start,
                        holder.host,
                        stamp,
                        start.run_id,
                    ),
                ).rowcount
                if changed != 1:
                    raise sqlite3.IntegrityError(f"no run {start.run_id} to resume")
            else:
                db.execute(
                    "INSERT INTO runs (run_id, seq, repo, task_id, kind, mode, status, "
                    "request_json, execution_id, pid, pid_start, host, started_ms, updated_ms) "
                    "VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM runs), ?, ?, ?, ?, "
                    "'running', ?, ?, ?, ?, ?, ?, ?)",
                    (
                        start.run_id,
                        start.repo,
                        start.task_id,
                        start.kind,
                        start.mode,
                        request,
                        start.execution_id,
                        holder.pid,
                        holder.start,
                        holder.host,
                        stamp,
                        stamp,
                    ),
                )
            row = db.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM trace WHERE run_id = ?", (start.run_id,)
            ).fetchone()
            return int(row[0]) + 1

        return self.transaction(f"record the start of run {start.run_id}", write)

    def flush(
        self,
        run_id: str,
        events: Sequence[TraceEvent],
        *,
        checkpoint: tuple[str, Mapping[str, object]] | None = None,
        status: str | None = None,
    ) -> Checkpoint | None:
        """Make ``events`` durable, with their projections, an optional checkpoint
        (``(reason, state)``, sealed here and chained to the run's last one) and an
        optional status change, in one transaction; then acknowledge it."""
        if checkpoint is not None and self.key is None:
            raise PersistenceError(f"{self.path}: no checkpoint key; cannot write a checkpoint")
        points = ["trace"] + (["checkpoint"] if checkpoint is not None else [])
        self._inject([f"{p}.write" for p in points], f"flush the trace of run {run_id}")

        tips: list[ChainTip] = []

        def write(db: sqlite3.Connection) -> Checkpoint | None:
            insert_events(db, events)
            sealed = None
            tips.clear()
            if checkpoint is not None:
                assert self.key is not None
                reason, state = checkpoint
                sealed, tip = insert_checkpoint(
                    db, self.key, run_id, reason, state, self._tips.get(run_id), self._redactor
                )
                tips.append(tip)
            if status is not None:
                db.execute(
                    "UPDATE runs SET status = ?, updated_ms = ? WHERE run_id = ?",
                    (status, now_ms(), run_id),
                )
            return sealed

        sealed = self.transaction(f"flush the trace of run {run_id}", write)
        if tips:  # committed: the next checkpoint of the run is a delta against this one
            self._tips[run_id] = tips[0]
        last = max((e.seq for e in events), default=None)
        if last is not None:
            self.acknowledge(
                f"the trace of run {run_id} up to event {last}",
                "trace.ack",
                lambda: self._has_event(run_id, last),
            )
        if sealed is not None:
            self.acknowledge(
                f"checkpoint {sealed.seq} of run {run_id}",
                "checkpoint.ack",
                lambda: self._checkpoint_hash(run_id, sealed.seq) == sealed.hash,
            )
        return sealed

    def queue_flush(self, run_id: str, events: Sequence[TraceEvent]) -> QueuedFlush:
        """Hand ``events`` in for the next group commit and return at once, for a producer
        that must not stall on each fsync; ``QueuedFlush.wait`` returns once they are
        durable and acknowledged (as ``flush`` does), or raises ``PersistenceError``."""
        if self.read_only:
            raise PersistenceError(f"{self.path}: opened read-only; cannot flush run {run_id}")
        self._inject(["trace.write"], f"flush the trace of run {run_id}")
        queued = self._group.submit(lambda db: insert_events(db, events))
        return QueuedFlush(self, run_id, max((e.seq for e in events), default=None), queued)

    def finish(self, run_id: str, report: FlowReport, events: Sequence[TraceEvent]) -> FlowReport:
        """Flush the last events and store the final report; it counts once acknowledged.

        Returns the report as stored (redacted). Raises ``PersistenceError`` when any step
        fails, including an acknowledgement after a successful commit."""
        stored = redacted_report(report)
        text = stored.model_dump_json()
        self._inject(["trace.write", "report.write"], f"store the report of run {run_id}")

        def write(db: sqlite3.Connection) -> None:
            upsert_report(db, stored, text)  # first: a run refused at bootstrap has no row yet
            insert_events(db, events)

        self.transaction(f"store the report of run {run_id}", write)
        last = max((e.seq for e in events), default=None)
        if last is not None:
            self.acknowledge(
                f"the trace of run {run_id}", "trace.ack", lambda: self._has_event(run_id, last)
            )
        digest = hashlib.sha256(text.encode()).hexdigest()
        self.acknowledge(
            f"the report of run {run_id}",
            "report.ack",
            lambda: self._report_digest(run_id) == digest,
        )
        self.transaction(
            f"acknowledge the report of run {run_id}",
            lambda db: db.execute("UPDATE runs SET acknowledged = 1 WHERE run_id = ?", (run_id,)),
        )
        return stored

    def record(self, report: FlowReport) -> None:
        """Store a whole run at once (a run that had no trace, e.g. refused at bootstrap)."""
        self.finish(report.run_id, report, [])

    def set_status(self, run_id: str, status: str) -> None:
        self.transaction(
            f"set the status of run {run_id}",
            lambda db: db.execute(
                "UPDATE runs SET status = ?, updated_ms = ? WHERE run_id = ?",
                (status, now_ms(), run_id),
            ),
        )

    # -- read-back -----------------------------------------------------------------------

    def _has_event(self, run_id: str, seq: int) -> bool:
        with self._read_lock:
            row = self._reader.execute(
                "SELECT 1 FROM trace WHERE run_id = ? AND seq = ?", (run_id, seq)
            ).fetchone()
        return row is not None

    def _trace_reaches(self, run_id: str, seq: int) -> bool:
        """Whether the committed trace of the run reaches event ``seq``: read back once for
        a whole batch of queued flushes (the highest event read is remembered)."""
        if self._read_upto.get(run_id, 0) >= seq:
            return True
        with self._read_lock:
            row = self._reader.execute(
                "SELECT MAX(seq) FROM trace WHERE run_id = ?", (run_id,)
            ).fetchone()
        self._read_upto[run_id] = int(row[0] or 0)
        return self._read_upto[run_id] >= seq

    def _checkpoint_hash(self, run_id: str, seq: int) -> str | None:
        with self._read_lock:
            row = self._reader.execute(
                "SELECT hash FROM checkpoints WHERE run_id = ? AND seq = ?", (run_id, seq)
            ).fetchone()
        return None if row is None else str(row[0])

    def _report_digest(self, run_id: str) -> str | None:
        with self._read_lock:
            row = self._reader.execute(
                "SELECT report_json FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
        if row is None or row[0] is None:
            return None
        return hashlib.sha256(str(row[0]).encode()).hexdigest()


class QueuedFlush:
    """Events handed to ``RunStore.queue_flush``; ``wait`` until they are on disk."""

    def __init__(self, store: RunStore, run_id: str, last: int | None, queued: QueuedWrite):
        self._store, self._run_id, self._last, self._queued = store, run_id, last, queued

    def wait(self) -> None:
        """Return once the batch holding these events committed and the last one reads
        back; ``PersistenceError`` otherwise."""
        store, run_id, last = self._store, self._run_id, self._last
        try:
            self._queued.wait()
        except (sqlite3.Error, OSError) as exc:
            raise PersistenceError(
                f"{store.path}: could not flush the trace of run {run_id}: {exc}"
            ) from exc
        if last is not None:
            store.acknowledge(
                f"the trace of run {run_id} up to event {last}",
                "trace.ack",
                lambda: store._trace_reaches(run_id, last),
            )
