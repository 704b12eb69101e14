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

The schema and its migrations are in ``schema``, the records read back and their rows in
``rows``, the SQL each write transaction runs in ``writes``.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import random
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from tidegate.errors import PersistenceError, UsageError
from tidegate.store.chain_rows import ChainTip
from tidegate.store.checkpoints import Checkpoint, CheckpointKey
from tidegate.store.corrupt import CorruptRecord
from tidegate.store.faults import StoreFaults
from tidegate.store.group import GroupCommit, QueuedWrite
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
from tidegate.store.schema import MIGRATIONS, SCHEMA_VERSION, migrate
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

T = TypeVar("T")


class RunStore(RecordReads):
    """One repository's run store. ``key`` signs checkpoints; ``faults`` injects failures."""

    def __init__(
        self,
        path: Path,
        *,
        key: CheckpointKey | None = None,
        faults: StoreFaults | None = None,
        busy_timeout_s: float = 30.0,
    ) -> None:
        self.path = path
        self.key = key
        self.faults = faults if faults is not None else StoreFaults.from_env()
        self.read_only = False
        self.busy_timeout_s = busy_timeout_s
        self._tips: dict[str, ChainTip] = {}
        self._redactor = Redactor()
        self._read_upto: dict[str, int] = {}
        created = False
        try:
            _refuse_links(path)
            if not path.exists():
                # Private from the start (SQLite gives its -wal and -shm files the same mode).
                try:
                    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
                    os.close(os.open(path, flags, 0o600))
                    created = True
                except FileExistsError:
                    pass  # another process made it between the check and here: open theirs
            self._db = sqlite3.connect(
                path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
            )
            self._lock = threading.RLock()
            self._group = GroupCommit(self._db, self._lock, self._retrying)
            self._retrying(lambda: self._db.execute("PRAGMA journal_mode=WAL"))
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._migrate()
            # Reads and read-back acknowledgements go through a second connection: they
            # see what is committed, and need not wait for another thread's commit.
            self._reader = sqlite3.connect(
                path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
            )
            self._read_lock = threading.RLock()
        except (sqlite3.Error, OSError) as exc:
            with contextlib.suppress(OSError):
                if created and path.stat().st_size == 0:  # nothing in it: leave no empty store
                    path.unlink()
            raise PersistenceError(f"{path}: cannot open the run store: {exc}") from exc

    @classmethod
    def open_read_only(cls, path: Path, *, key: CheckpointKey | None = None) -> RunStore:
        """A store that never writes: opened ``mode=ro``; an older schema is migrated in a
        private in-memory copy, never in place."""
        store = cls.__new__(cls)
        store.path = path
        store.key = key
        store.faults = StoreFaults()
        store.read_only = True
        store.busy_timeout_s = 30.0
        store._tips = {}
        store._redactor = Redactor()
        store._read_upto = {}
        store._lock = store._read_lock = threading.RLock()
        # With no WAL file no writer is active, and ``immutable`` reads the file without
        # creating the -wal and -shm files a read-only WAL reader would otherwise leave.
        wal = path.with_name(path.name + "-wal")
        query = "mode=ro" if wal.exists() else "mode=ro&immutable=1"
        try:
            db = sqlite3.connect(
                f"{path.resolve().as_uri()}?{query}", uri=True, timeout=30, check_same_thread=False
            )
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise UsageError(f"{path}: written by a newer tidegate (schema {version})")
            if version < SCHEMA_VERSION:
                memory = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
                db.backup(memory)
                db.close()
                db = memory
                store._db = store._reader = db
                store._migrate()
            else:
                db.isolation_level = None
                store._db = store._reader = db
        except sqlite3.Error as exc:
            raise PersistenceError(f"{path}: cannot read the run store: {exc}") from exc
        return store

    # -- schema ---------------------------------------------------------------------------

    def _migrate(self) -> None:
        migrate(self._db, self.path, self._retrying)

    # -- transactions ---------------------------------------------------------------------

    def _retrying(self, fn: Callable[[], T]) -> T:
        """Run ``fn``, retrying while SQLite reports another writer holds the lock."""
        deadline = time.monotonic() + self.busy_timeout_s
        delay = 0.005
        while True:
            try:
                return fn()
            except sqlite3.OperationalError as exc:
                busy = "locked" in str(exc) or "busy" in str(exc)
                if not busy or time.monotonic() > deadline:
                    raise
            time.sleep(delay * (1 + random.random()))
            delay = min(delay * 2, 0.2)

    def transaction(self, what: str, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` in a write transaction -- with the writes other threads hand in at the
        same time (``GroupCommit``) -- committed when this returns; any failure of the
        write or of the commit is a ``PersistenceError``."""
        if self.read_only:
            raise PersistenceError(f"{self.path}: opened read-only; cannot {what}")

        try:
            result: T = self._group.run(fn)
        except (sqlite3.Error, OSError) as exc:
            raise PersistenceError(f"{self.path}: could not {what}: {exc}") from exc
        return result

    def acknowledge(self, what: str, point: str, check: Callable[[], bool]) -> None:
        """Confirm a committed write by reading it back; a failure here still fails the
        caller, even though the write itself committed."""
        try:
            self.faults.check(point)
            ok = check()
        except (sqlite3.Error, OSError) as exc:
            raise PersistenceError(f"{self.path}: {what} was not acknowledged: {exc}") from exc
        if not ok:
            raise PersistenceError(f"{self.path}: {what} was not acknowledged: read-back differs")

    def query(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        try:
            with self._read_lock:
                return self._reader.execute(sql, tuple(params)).fetchall()
        except sqlite3.Error as exc:
            raise PersistenceError(f"{self.path}: could not read the run store: {exc}") from exc

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

    def _inject(self, points: Sequence[str], what: str) -> None:
        try:
            for point in points:
                self.faults.check(point)
        except OSError as exc:
            raise PersistenceError(f"{self.path}: could not {what}: {exc}") from exc

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

    # -- reading --------------------------------------------------------------------------

    def integrity_check(self) -> str:
        return str(self.query("PRAGMA integrity_check")[0][0])

    def close(self) -> None:
        with self._lock, self._read_lock:
            self._reader.close()
            self._db.close()


_SQLITE_FILES = ("", "-wal", "-shm", "-journal")
"""The database and the files SQLite keeps beside it, which it opens following links."""


def _refuse_links(path: Path) -> None:
    """Refuse a store whose database, or a file SQLite keeps beside it, is anything but a
    regular file (a planted link would take SQLite's writes elsewhere). The directory is
    tidegate's own (0700, made without following a link), so what is checked here stays."""
    for suffix in _SQLITE_FILES:
        name = path.with_name(path.name + suffix)
        try:
            mode = name.lstat().st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(mode):
            what = "a symlink" if stat.S_ISLNK(mode) else "not a regular file"
            raise OSError(errno.ELOOP, f"{name.name} is {what}; not followed")


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
