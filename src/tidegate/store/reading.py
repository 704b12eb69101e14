"""Reading recorded runs: the one reader behind ``tidegate runs`` and ``tidegate read``.

``store.locate`` finds the repository and the state root; this module opens a store
read-only (``mode=ro``, and ``immutable`` when no
writer is active; an older schema is migrated in a private in-memory copy, a newer one
refused), derives each run's status as the store does, and builds one run's view: its
phases, attempts, effects and evidence (the checkpoint chain verified and the replay hash
recomputed by ``store.evidence``). Nothing is ever written.

It runs on the standard library's core (no pathlib, typing, dataclasses, hashlib or
subprocess: ``read`` starts within a few times the interpreter's own start). The regular
case is answered here; whatever is not regular -- a path git spells oddly, a state root
or repository the engine refuses, a row or record that is not what the store writes, a
report the report model would convert -- is put to the engine's own function, so the
answer or the one-line error is the engine's: ``workspace.repo.discover``,
``store.state_root.resolve_state_root``, ``store.rows.stored_run``, the report model,
the run store's record readers.
"""

from __future__ import annotations

import os

from tidegate.errors import UsageError

try:  # the interpreter's own SHA-256 (no OpenSSL to load); hashlib where there is none
    from _sha2 import sha256 as sha256  # type: ignore[import-not-found, unused-ignore]
except ImportError:
    try:
        from _sha256 import sha256 as sha256  # type: ignore[import-not-found, no-redef, unused-ignore]
    except ImportError:
        from hashlib import sha256 as sha256  # type: ignore[assignment, unused-ignore]

TYPE_CHECKING = False  # ``read`` does not import typing
if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable
    from typing import Any

try:  # sqlite3 itself is _sqlite3 plus datetime adapters this reader never uses
    from _sqlite3 import Error as SqliteError  # type: ignore[import-not-found, unused-ignore]
    from _sqlite3 import connect  # type: ignore[import-not-found, unused-ignore]
except ImportError:  # pragma: no cover - an interpreter that only has the package
    from sqlite3 import Error as SqliteError
    from sqlite3 import connect

SCHEMA_VERSION = 5
"""The store schema read directly (``store.schema.SCHEMA_VERSION``; a unit test keeps the
two equal). An older store is migrated in memory; a newer one is refused."""
STATE_ROOT_ENV = "TIDEGATE_STATE_ROOT"
STORE_FILE = "runs.sqlite3"
KEY_FILE = "checkpoint.key"
TERMINAL = frozenset({"succeeded", "failed", "conflict", "held"})
"""Statuses of runs that ended (their final report is stored); ``held``: verified and kept,
not applied (``tidegate apply`` lands it later, ``store.landings`` says what became of it)."""
RESUMABLE = frozenset({"paused", "interrupted"})
KNOWN_STATUSES = TERMINAL | RESUMABLE | {"running"}
"""Every status the store writes; a row holding any other is corrupt."""
RUN_COLUMNS = (
    "run_id, seq, repo, task_id, kind, mode, status, error_class, failure_phase, attempts, "
    "t0_ref, diff_sha256, replay_hash, duration_s, execution_id, pid, pid_start, host, "
    "started_ms, updated_ms, report_json, acknowledged"
)
"""The ``runs`` columns every reader selects, in this order (``store.rows`` too)."""
CHECKPOINT_ROW = "run_id, seq, event_seq, reason, prev_hash, hash, mac, document, encoding"
"""The ``checkpoints`` columns ``chain_rows.rebuild`` reads, in its order."""
CHECKPOINT_TYPES: tuple[type | tuple[type, ...], ...] = (
    str, int, int, str, (str, type(None)), str, str, str, str,
)  # fmt: skip
"""The Python types of a ``checkpoints`` row as the store writes it (SQLite itself would
keep anything in any column)."""
LAST_LANDING_SQL = (
    "(SELECT action FROM landings l WHERE l.run_id = runs.run_id ORDER BY l.seq DESC LIMIT 1)"
)
"""The last landing action (``store.landings``) of the ``runs`` row a query selects, or
NULL: applied, discarded or undone."""


class Irregular(Exception):
    """Not what the store writes, or not what this reader answers itself: the engine's own
    function is asked (and answers, or raises its one-line error)."""


class Store:
    """One repository's store, open read-only, and the state root's key (None: none, or one
    the engine would not load)."""

    def __init__(self, db: sqlite3.Connection, secret: bytes | None, path: str) -> None:
        self.db, self.secret, self.path = db, secret, path

    def rows(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
        return list(self.db.execute(sql, params).fetchall())


def opened(state: str, directory: str) -> Store | None:
    """The store in a repository's ``directory`` under the state root, or None when
    nothing was recorded there."""
    path = os.path.join(directory, STORE_FILE)
    if not os.path.isdir(directory) or not os.path.isfile(path):
        return None
    key_path = os.path.join(state, KEY_FILE)
    secret = _load_key(key_path) if os.path.isfile(key_path) else None
    return Store(_open(path), secret, path)


def _open(path: str) -> sqlite3.Connection:
    """The store opened read-only: ``immutable`` when no writer is active (no -wal file),
    so reading leaves no -wal or -shm file behind; an older schema migrated in memory."""
    query = "mode=ro" if os.path.exists(path + "-wal") else "mode=ro&immutable=1"
    try:
        db = connect(f"{_file_uri(os.path.realpath(path))}?{query}", uri=True, timeout=30)
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            db.close()
            raise UsageError(f"{path}: written by a newer tidegate (schema {version})")
        if version < SCHEMA_VERSION:
            db = _migrated(db, path)
    except SqliteError as exc:
        from tidegate.errors import PersistenceError

        raise PersistenceError(f"{path}: cannot read the run store: {exc}") from exc
    return db


def _migrated(db: sqlite3.Connection, path: str) -> sqlite3.Connection:
    """A private in-memory copy of an older store, brought to this schema."""
    from pathlib import Path

    from tidegate.store.schema import migrate

    memory = connect(":memory:", isolation_level=None)
    db.backup(memory)
    db.close()

    def once(fn: Callable[[], Any]) -> Any:
        return fn()

    migrate(memory, Path(path), once)
    return memory


def _file_uri(path: str) -> str:
    """``pathlib.Path(path).as_uri()`` for an absolute POSIX path."""
    safe = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~/"
    raw = os.fsencode(path)
    if raw.startswith(b"//"):  # pathlib spells these its own way
        from pathlib import Path

        return Path(path).as_uri()
    return "file://" + "".join(chr(b) if b in safe else f"%{b:02X}" for b in raw)


def _load_key(path: str) -> bytes | None:
    """``CheckpointKey.load``, None where it raises (reading still works; checkpoints then
    show as unverifiable)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if (info.st_mode & 0o170000) != 0o100000 or info.st_mode & 0o077:
            return None
        raw = os.read(fd, 128)
    finally:
        os.close(fd)
    try:
        secret = bytes.fromhex(raw.decode("ascii").strip())
    except ValueError:
        return None
    return secret if len(secret) == 32 else None
