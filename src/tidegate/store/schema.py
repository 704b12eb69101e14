"""The run store's schema: versioned migrations, applied in order in one transaction.

``PRAGMA user_version`` holds the number of migrations a database has had. A database
written by a newer tidegate (a higher version) is refused rather than guessed at.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from pathlib import Path

from tidegate.errors import UsageError

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
    # 3: each run's committed checkpoint head (count and last hash, signed), rewritten in
    # the transaction that inserts a checkpoint, so removing the last ones shows. Runs
    # recorded before it get no head: their chains read as unverifiable, never as verified.
    """
    CREATE TABLE checkpoint_heads (
        run_id TEXT PRIMARY KEY REFERENCES runs(run_id),
        count INTEGER NOT NULL,
        last_hash TEXT NOT NULL,
        mac TEXT NOT NULL
    );
    """,
    # 4: a checkpoint row holds its whole document (``full``) or only what changed since
    # the previous checkpoint (``delta``); see ``chain_rows``. Older rows are all whole.
    """
    ALTER TABLE checkpoints ADD COLUMN encoding TEXT NOT NULL DEFAULT 'full';
    """,
    # 5: what became of a run's change after the run (``store.landings``): a held change
    # applied later or discarded, a landed one undone. Append-only; the last row stands.
    # Runs recorded before it have none (a run that succeeded landed by its APPLY_BACK).
    """
    CREATE TABLE landings (
        run_id TEXT NOT NULL REFERENCES runs(run_id),
        seq INTEGER NOT NULL,
        action TEXT NOT NULL CHECK (action IN ('applied', 'discarded', 'undone')),
        detail TEXT NOT NULL,
        at_ms INTEGER NOT NULL,
        PRIMARY KEY (run_id, seq)
    );
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


def migrate(
    db: sqlite3.Connection,
    path: Path,
    retrying: Callable[[Callable[[], sqlite3.Cursor]], sqlite3.Cursor],
) -> None:
    """Bring ``db`` (the store at ``path``) up to ``SCHEMA_VERSION``. ``retrying`` runs a
    statement again while another writer holds the lock."""
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise UsageError(f"{path}: written by a newer tidegate (schema {version})")
    if version == SCHEMA_VERSION:
        return
    # Table rebuilds need foreign keys off (outside a transaction), checked at the end.
    db.execute("PRAGMA foreign_keys=OFF")
    try:
        retrying(lambda: db.execute("BEGIN IMMEDIATE"))
        try:
            current = db.execute("PRAGMA user_version").fetchone()[0]
            for number in range(current, SCHEMA_VERSION):
                for statement in MIGRATIONS[number].split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute(f"PRAGMA user_version = {number + 1}")
            if db.execute("PRAGMA foreign_key_check").fetchall():
                raise sqlite3.IntegrityError("foreign key check failed after migration")
            db.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise
    finally:
        db.execute("PRAGMA foreign_keys=ON")
