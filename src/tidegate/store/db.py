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
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import socket
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from tidegate.errors import ErrorClass, PersistenceError, UsageError
from tidegate.flow.report import FlowReport
from tidegate.store.checkpoints import Checkpoint, CheckpointKey, seal
from tidegate.store.faults import StoreFaults
from tidegate.store.redact import redact_value
from tidegate.store.trace import TraceEvent, now_ms

T = TypeVar("T")

MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        seq INTEGER NOT NULL,
        repo TEXT NOT NULL,
        mode TEXT NOT NULL,
        status TEXT NOT NULL,
        error_class TEXT,
        failure_phase TEXT,
        attempts INTEGER NOT NULL,
        t0_ref TEXT,
        diff_sha256 TEXT,
        duration_s REAL NOT NULL,
        report_json TEXT NOT NULL
    );
    CREATE TABLE phase_events (
        run_id TEXT NOT NULL REFERENCES runs(run_id),
        seq INTEGER NOT NULL,
        attempt INTEGER NOT NULL,
        phase TEXT NOT NULL,
        effect TEXT NOT NULL,
        status TEXT NOT NULL,
        duration_ms REAL NOT NULL,
        detail TEXT NOT NULL,
        error_class TEXT,
        PRIMARY KEY (run_id, seq)
    );
    """,
    # 2: runs live from start to finish (status running/paused/...), the trace and its
    # projections, checkpoints, records and artifacts.
    """
    CREATE TABLE runs_v2 (
        run_id TEXT PRIMARY KEY,
        seq INTEGER NOT NULL UNIQUE,
        repo TEXT NOT NULL,
        task_id TEXT NOT NULL,
        kind TEXT NOT NULL DEFAULT 'engine',
        mode TEXT NOT NULL,
        status TEXT NOT NULL,
        error_class TEXT,
        failure_phase TEXT,
        attempts INTEGER NOT NULL DEFAULT 0,
        t0_ref TEXT,
        diff_sha256 TEXT,
        replay_hash TEXT,
        duration_s REAL,
        request_json TEXT,
        execution_id TEXT,
        pid INTEGER,
        pid_start TEXT,
        host TEXT,
        started_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL,
        report_json TEXT,
        acknowledged INTEGER NOT NULL DEFAULT 0
    );
    INSERT INTO runs_v2 (run_id, seq, repo, task_id, mode, status, error_class, failure_phase,
        attempts, t0_ref, diff_sha256, duration_s, started_ms, updated_ms, report_json,
        acknowledged)
        SELECT run_id, seq, repo, run_id, mode, status, error_class, failure_phase, attempts,
            t0_ref, diff_sha256, duration_s, 0, 0, report_json, 1 FROM runs;
    DROP TABLE runs;
    ALTER TABLE runs_v2 RENAME TO runs;
    CREATE INDEX runs_by_repo ON runs(repo, seq);
    ALTER TABLE phase_events ADD COLUMN task_id TEXT;
    ALTER TABLE phase_events ADD COLUMN execution_id TEXT;
    ALTER TABLE phase_events ADD COLUMN event_seq INTEGER;
    CREATE UNIQUE INDEX phase_events_by_event ON phase_events(run_id, event_seq);
    CREATE TABLE trace (
        run_id TEXT NOT NULL REFERENCES runs(run_id),
        seq INTEGER NOT NULL,
        event_id TEXT NOT NULL UNIQUE,
        task_id TEXT NOT NULL,
        execution_id TEXT NOT NULL,
        attempt INTEGER,
        tool_call_id TEXT,
        kind TEXT NOT NULL,
        phase TEXT,
        payload TEXT NOT NULL,
        meta TEXT NOT NULL,
        at_ms INTEGER NOT NULL,
        PRIMARY KEY (run_id, seq)
    );
    CREATE TABLE attempts (
        run_id TEXT NOT NULL REFERENCES runs(run_id),
        attempt INTEGER NOT NULL,
        execution_id TEXT NOT NULL,
        status TEXT NOT NULL,
        failure_phase TEXT,
        error_class TEXT,
        proposal_sha256 TEXT,
        candidate_tree TEXT,
        event_seq INTEGER NOT NULL,
        event_json TEXT NOT NULL,
        PRIMARY KEY (run_id, attempt)
    );
    CREATE TABLE tool_calls (
        run_id TEXT NOT NULL REFERENCES runs(run_id),
        tool_call_id TEXT NOT NULL,
        canonical_tool TEXT NOT NULL,
        input_sha256 TEXT NOT NULL,
        attempt INTEGER,
        execution_id TEXT NOT NULL,
        request_seq INTEGER NOT NULL,
        status TEXT NOT NULL,
        effects TEXT,
        result_sha256 TEXT,
        finish_seq INTEGER,
        PRIMARY KEY (run_id, tool_call_id)
    );
    CREATE TABLE checkpoints (
        run_id TEXT NOT NULL REFERENCES runs(run_id),
        seq INTEGER NOT NULL,
        event_seq INTEGER NOT NULL,
        reason TEXT NOT NULL,
        prev_hash TEXT,
        hash TEXT NOT NULL,
        mac TEXT NOT NULL,
        document TEXT NOT NULL,
        PRIMARY KEY (run_id, seq)
    );
    CREATE TABLE records (
        record_id INTEGER PRIMARY KEY AUTOINCREMENT,
        kind TEXT NOT NULL CHECK (kind IN ('memory', 'evidence')),
        key TEXT NOT NULL,
        run_id TEXT,
        task_id TEXT,
        value TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        at_ms INTEGER NOT NULL
    );
    CREATE INDEX records_by_key ON records(kind, key, record_id);
    CREATE TABLE artifacts (
        artifact_id TEXT PRIMARY KEY,
        run_id TEXT,
        kind TEXT NOT NULL,
        path TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        size INTEGER NOT NULL,
        media_type TEXT,
        at_ms INTEGER NOT NULL
    );
    CREATE INDEX artifacts_by_run ON artifacts(run_id, artifact_id);
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)
TERMINAL = frozenset({"succeeded", "failed", "conflict"})
"""Statuses of runs that ended (their final report is stored)."""
RESUMABLE = frozenset({"paused", "interrupted"})

_RUN_COLUMNS = (
    "run_id, seq, repo, task_id, kind, mode, status, error_class, failure_phase, attempts, "
    "t0_ref, diff_sha256, replay_hash, duration_s, execution_id, pid, pid_start, host, "
    "started_ms, updated_ms, report_json, acknowledged"
)


@dataclass(frozen=True)
class ProcessIdentity:
    """Who is working on a run: pid plus the process's start time, so a reused pid is not
    mistaken for the original holder."""

    pid: int
    start: str
    host: str

    @classmethod
    def current(cls) -> ProcessIdentity:
        return cls(os.getpid(), _start_time(os.getpid()) or "", socket.gethostname())

    def alive(self) -> bool:
        if self.host != socket.gethostname():
            return True  # another machine's process: cannot tell, assume it lives
        start = _start_time(self.pid)
        if start is not None:
            return start == self.start
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return not Path("/proc/self/stat").exists()  # /proc exists but not this pid: dead


def _start_time(pid: int) -> str | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


@dataclass(frozen=True)
class RunStart:
    """What the store learns when an execution of a run begins."""

    run_id: str
    repo: str
    task_id: str
    mode: str
    execution_id: str
    kind: str = "engine"
    request: Mapping[str, object] | None = None


@dataclass(frozen=True)
class StoredRun:
    """A run as the store sees it. ``status`` is derived: a ``running`` run whose process
    is gone is ``interrupted``; an ended run whose report was never acknowledged is
    ``failed`` with PERSISTENCE_ERROR (``stored_status`` keeps what the row says)."""

    run_id: str
    seq: int
    mode: str
    status: str
    error_class: str | None
    attempts: int
    duration_s: float
    report: FlowReport | None
    repo: str = ""
    task_id: str = ""
    kind: str = "engine"
    stored_status: str = ""
    failure_phase: str | None = None
    replay_hash: str | None = None
    execution_id: str | None = None
    holder: ProcessIdentity | None = None
    started_ms: int = 0
    updated_ms: int = 0
    acknowledged: bool = True


@dataclass(frozen=True)
class StoredAttempt:
    attempt: int
    execution_id: str
    status: str
    failure_phase: str | None
    error_class: str | None
    proposal_sha256: str | None
    candidate_tree: str | None
    event: dict[str, Any]


@dataclass(frozen=True)
class StoredToolCall:
    tool_call_id: str
    canonical_tool: str
    input_sha256: str
    attempt: int | None
    execution_id: str
    status: str
    effects: Any
    result_sha256: str | None
    request_seq: int
    finish_seq: int | None


class RunStore:
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
        try:
            if not path.exists():
                # Private from the start (SQLite gives its -wal and -shm files the same mode).
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))
            self._db = sqlite3.connect(path, timeout=busy_timeout_s, isolation_level=None)
            self._retrying(lambda: self._db.execute("PRAGMA journal_mode=WAL"))
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except (sqlite3.Error, OSError) as exc:
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
        # With no WAL file no writer is active, and ``immutable`` reads the file without
        # creating the -wal and -shm files a read-only WAL reader would otherwise leave.
        wal = path.with_name(path.name + "-wal")
        query = "mode=ro" if wal.exists() else "mode=ro&immutable=1"
        try:
            db = sqlite3.connect(f"{path.resolve().as_uri()}?{query}", uri=True, timeout=30)
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise UsageError(f"{path}: written by a newer tidegate (schema {version})")
            if version < SCHEMA_VERSION:
                memory = sqlite3.connect(":memory:", isolation_level=None)
                db.backup(memory)
                db.close()
                db = memory
                store._db = db
                store._migrate()
            else:
                db.isolation_level = None
                store._db = db
        except sqlite3.Error as exc:
            raise PersistenceError(f"{path}: cannot read the run store: {exc}") from exc
        return store

    # -- schema ---------------------------------------------------------------------------

    def _migrate(self) -> None:
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise UsageError(f"{self.path}: written by a newer tidegate (schema {version})")
        if version == SCHEMA_VERSION:
            return
        # Table rebuilds need foreign keys off (outside a transaction), checked at the end.
        self._db.execute("PRAGMA foreign_keys=OFF")
        try:
            self._retrying(lambda: self._db.execute("BEGIN IMMEDIATE"))
            try:
                current = self._db.execute("PRAGMA user_version").fetchone()[0]
                for number in range(current, SCHEMA_VERSION):
                    for statement in MIGRATIONS[number].split(";"):
                        if statement.strip():
                            self._db.execute(statement)
                    self._db.execute(f"PRAGMA user_version = {number + 1}")
                if self._db.execute("PRAGMA foreign_key_check").fetchall():
                    raise sqlite3.IntegrityError("foreign key check failed after migration")
                self._db.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
                raise
        finally:
            self._db.execute("PRAGMA foreign_keys=ON")

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
        """Run ``fn`` in one write transaction; any failure is a ``PersistenceError``."""
        if self.read_only:
            raise PersistenceError(f"{self.path}: opened read-only; cannot {what}")

        def attempt() -> T:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                result = fn(self._db)
                self._db.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
                raise
            return result

        try:
            return self._retrying(attempt)
        except (sqlite3.Error, OSError) as exc:
            raise PersistenceError(f"{self.path}: could not {what}: {exc}") from exc

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
            return self._db.execute(sql, tuple(params)).fetchall()
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

        def write(db: sqlite3.Connection) -> Checkpoint | None:
            _insert_events(db, events)
            sealed = None
            if checkpoint is not None:
                assert self.key is not None
                sealed = _insert_checkpoint(db, self.key, run_id, events, *checkpoint)
            if status is not None:
                db.execute(
                    "UPDATE runs SET status = ?, updated_ms = ? WHERE run_id = ?",
                    (status, now_ms(), run_id),
                )
            return sealed

        sealed = self.transaction(f"flush the trace of run {run_id}", write)
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

    def finish(self, run_id: str, report: FlowReport, events: Sequence[TraceEvent]) -> FlowReport:
        """Flush the last events and store the final report; it counts once acknowledged.

        Returns the report as stored (redacted). Raises ``PersistenceError`` when any step
        fails, including an acknowledgement after a successful commit."""
        stored = _redacted_report(report)
        text = stored.model_dump_json()
        self._inject(["trace.write", "report.write"], f"store the report of run {run_id}")

        def write(db: sqlite3.Connection) -> None:
            _upsert_report(db, stored, text)  # first: a run refused at bootstrap has no row yet
            _insert_events(db, events)

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
        row = self._db.execute(
            "SELECT 1 FROM trace WHERE run_id = ? AND seq = ?", (run_id, seq)
        ).fetchone()
        return row is not None

    def _checkpoint_hash(self, run_id: str, seq: int) -> str | None:
        row = self._db.execute(
            "SELECT hash FROM checkpoints WHERE run_id = ? AND seq = ?", (run_id, seq)
        ).fetchone()
        return None if row is None else str(row[0])

    def _report_digest(self, run_id: str) -> str | None:
        row = self._db.execute(
            "SELECT report_json FROM runs WHERE run_id = ?", (run_id,)
        ).fetchone()
        if row is None or row[0] is None:
            return None
        return hashlib.sha256(str(row[0]).encode()).hexdigest()

    # -- reading --------------------------------------------------------------------------

    def runs(self, limit: int = 50, repo: str | None = None) -> list[StoredRun]:
        where, params = ("WHERE repo = ? ", [repo]) if repo is not None else ("", [])
        rows = self.query(
            f"SELECT {_RUN_COLUMNS} FROM runs {where}ORDER BY seq DESC LIMIT ?",
            [*params, limit],
        )
        return [_stored(row) for row in rows]

    def get(self, run_id: str) -> StoredRun:
        """A run by id, or the newest with ``latest``."""
        if run_id == "latest":
            rows = self.query(f"SELECT {_RUN_COLUMNS} FROM runs ORDER BY seq DESC LIMIT 1")
        else:
            rows = self.query(f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?", [run_id])
        if not rows:
            raise UsageError(f"no recorded run {run_id!r} for this repository")
        return _stored(rows[0])

    def request(self, run_id: str) -> dict[str, Any] | None:
        rows = self.query("SELECT request_json FROM runs WHERE run_id = ?", [run_id])
        if not rows or rows[0][0] is None:
            return None
        value = json.loads(rows[0][0])
        return value if isinstance(value, dict) else None

    def events(self, run_id: str) -> list[TraceEvent]:
        rows = self.query(
            "SELECT run_id, seq, event_id, task_id, execution_id, attempt, tool_call_id, kind, "
            "phase, payload, meta, at_ms FROM trace WHERE run_id = ? ORDER BY seq",
            [run_id],
        )
        return [TraceEvent(*row) for row in rows]

    def checkpoints(self, run_id: str) -> list[Checkpoint]:
        rows = self.query(
            "SELECT run_id, seq, event_seq, reason, prev_hash, hash, mac, document "
            "FROM checkpoints WHERE run_id = ? ORDER BY seq",
            [run_id],
        )
        return [Checkpoint(*row) for row in rows]

    def attempts(self, run_id: str) -> list[StoredAttempt]:
        rows = self.query(
            "SELECT attempt, execution_id, status, failure_phase, error_class, proposal_sha256, "
            "candidate_tree, event_json FROM attempts WHERE run_id = ? ORDER BY attempt",
            [run_id],
        )
        return [
            StoredAttempt(
                attempt=r[0],
                execution_id=r[1],
                status=r[2],
                failure_phase=r[3],
                error_class=r[4],
                proposal_sha256=r[5],
                candidate_tree=r[6],
                event=json.loads(r[7]),
            )
            for r in rows
        ]

    def tool_calls(self, run_id: str) -> list[StoredToolCall]:
        rows = self.query(
            "SELECT tool_call_id, canonical_tool, input_sha256, attempt, execution_id, status, "
            "effects, result_sha256, request_seq, finish_seq FROM tool_calls WHERE run_id = ? "
            "ORDER BY request_seq",
            [run_id],
        )
        return [
            StoredToolCall(
                tool_call_id=r[0],
                canonical_tool=r[1],
                input_sha256=r[2],
                attempt=r[3],
                execution_id=r[4],
                status=r[5],
                effects=None if r[6] is None else json.loads(r[6]),
                result_sha256=r[7],
                request_seq=r[8],
                finish_seq=r[9],
            )
            for r in rows
        ]

    def integrity_check(self) -> str:
        return str(self.query("PRAGMA integrity_check")[0][0])

    def close(self) -> None:
        self._db.close()


# -- helpers writing inside a transaction ---------------------------------------------------


def _insert_events(db: sqlite3.Connection, events: Sequence[TraceEvent]) -> None:
    if not events:
        return
    # OR IGNORE: a flush whose commit succeeded but whose caller never learned so (an
    # interrupt between the two) is retried with the very same events.
    db.executemany(
        "INSERT OR IGNORE INTO trace VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                e.run_id,
                e.seq,
                e.event_id,
                e.task_id,
                e.execution_id,
                e.attempt,
                e.tool_call_id,
                e.kind,
                e.phase,
                e.payload,
                e.meta,
                e.at_ms,
            )
            for e in events
        ],
    )
    for event in events:
        project = _PROJECTIONS.get(event.kind)
        if project is not None:
            project(db, event)


def _project_phase(db: sqlite3.Connection, e: TraceEvent) -> None:
    payload, meta = e.payload_value(), e.meta_value()
    # OR IGNORE: the unique (run_id, event_seq) index makes a repeated flush a no-op.
    db.execute(
        "INSERT OR IGNORE INTO phase_events (run_id, seq, attempt, phase, effect, status, duration_ms, "
        "detail, error_class, task_id, execution_id, event_seq) VALUES (?, (SELECT "
        "COALESCE(MAX(seq), 0) + 1 FROM phase_events WHERE run_id = ?), ?, ?, ?, ?, ?, ?, ?, "
        "?, ?, ?)",
        (
            e.run_id,
            e.run_id,
            e.attempt or 0,
            payload["phase"],
            payload["effect"],
            payload["status"],
            int(meta.get("duration_us", 0)) / 1000,
            str(meta.get("detail", "")),
            payload.get("error_class"),
            e.task_id,
            e.execution_id,
            e.seq,
        ),
    )


def _project_attempt(db: sqlite3.Connection, e: TraceEvent) -> None:
    p = e.payload_value()
    event = {**p, "duration_ms": int(e.meta_value().get("duration_us", 0)) / 1000}
    db.execute(
        "INSERT OR REPLACE INTO attempts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            e.run_id,
            p["attempt"],
            e.execution_id,
            p["status"],
            p.get("failure_phase"),
            p.get("error_class"),
            p.get("proposal_sha256"),
            p.get("candidate_tree"),
            e.seq,
            json.dumps(event, sort_keys=True),
        ),
    )


def _project_tool_request(db: sqlite3.Connection, e: TraceEvent) -> None:
    p = e.payload_value()
    db.execute(
        "INSERT OR IGNORE INTO tool_calls (run_id, tool_call_id, canonical_tool, input_sha256, "
        "attempt, execution_id, request_seq, status) VALUES (?, ?, ?, ?, ?, ?, ?, 'requested')",
        (
            e.run_id,
            e.tool_call_id,
            p["canonical_tool"],
            p["input_sha256"],
            e.attempt,
            e.execution_id,
            e.seq,
        ),
    )


def _project_tool_finish(db: sqlite3.Connection, e: TraceEvent) -> None:
    p = e.payload_value()
    changed = db.execute(
        "UPDATE tool_calls SET status = ?, effects = ?, result_sha256 = ?, finish_seq = ? "
        "WHERE run_id = ? AND tool_call_id = ?",
        (
            p["status"],
            json.dumps(p.get("effects"), sort_keys=True),
            p.get("result_sha256"),
            e.seq,
            e.run_id,
            e.tool_call_id,
        ),
    ).rowcount
    if changed != 1:
        raise sqlite3.IntegrityError(f"tool call {e.tool_call_id} finished but was never requested")


_PROJECTIONS: dict[str, Callable[[sqlite3.Connection, TraceEvent], None]] = {
    "phase.finished": _project_phase,
    "attempt.finished": _project_attempt,
    "tool.requested": _project_tool_request,
    "tool.finished": _project_tool_finish,
}


def _insert_checkpoint(
    db: sqlite3.Connection,
    key: CheckpointKey,
    run_id: str,
    events: Sequence[TraceEvent],
    reason: str,
    state: Mapping[str, object],
) -> Checkpoint:
    row = db.execute(
        "SELECT seq, hash FROM checkpoints WHERE run_id = ? ORDER BY seq DESC LIMIT 1", (run_id,)
    ).fetchone()
    seq, prev = (1, None) if row is None else (int(row[0]) + 1, str(row[1]))
    event_seq = db.execute(
        "SELECT COALESCE(MAX(seq), 0) FROM trace WHERE run_id = ?", (run_id,)
    ).fetchone()[0]
    redacted = redact_value(dict(state))
    assert isinstance(redacted, dict)
    sealed = seal(
        key,
        run_id=run_id,
        seq=seq,
        event_seq=int(event_seq),
        reason=reason,
        prev_hash=prev,
        state=redacted,
    )
    db.execute(
        "INSERT INTO checkpoints VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            run_id,
            sealed.seq,
            sealed.event_seq,
            sealed.reason,
            sealed.prev_hash,
            sealed.hash,
            sealed.mac,
            sealed.document,
        ),
    )
    return sealed


def _redacted_report(report: FlowReport) -> FlowReport:
    return FlowReport.model_validate(redact_value(report.model_dump(mode="json")))


def _upsert_report(db: sqlite3.Connection, report: FlowReport, text: str) -> None:
    values = (
        report.status,
        report.error_class,
        report.failure_phase,
        report.attempts,
        report.t0_ref,
        report.diff_sha256,
        report.replay_hash,
        report.duration_s,
        text,
        now_ms(),
    )
    changed = db.execute(
        "UPDATE runs SET status = ?, error_class = ?, failure_phase = ?, attempts = ?, "
        "t0_ref = ?, diff_sha256 = ?, replay_hash = ?, duration_s = ?, report_json = ?, "
        "updated_ms = ?, acknowledged = 0 WHERE run_id = ?",
        (*values, report.run_id),
    ).rowcount
    if changed:
        return
    stamp = now_ms()
    db.execute(
        "INSERT INTO runs (run_id, seq, repo, task_id, mode, status, error_class, failure_phase, "
        "attempts, t0_ref, diff_sha256, replay_hash, duration_s, report_json, started_ms, "
        "updated_ms) VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM runs), ?, ?, ?, ?, ?, "
        "?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            report.run_id,
            report.repo,
            report.run_id,
            report.mode,
            *values[:-1],
            stamp,
            stamp,
        ),
    )


def _stored(row: tuple[Any, ...]) -> StoredRun:
    (
        run_id,
        seq,
        repo,
        task_id,
        kind,
        mode,
        status,
        error_class,
        failure_phase,
        attempts,
        _t0_ref,
        _diff,
        replay,
        duration,
        execution_id,
        pid,
        pid_start,
        host,
        started,
        updated,
        report_json,
        acknowledged,
    ) = row
    report = None if report_json is None else FlowReport.model_validate_json(report_json)
    holder = (
        ProcessIdentity(int(pid), str(pid_start or ""), str(host or ""))
        if pid is not None
        else None
    )
    derived = str(status)
    if derived == "running" and (holder is None or not holder.alive()):
        derived = "interrupted"
    if derived in TERMINAL and not acknowledged:
        derived = "failed"
        error_class = ErrorClass.PERSISTENCE_ERROR.value
        if report is not None:
            report = report.model_copy(
                update={
                    "status": "failed",
                    "error_class": error_class,
                    "message": "the final report was written but never acknowledged by the "
                    f"store (it said: {report.status}: {report.message})",
                }
            )
    return StoredRun(
        run_id=str(run_id),
        seq=int(seq),
        mode=str(mode),
        status=derived,
        error_class=None if error_class is None else str(error_class),
        attempts=int(attempts),
        duration_s=float(duration or 0.0),
        report=report,
        repo=str(repo),
        task_id=str(task_id),
        kind=str(kind),
        stored_status=str(status),
        failure_phase=None if failure_phase is None else str(failure_phase),
        replay_hash=None if replay is None else str(replay),
        execution_id=None if execution_id is None else str(execution_id),
        holder=holder,
        started_ms=int(started),
        updated_ms=int(updated),
        acknowledged=bool(acknowledged),
    )
