"""Group commit: writes queued while a commit runs go to disk together in the next
transaction; each call returns only once its own write is committed; one failing write
in a batch is undone alone; and a RunStore shared by threads stays whole."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from tidegate.errors import PersistenceError
from tidegate.store.checkpoints import CheckpointKey, verify_committed
from tidegate.store.db import RunStart, RunStore
from tidegate.store.faults import StoreFaults
from tidegate.store.group import GroupCommit
from tidegate.store.trace import Trace


def _db(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE t (n INTEGER PRIMARY KEY)")
    return db


def _committed(path: Path) -> set[int]:
    """What another connection sees: only what was committed."""
    with sqlite3.connect(path) as other:
        rows = {int(r[0]) for r in other.execute("SELECT n FROM t")}
    other.close()
    return rows


def _retrying(fn):  # type: ignore[no-untyped-def]
    return fn()


def test_writes_queued_during_a_commit_are_committed_together(tmp_path: Path) -> None:
    path = tmp_path / "g.sqlite3"
    group = GroupCommit(_db(path), threading.RLock(), _retrying)
    release, opened = threading.Event(), threading.Event()
    waiting = 8

    def first(db: sqlite3.Connection) -> str:
        db.execute("INSERT INTO t VALUES (0)")
        opened.set()
        release.wait()  # the leader's transaction is open while the others queue up
        return "first"

    results: dict[int, object] = {}

    def call(n: int) -> None:
        def write(db: sqlite3.Connection) -> int:
            db.execute("INSERT INTO t VALUES (?)", (n,))
            return n

        results[n] = group.run(write)
        assert n in _committed(path)  # returned: committed, visible to anyone

    leader = threading.Thread(target=lambda: results.setdefault(0, group.run(first)))
    leader.start()
    # The followers start once the leader's transaction is open: none of them can lead.
    assert opened.wait(30), "the leader never opened its transaction"
    followers = [threading.Thread(target=call, args=(n,)) for n in range(1, waiting + 1)]
    for t in followers:
        t.start()
    deadline = threading.Event()
    for _ in range(3000):  # every follower queued behind the open transaction (30 s at most)
        with group._mutex:
            if len(group._queue) == waiting:
                break
        deadline.wait(0.01)
    else:
        release.set()
        pytest.fail("the followers never all queued behind the open transaction")
    assert _committed(path) == set()
    release.set()
    for t in [leader, *followers]:
        t.join()
    assert results == {n: (n or "first") for n in range(waiting + 1)}
    assert (group.batches, group.writes) == (2, waiting + 1)  # one commit for the 8
    assert _committed(path) == set(range(waiting + 1))


def test_a_failing_write_is_undone_alone(tmp_path: Path) -> None:
    path = tmp_path / "g.sqlite3"
    group = GroupCommit(_db(path), threading.RLock(), _retrying)
    release = threading.Event()
    errors: list[BaseException] = []

    def first(db: sqlite3.Connection) -> None:
        db.execute("INSERT INTO t VALUES (0)")
        release.wait()

    def good(n: int) -> None:
        group.run(lambda db: db.execute("INSERT INTO t VALUES (?)", (n,)))

    def bad() -> None:
        def write(db: sqlite3.Connection) -> None:
            db.execute("INSERT INTO t VALUES (99)")
            db.execute("INSERT INTO t VALUES (1)")  # taken by the good write before it

        try:
            group.run(write)
        except sqlite3.IntegrityError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=group.run, args=(first,))]
    threads[0].start()
    for target, args in ((good, (1,)), (bad, ()), (good, (2,))):
        while True:  # queue them in this order
            with group._mutex:
                if len(group._queue) == len(threads) - 1:
                    break
            threading.Event().wait(0.01)
        threads.append(threading.Thread(target=target, args=args))
        threads[-1].start()
    while True:
        with group._mutex:
            if len(group._queue) == 3:
                break
        threading.Event().wait(0.01)
    release.set()
    for t in threads:
        t.join()
    assert len(errors) == 1
    assert _committed(path) == {0, 1, 2}  # 99 was rolled back with its write alone


def test_threads_sharing_a_run_store_flush_durably(tmp_path: Path) -> None:
    store = RunStore(
        tmp_path / "runs.sqlite3",
        key=CheckpointKey.load_or_create(tmp_path),
        faults=StoreFaults(),
    )
    runs = [f"run-{i}" for i in range(6)]
    traces = {}
    for run in runs:
        first = store.begin_run(RunStart(run, "/repo", run, "patch", "exec-1"))
        traces[run] = Trace(run, run, "exec-1", first_seq=first)
    failures: list[BaseException] = []

    def work(run: str) -> None:
        trace = traces[run]
        try:
            for i in range(40):
                trace.append("note", payload={"i": i})
                pending = trace.pending()
                if i % 10 == 9:
                    store.flush(run, pending, checkpoint=("phase", {"i": i, "run": run}))
                else:
                    store.flush(run, pending)
                trace.mark_flushed(pending[-1].seq)
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(run,)) for run in runs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert store.key is not None
    for run in runs:
        assert [e.seq for e in store.events(run)] == list(range(1, 41))
        checkpoints = store.checkpoints(run)
        verify_committed(run, checkpoints, store.checkpoint_head(run), store.key)
        assert [c.state["i"] for c in checkpoints] == [9, 19, 29, 39]
    assert store._group.writes == 6 * 40 + 6
    store.close()


def test_a_failed_commit_fails_every_write_of_the_batch(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.sqlite3", faults=StoreFaults())
    store.begin_run(RunStart("run-1", "/repo", "run-1", "patch", "exec-1"))
    with pytest.raises(PersistenceError, match="could not"):
        store.transaction("fail", lambda db: db.execute("INSERT INTO nowhere VALUES (1)"))
    assert store.runs()[0].run_id == "run-1"  # the store goes on


def test_queued_writes_are_committed_together_by_a_committer(tmp_path: Path) -> None:
    path = tmp_path / "g.sqlite3"
    group = GroupCommit(_db(path), threading.RLock(), _retrying)
    release = threading.Event()

    def first(db: sqlite3.Connection) -> None:
        db.execute("INSERT INTO t VALUES (0)")
        release.wait()  # the committer's transaction is open while more is queued

    queued = [group.submit(first)]
    queued += [
        group.submit(lambda db, n=n: db.execute("INSERT INTO t VALUES (?)", (n,)))
        for n in range(1, 51)
    ]  # type: ignore[misc]
    assert _committed(path) == set()  # submit returns at once; nothing waited yet
    release.set()
    for q in queued:
        q.wait()
    assert _committed(path) == set(range(51))
    assert (group.batches, group.writes) == (2, 51)


def test_queue_flush_is_durable_once_waited_and_fails_alone(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.sqlite3", faults=StoreFaults())
    first = store.begin_run(RunStart("run-1", "/repo", "run-1", "patch", "exec-1"))
    trace = Trace("run-1", "run-1", "exec-1", first_seq=first)
    tickets = []
    for i in range(200):
        trace.append("note", payload={"i": i})
        tickets.append(store.queue_flush("run-1", trace.pending()))
        trace.mark_flushed(trace.last_seq)
    trace.append("tool.finished", tool_call_id="never-requested", payload={"status": "failed"})
    bad = store.queue_flush("run-1", trace.pending())
    for ticket in tickets:
        ticket.wait()
    with pytest.raises(PersistenceError, match="never requested"):
        bad.wait()
    assert [e.seq for e in store.events("run-1")] == list(range(1, 201))
    store.close()
