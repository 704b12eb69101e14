"""Group commit: writes that arrive while a commit is on its way to disk are committed
together in the next transaction, one fsync for the lot.

Each caller hands its write (a function of the open connection) to ``GroupCommit.run``
and waits. The first caller to find no commit under way leads: it takes every write
queued so far, runs them in one transaction (each in its own savepoint when there are
several, so one failing write is rolled back alone), commits, and wakes the others.
Writes queued meanwhile wait for the next leader. A call returns only once the
transaction holding its write has committed (``synchronous=FULL``: on disk), so the
store's promise is unchanged -- a write that returned is durable -- and with one caller
at a time it is exactly one transaction per write, as before.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Callable
from typing import Any

import msgspec


class _Write(msgspec.Struct):
    fn: Callable[[sqlite3.Connection], Any]
    waiter: bool = True
    """A caller waits on it (``run``) and may lead; else queued (``submit``)."""
    woken: threading.Event = msgspec.field(default_factory=threading.Event)
    done: bool = False
    result: Any = None
    error: BaseException | None = None


class QueuedWrite:
    """A write handed in with ``GroupCommit.submit``; ``wait`` returns once it committed."""

    def __init__(self, write: _Write) -> None:
        self._write = write

    def wait(self) -> Any:
        """Block until the transaction holding the write committed; its result, or raise
        what it (or the commit) raised."""
        self._write.woken.wait()
        if self._write.error is not None:
            raise self._write.error
        return self._write.result


class GroupCommit:
    """Commits the writes of every thread sharing one connection, in batches.

    ``lock`` guards the connection: held while a batch runs, and by every other user of
    the connection. ``retrying`` reruns a transaction while another process holds the
    database lock (every write in a batch must be safe to run again). Only the writers
    of a committed batch are woken, and the first of those still queued, who leads next;
    when that one is a queued write nobody waits on, a short-lived committer thread leads.
    """

    def __init__(
        self,
        db: sqlite3.Connection,
        lock: threading.RLock,
        retrying: Callable[[Callable[[], None]], None],
    ) -> None:
        self._db = db
        self._lock = lock
        self._retrying = retrying
        self._mutex = threading.Lock()
        self._queue: list[_Write] = []
        self._leading = False
        self.batches = 0
        self.writes = 0

    def run(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        """Run ``fn`` in a committed transaction (shared with concurrent callers) and
        return its result, or raise what it (or the commit) raised."""
        write = _Write(fn)
        with self._mutex:
            follow = self._leading
            if follow:
                self._queue.append(write)
            self._leading = True
        if follow:
            write.woken.wait()  # committed by a leader, or made the next leader
        if not write.done:
            self._lead(write)
        if write.error is not None:
            raise write.error
        return write.result

    def submit(self, fn: Callable[[sqlite3.Connection], Any]) -> QueuedWrite:
        """Queue ``fn`` for the next commit and return at once; the write is committed
        with whatever else is queued, by the current leader or a committer thread."""
        write = _Write(fn, waiter=False)
        with self._mutex:
            self._queue.append(write)
            start = not self._leading
            self._leading = True
        if start:
            self._start_committer()
        return QueuedWrite(write)

    def _start_committer(self) -> None:
        threading.Thread(
            target=self._lead, args=(None,), name="tidegate-commit", daemon=True
        ).start()

    def _lead(self, write: _Write | None) -> None:
        with self._mutex:
            batch, self._queue = [*([write] if write else []), *self._queue], []
        successor: _Write | None = None
        committer = False
        try:
            self._commit(batch, write)
        finally:
            with self._mutex:
                for w in batch:
                    w.done = True
                if self._queue and self._queue[0].waiter:
                    successor = self._queue.pop(0)
                committer = bool(self._queue) and successor is None
                self._leading = successor is not None or committer
            for w in batch:
                if w is not write:
                    w.woken.set()
            if successor is not None:
                successor.woken.set()
            if committer:
                self._start_committer()

    def _commit(self, batch: list[_Write], leader: _Write | None) -> None:
        with self._lock:
            try:
                try:
                    self._retrying(lambda: self._transaction(batch))
                except _WriteFailed:
                    if len(batch) == 1:
                        raise
                    # One write failed: undo the lot, then commit each on its own, so
                    # the failing write fails alone and every other one still commits.
                    for write in batch:
                        with contextlib.suppress(_WriteFailed):
                            self._retrying(lambda w=write: self._transaction([w]))  # type: ignore[misc]
            except _WriteFailed:
                pass  # the write holds its own error
            except Exception as exc:  # the transaction itself failed (begin or commit)
                for write in batch:
                    write.error = exc
            except BaseException:  # Ctrl-C in the leader: it raises; the others did not commit
                stopped = sqlite3.OperationalError("the transaction was interrupted")
                for write in batch:
                    write.error = None if write is leader else stopped
                raise
            self.batches += 1
            self.writes += len(batch)

    def _transaction(self, batch: list[_Write]) -> None:
        """One transaction running every write of ``batch``; ``_WriteFailed`` (everything
        rolled back) when one of them raised, its error recorded on it."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            for write in batch:
                try:
                    write.result, write.error = write.fn(db), None
                except sqlite3.OperationalError as exc:
                    if "locked" in str(exc) or "busy" in str(exc):
                        raise  # another process: the whole transaction is retried
                    write.error = exc
                    raise _WriteFailed from exc
                except Exception as exc:
                    write.error = exc
                    raise _WriteFailed from exc
            db.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise


class _WriteFailed(Exception):
    """A write of the batch raised (its error is on the write); the batch was undone."""
