#!/usr/bin/env python3
"""Benchmark: the run store -- trace appends, checkpoint writes, size on disk, and what
recording costs a guarded run.

    .venv/bin/python bench/store.py [--events 10000] [--batches 1,10,100] [--writers 1,8,32]
                                    [--checkpoints 500] [--sessions 100,1000,5000]
                                    [--dir PATH] [--repo PATH] [--json]

Everything goes through the real ``RunStore`` (SQLite, WAL, ``synchronous=FULL``: every
commit is fsynced) in a fresh directory under ``--dir`` (default: the OS temp dir, i.e.
the same file system a default state root would be on here):

* **append** - ``--events`` trace events (a ~200-byte payload each, redacted and
  canonicalised like the engine's) appended through ``Trace`` and made durable with one
  ``flush`` per phase boundary, for each batch size in ``--batches`` (events per
  boundary). Reported as events per second, including the commit and read-back ack.
* **queued** - one producer handing every event in on its own with ``queue_flush``
  (durable once its ``wait`` returns) without waiting for each fsync: events queued
  while a commit is on its way to disk go into the next one (``GroupCommit``), and the
  time runs until the last event is on disk and read back.
* **group commit** - ``--writers`` threads sharing one ``RunStore``, each its own run,
  each appending one event at a time and flushing it durably (the flush returns once the
  event is on disk) until ``--events`` events are in; concurrent flushes are committed
  together (``GroupCommit``: one transaction, one fsync per batch). Reported as durable
  events per second and the mean batch; ``--writers 1`` is the one-at-a-time floor.
* **checkpoint** - ``--checkpoints`` checkpoint writes of an engine-sized state (feedback,
  30 phase events, attempt records: ~7 KB of canonical JSON), each one event flush +
  redaction + hash + HMAC + chain link + delta + commit + ack, as
  ``StoreRecorder.checkpoint`` does at every phase boundary. Median and p99 latency,
  and the same again with ``synchronous=OFF``: tidegate's own work, without the disk.
* **session growth** - the bytes the checkpoint rows of one session take after
  ``--sessions`` checkpoints (default 100,1000,5000) of a state that grows by one phase
  record per checkpoint, against the bytes the whole documents would take: linear vs
  quadratic.
* **size** - the store's size (file + WAL, after a checkpoint of the WAL) holding 10,000
  events flushed 10 per boundary with a checkpoint at every boundary, and with events
  only.
* **run overhead** - one in-process guarded patch run (``execute``) on a small repository
  with and without a ``StoreRecorder``, alternating, ``--runs`` times each; with
  ``--repo PATH`` the workspace fingerprint (the evidence each recorded run captures at
  its start) is also timed on that repository.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from tidegate.flow.transaction import execute  # noqa: E402
from tidegate.records.request import RunRequest  # noqa: E402
from tidegate.store.checkpoints import CheckpointKey  # noqa: E402
from tidegate.store.db import RunStart, RunStore  # noqa: E402
from tidegate.store.faults import StoreFaults  # noqa: E402
from tidegate.store.recorder import StoreRecorder  # noqa: E402
from tidegate.store.trace import Trace  # noqa: E402

PAYLOAD = {
    "phase": "VALIDATE",
    "effect": "read-only",
    "status": "ok",
    "error_class": None,
    "candidate_tree": "0b5146d69a7f" * 3 + "0123",
    "changed": [["src/pkg/module_0042.py", "modify"], ["tests/test_module.py", "modify"]],
}


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def _store(directory: Path) -> RunStore:
    directory.mkdir(parents=True)
    return RunStore(
        directory / "runs.sqlite3",
        key=CheckpointKey.load_or_create(directory),
        faults=StoreFaults(),
    )


def _trace(store: RunStore, run_id: str) -> Trace:
    first = store.begin_run(RunStart(run_id, "/bench/repo", run_id, "patch", "exec-bench"))
    return Trace(run_id, run_id, "exec-bench", first_seq=first)


def bench_append(base: Path, events: int, batch: int) -> dict[str, float]:
    store = _store(base / f"append-{batch}")
    trace = _trace(store, "run-append")
    start = time.perf_counter()
    for i in range(events):
        trace.append("phase.finished", attempt=1, phase="VALIDATE", payload={**PAYLOAD, "i": i})
        if (i + 1) % batch == 0 or i + 1 == events:
            pending = trace.pending()
            store.flush("run-append", pending)
            trace.mark_flushed(pending[-1].seq)
    elapsed = time.perf_counter() - start
    store.close()
    return {"batch": batch, "events": events, "seconds": elapsed, "events_per_s": events / elapsed}


def bench_group_commit(base: Path, events: int, writers: int) -> dict[str, float]:
    """``writers`` threads, each flushing its own run's events one durable flush each."""
    store = _store(base / f"group-{writers}")
    traces = [_trace(store, f"run-{w}") for w in range(writers)]
    share = events // writers
    gate = threading.Barrier(writers + 1)

    def write(trace: Trace) -> None:
        gate.wait()
        for i in range(share):
            trace.append("phase.finished", attempt=1, phase="VALIDATE", payload={**PAYLOAD, "i": i})
            pending = trace.pending()
            store.flush(trace.run_id, pending)  # returns once the event is on disk
            trace.mark_flushed(pending[-1].seq)

    threads = [threading.Thread(target=write, args=(t,)) for t in traces]
    for t in threads:
        t.start()
    start = time.perf_counter()
    gate.wait()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    batches, flushed = store._group.batches - writers, store._group.writes - writers
    store.close()
    return {
        "writers": writers,
        "events": share * writers,
        "seconds": elapsed,
        "events_per_s": share * writers / elapsed,
        "mean_batch": flushed / max(batches, 1),
    }


def bench_queued(base: Path, events: int) -> dict[str, float]:
    """One producer, every event handed in durably on its own (``queue_flush``) without
    waiting for each fsync; timed until the last one is on disk and acknowledged."""
    store = _store(base / "queued")
    trace = _trace(store, "run-queued")
    before = (store._group.batches, store._group.writes)
    start = time.perf_counter()
    tickets = []
    for i in range(events):
        trace.append("phase.finished", attempt=1, phase="VALIDATE", payload={**PAYLOAD, "i": i})
        pending = trace.pending()
        tickets.append(store.queue_flush(trace.run_id, pending))
        trace.mark_flushed(pending[-1].seq)
    for ticket in tickets:
        ticket.wait()
    elapsed = time.perf_counter() - start
    batches = store._group.batches - before[0]
    flushed = store._group.writes - before[1]
    store.close()
    return {
        "events": events,
        "seconds": elapsed,
        "events_per_s": events / elapsed,
        "mean_batch": flushed / max(batches, 1),
        "commits": batches,
    }


def engine_state(n: int) -> dict[str, Any]:
    """A checkpoint state of the engine's shape and size."""
    phases = [
        {"attempt": 1 + i // 12, "phase": "VERIFY", "effect": "read-only", "status": "ok",
         "duration_ms": {"$float": "12.34"}, "detail": "`pytest -q` passed in 1.23s",
         "error_class": None}
        for i in range(30)
    ]  # fmt: skip
    return {
        "format": "tidegate.engine/1",
        "inputs": {"workspace_fingerprint": {"value": "sha256:" + "ab" * 32}},
        "counters": {"attempt": 3, "phase_events": 30, "n": n},
        "attempt": {"number": 3, "completed": ["PREFLIGHT", "CONTEXT", "PLAN", "PATCH"]},
        "run": {
            "phases": phases,
            "feedback": ["Attempt 1 failed in VERIFY.\n" + "E   assert 1 == 2\n" * 100],
            "notes": ["attempt 1: relaxed whitespace in hunk 2"] * 5,
        },
        "tool_calls": [],
    }


def bench_checkpoints(base: Path, count: int, *, fsync: bool = True) -> dict[str, float]:
    store = _store(base / ("checkpoints" if fsync else "checkpoints-nofsync"))
    if not fsync:  # what tidegate itself costs, without the disk's fsync latency
        store._db.execute("PRAGMA synchronous=OFF")
    recorder = StoreRecorder(store)
    recorder.begin("run-cp", "/bench/repo", "patch", {}, resumed=False)
    latencies = []
    size = 0
    for i in range(count):
        state = engine_state(i)
        recorder.event("phase.finished", attempt=1, phase="VERIFY", payload=PAYLOAD)
        start = time.perf_counter()
        recorder.checkpoint("phase", state)
        latencies.append((time.perf_counter() - start) * 1000)
        assert recorder.last_checkpoint is not None
        size = len(recorder.last_checkpoint.document)
    store.close()
    latencies.sort()
    return {
        "count": count,
        "median_ms": statistics.median(latencies),
        "p99_ms": latencies[max(0, int(len(latencies) * 0.99) - 1)],
        "document_bytes": size,
    }


def growing_state(n: int) -> dict[str, Any]:
    """A session's state after ``n`` steps: one more phase record each step."""
    state = engine_state(n)
    state["run"]["phases"] = [
        {"attempt": 1, "phase": "VERIFY", "status": "ok", "step": i, "detail": f"step {i} ok"}
        for i in range(n)
    ]
    return state


def bench_session_growth(base: Path, lengths: list[int]) -> list[dict[str, float]]:
    out = []
    for count in lengths:
        store = _store(base / f"growth-{count}")
        recorder = StoreRecorder(store)
        recorder.begin("run-growth", "/bench/repo", "patch", {}, resumed=False)
        whole = 0
        for i in range(count):
            recorder.checkpoint("phase", growing_state(i))
            assert recorder.last_checkpoint is not None
            whole += len(recorder.last_checkpoint.document)
        ((stored, full_rows),) = store.query(
            "SELECT SUM(LENGTH(document)), SUM(encoding = 'full') FROM checkpoints"
        )
        store.close()
        out.append(
            {
                "checkpoints": count,
                "stored_bytes": stored,
                "whole_bytes": whole,
                "full_rows": full_rows,
                "store_file_bytes": _size(base / f"growth-{count}"),
            }
        )
    return out


def _size(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.iterdir() if p.name.startswith("runs.sqlite3"))


def bench_size(base: Path, events: int) -> dict[str, int]:
    out = {}
    for label, with_checkpoints in (("events_only", False), ("with_checkpoints", True)):
        directory = base / f"size-{label}"
        store = _store(directory)
        recorder = StoreRecorder(store)
        recorder.begin("run-size", "/bench/repo", "patch", {}, resumed=False)
        for i in range(events):
            recorder.event(
                "phase.finished", attempt=1, phase="VALIDATE", payload={**PAYLOAD, "i": i}
            )
            if (i + 1) % 10 == 0:
                if with_checkpoints:
                    recorder.checkpoint("phase", engine_state(i))
                else:
                    recorder.flush()
        store.query("PRAGMA wal_checkpoint(TRUNCATE)")
        store.close()
        out[label] = _size(directory)
    return out


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def bench_run_overhead(base: Path, runs: int) -> dict[str, float]:
    repo = base / "repo"
    repo.mkdir()
    env = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b"}  # fmt: skip
    os.environ.update(env)
    _git(repo, "init", "-q")
    for i in range(200):
        (repo / f"m{i:03d}.py").write_text(f'"""Module {i}."""\n\n\ndef f():\n    return {i}\n')
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "init")
    objective = 'edit-file: m000.py\nreplace: """Module 0."""\nwith: """Module zero."""\n'
    request = RunRequest(repo=repo, objective=objective, objective_base=repo, verify="true",
                         containment="none")  # fmt: skip
    store = _store(base / "overhead-state")
    times: dict[str, list[float]] = {"plain": [], "recorded": []}
    for i in range(runs * 2 + 2):
        label = "recorded" if i % 2 else "plain"
        start = time.perf_counter()
        report = execute(request, recorder=StoreRecorder(store) if label == "recorded" else None)
        elapsed = time.perf_counter() - start
        assert report.status == "succeeded", report.message
        _git(repo, "checkout", "--", "m000.py")
        if i >= 2:  # the first round of each is a warm-up
            times[label].append(elapsed)
    plain, recorded = statistics.median(times["plain"]), statistics.median(times["recorded"])
    return {"runs": runs, "plain_s": plain, "recorded_s": recorded, "overhead_s": recorded - plain}


def bench_fingerprint(repo: Path, repeat: int = 5) -> dict[str, float]:
    from tidegate.workspace.fingerprint import workspace_fingerprint

    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        workspace_fingerprint(repo)
        times.append(time.perf_counter() - start)
    return {"repeat": repeat, "median_s": statistics.median(times), "min_s": min(times)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=10_000)
    ap.add_argument("--batches", default="1,10,100")
    ap.add_argument("--writers", default="1,8,32", help="threads for the group commit run")
    ap.add_argument("--checkpoints", type=int, default=500)
    ap.add_argument("--sessions", default="100,1000,5000", help="session lengths to store")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--dir", type=Path, default=None, help="where the stores go")
    ap.add_argument("--repo", type=Path, default=None, help="time the fingerprint here too")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="tidegate-bench-store-", dir=args.dir))
    results: dict[str, Any] = {"dir": str(base)}
    try:
        results["append"] = []
        for batch in (int(b) for b in args.batches.split(",")):
            log(f"append {args.events} events, {batch} per durable flush")
            results["append"].append(bench_append(base, args.events, batch))
        log(f"queued: {args.events} events, each handed in durably, one producer")
        results["queued"] = bench_queued(base, args.events)
        results["group_commit"] = []
        for writers in (int(w) for w in args.writers.split(",")):
            log(f"group commit: {args.events} events, {writers} writer thread(s), durable each")
            results["group_commit"].append(bench_group_commit(base, args.events, writers))
        log(f"{args.checkpoints} checkpoint writes")
        results["checkpoint"] = bench_checkpoints(base, args.checkpoints)
        results["checkpoint_no_fsync"] = bench_checkpoints(base, args.checkpoints, fsync=False)
        lengths = [int(n) for n in args.sessions.split(",")]
        log(f"checkpoint storage of sessions of {lengths} checkpoints")
        results["session_growth"] = bench_session_growth(base, lengths)
        log("store size after 10,000 events")
        results["size_bytes"] = bench_size(base, 10_000)
        log(f"run overhead ({args.runs} runs each)")
        results["run_overhead"] = bench_run_overhead(base, args.runs)
        if args.repo is not None:
            log(f"workspace fingerprint of {args.repo}")
            results["fingerprint"] = bench_fingerprint(args.repo)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"stores under {base}")
    print("append (durable flush per boundary):")
    for r in results["append"]:
        print(f"  {r['batch']:>4} events/flush: {r['events_per_s']:>10,.0f} events/s")
    q = results["queued"]
    print(
        f"group commit, queued (one producer, every event handed in durably, timed to the "
        f"last ack): {q['events_per_s']:,.0f} events/s ({q['commits']} commits, mean batch "
        f"{q['mean_batch']:.1f})"
    )
    print("group commit, threads (each waits for its event's commit before the next):")
    for r in results["group_commit"]:
        print(
            f"  {r['writers']:>4} writer(s): {r['events_per_s']:>10,.0f} events/s "
            f"(mean batch {r['mean_batch']:.1f})"
        )
    cp = results["checkpoint"]
    print(
        f"checkpoint write: median {cp['median_ms']:.2f} ms, p99 {cp['p99_ms']:.2f} ms "
        f"({cp['document_bytes']:,} bytes each, {cp['count']} writes)"
    )
    cpu = results["checkpoint_no_fsync"]
    print(
        f"  the same without fsync (synchronous=OFF: tidegate's own work): median "
        f"{cpu['median_ms']:.2f} ms, p99 {cpu['p99_ms']:.2f} ms"
    )
    print("checkpoint storage of one session (state growing one phase record per step):")
    for g in results["session_growth"]:
        print(
            f"  {g['checkpoints']:>6} checkpoints: {g['stored_bytes'] / 1e6:>8.2f} MB stored "
            f"({g['full_rows']} whole), {g['whole_bytes'] / 1e6:>9.2f} MB as whole documents"
        )
    size = results["size_bytes"]
    print(
        f"size after 10,000 events: {size['events_only'] / 1e6:.2f} MB events only, "
        f"{size['with_checkpoints'] / 1e6:.2f} MB with a checkpoint every 10 events"
    )
    ro = results["run_overhead"]
    print(
        f"guarded run (200 files): {ro['plain_s']:.3f} s unrecorded, {ro['recorded_s']:.3f} s "
        f"recorded (+{ro['overhead_s'] * 1000:.0f} ms)"
    )
    if "fingerprint" in results:
        fp = results["fingerprint"]
        print(f"workspace fingerprint of {args.repo}: median {fp['median_s']:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
