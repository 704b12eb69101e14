"""The run store: SQLite in WAL mode, versioned migrations, one row per run and one per
phase event. Reports are redacted before they are written; reads never write."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from tidegate.errors import UsageError
from tidegate.flow.report import FlowReport
from tidegate.store.redact import redact

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
)


@dataclass(frozen=True)
class StoredRun:
    run_id: str
    seq: int
    mode: str
    status: str
    error_class: str | None
    attempts: int
    duration_s: float
    report: FlowReport


class RunStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._db = sqlite3.connect(path, timeout=30, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._migrate()

    def _migrate(self) -> None:
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version > len(MIGRATIONS):
            raise UsageError(f"{self.path}: written by a newer tidegate (schema {version})")
        for number in range(version, len(MIGRATIONS)):
            self._db.execute("BEGIN IMMEDIATE")
            for statement in MIGRATIONS[number].split(";"):
                if statement.strip():
                    self._db.execute(statement)
            self._db.execute(f"PRAGMA user_version = {number + 1}")
            self._db.execute("COMMIT")

    def record(self, report: FlowReport) -> None:
        """Store the run and its phase events in one transaction (durable on return)."""
        data = json.loads(redact(report.model_dump_json()))
        stored = FlowReport.model_validate(data)
        self._db.execute("BEGIN IMMEDIATE")
        try:
            seq = self._db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM runs").fetchone()[0]
            self._db.execute(
                "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    stored.run_id,
                    seq,
                    stored.repo,
                    stored.mode,
                    stored.status,
                    stored.error_class,
                    stored.failure_phase,
                    stored.attempts,
                    stored.t0_ref,
                    stored.diff_sha256,
                    stored.duration_s,
                    stored.model_dump_json(),
                ),
            )
            self._db.executemany(
                "INSERT INTO phase_events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        stored.run_id,
                        i,
                        e.attempt,
                        e.phase,
                        e.effect,
                        e.status,
                        e.duration_ms,
                        e.detail,
                        e.error_class,
                    )
                    for i, e in enumerate(stored.phases, start=1)
                ],
            )
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def runs(self, limit: int = 50) -> list[StoredRun]:
        rows = self._db.execute(
            "SELECT run_id, seq, mode, status, error_class, attempts, duration_s, report_json"
            " FROM runs ORDER BY seq DESC LIMIT ?",
            (limit,),
        ).fetchall()
        return [_stored(row) for row in rows]

    def get(self, run_id: str) -> StoredRun:
        """A run by id, or the newest with ``latest``."""
        query = (
            "SELECT run_id, seq, mode, status, error_class, attempts, duration_s, report_json"
            " FROM runs "
        )
        if run_id == "latest":
            row = self._db.execute(query + "ORDER BY seq DESC LIMIT 1").fetchone()
        else:
            row = self._db.execute(query + "WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise UsageError(f"no recorded run {run_id!r} for this repository")
        return _stored(row)

    def close(self) -> None:
        self._db.close()


def _stored(row: tuple[object, ...]) -> StoredRun:
    run_id, seq, mode, status, error_class, attempts, duration, report = row
    return StoredRun(
        run_id=str(run_id),
        seq=int(str(seq)),
        mode=str(mode),
        status=str(status),
        error_class=None if error_class is None else str(error_class),
        attempts=int(str(attempts)),
        duration_s=float(str(duration)),
        report=FlowReport.model_validate_json(str(report)),
    )
