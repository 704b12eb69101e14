#!/usr/bin/env python3
"""Benchmark: the run store -- trace appends, checkpoint writes, size on disk, and what
recording costs a guarded run.

    .venv/bin/python bench/store.py [--events 10000] [--batches 1,10,100]
                                    [--checkpoints 500] [--dir PATH] [--repo PATH] [--json]

Everything goes through the real ``RunStore`` (SQLite, WAL, ``synchronous=FULL``: every
commit is fsynced) in a fresh directory under ``--dir`` (default: the OS temp dir, i.e.
the same file system a default state root would be on here):

* **append** - ``--events`` trace events (a ~200-byte payload each, redacted and
  canonicalised like the engine's) appended through ``Trace`` and made durable with one
  ``flush`` per phase boundary, for each batch size in ``--batches`` (events per
  boundary). Reported as events per second, including the commit and read-back ack.
* **checkpoint** - ``--checkpoints`` checkpoint writes of an engine-sized state (feedback,
  30 phase events, attempt records: ~9 KB of canonical JSON), each one event flush +
  hash + HMAC + chain link + commit + ack, as ``StoreRecorder.checkpoint`` does at every
  phase boundary. Median and p99 latency.
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
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from tidegate.flow.request import RunRequest  # noqa: E402
from tidegate.flow.transaction import execute  # noqa: E402
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


def bench_checkpoints(base: Path, count: int) -> dict[str, float]:
    store = _store(base / "checkpoints")
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
    ap.add_argument("--checkpoints", type=int, default=500)
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
        log(f"{args.checkpoints} checkpoint writes")
        results["checkpoint"] = bench_checkpoints(base, args.checkpoints)
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
    cp = results["checkpoint"]
    print(
        f"checkpoint write: median {cp['median_ms']:.2f} ms, p99 {cp['p99_ms']:.2f} ms "
        f"({cp['document_bytes']:,} bytes each, {cp['count']} writes)"
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
