"""The run store's SQLite connections: how the file is opened and how every write and
read goes through them.

The database is opened private from the start (0600) and never through a planted link
(the file and the ones SQLite keeps beside it must be regular files), in WAL mode with
``synchronous=FULL``; reads and read-back acknowledgements have a connection of their own.
A read-only store is opened ``mode=ro`` (``immutable`` when no writer is active) and an
older schema is migrated in a private in-memory copy, never in place. Write transactions
are retried while another writer holds the lock and go through the group commit; any
failure of a write, a commit or an acknowledgement is a ``PersistenceError``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import random
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Self, TypeVar

from tidegate.errors import PersistenceError, UsageError
from tidegate.store.faults import StoreFaults
from tidegate.store.group import GroupCommit
from tidegate.store.schema import SCHEMA_VERSION, migrate

T = TypeVar("T")


class StoreConnection:
    """The writer and reader connections of one store file; ``faults`` injects failures."""

    def __init__(self, path: Path, *, faults: StoreFaults, busy_timeout_s: float) -> None:
        self.path = path
        self.faults = faults
        self.read_only = False
        self.busy_timeout_s = busy_timeout_s
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
    def _connect_read_only(cls, path: Path) -> Self:
        """A store that never writes (see ``RunStore.open_read_only``)."""
        store = cls.__new__(cls)
        store.path = path
        store.faults = StoreFaults()
        store.read_only = True
        store.busy_timeout_s = 30.0
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

    def _inject(self, points: Sequence[str], what: str) -> None:
        try:
            for point in points:
                self.faults.check(point)
        except OSError as exc:
            raise PersistenceError(f"{self.path}: could not {what}: {exc}") from exc

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
