"""Concurrent writers: 8 processes append 1,000 events each (several runs, three
repositories) into one fresh store at once. Nothing is lost, every run's sequence is
contiguous, every checkpoint chain verifies, and the file passes integrity_check."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tidegate.store.checkpoints import CheckpointKey, verify_chain
from tidegate.store.db import RunStore

WORKER = """
import sys
from pathlib import Path
from tidegate.records.report import FlowReport
from tidegate.store.checkpoints import CheckpointKey
from tidegate.store.db import RunStart, RunStore
from tidegate.store.trace import Trace

path, number, events = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
store = RunStore(path, key=CheckpointKey.load_or_create(path.parent))
run_id, repo = f"run-{number}", f"/repo-{number % 3}"
first = store.begin_run(RunStart(run_id, repo, f"task-{number}", "patch", f"exec-{number}"))
trace = Trace(run_id, f"task-{number}", f"exec-{number}", first_seq=first)
for i in range(events):
    trace.append("tick", attempt=1, phase="VERIFY", payload={"i": i, "worker": number})
    if (i + 1) % 25 == 0:  # a phase boundary
        pending = trace.pending()
        checkpoint = ("phase", {"done": i + 1}) if (i + 1) % 250 == 0 else None
        store.flush(run_id, pending, checkpoint=checkpoint)
        trace.mark_flushed(pending[-1].seq)
report = FlowReport(status="succeeded", mode="patch", run_id=run_id, repo=repo, attempts=1,
                    max_attempts=1, fs_mode="read-write", planner="structured")
trace.append("run.finished", payload={"status": "succeeded"})
store.finish(run_id, report, trace.pending())
"""


def test_eight_writers_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite3"
    workers = [
        subprocess.Popen([sys.executable, "-c", WORKER, str(path), str(n), "1000"])
        for n in range(8)
    ]
    assert [w.wait(timeout=300) for w in workers] == [0] * 8

    store = RunStore.open_read_only(path, key=CheckpointKey.load(tmp_path / "checkpoint.key"))
    assert store.integrity_check() == "ok"
    runs = store.runs(limit=100)
    assert sorted(r.run_id for r in runs) == [f"run-{n}" for n in range(8)]
    assert {r.status for r in runs} == {"succeeded"}
    assert sorted({r.repo for r in runs}) == ["/repo-0", "/repo-1", "/repo-2"]
    assert len(store.runs(repo="/repo-1")) == 3
    for n in range(8):
        events = store.events(f"run-{n}")
        ticks = [e.payload_value()["i"] for e in events if e.kind == "tick"]
        assert ticks == list(range(1000))
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        checkpoints = store.checkpoints(f"run-{n}")
        assert [c.state["done"] for c in checkpoints] == [250, 500, 750, 1000]
        verify_chain(f"run-{n}", checkpoints, store.key)  # type: ignore[arg-type]
    total = store.query("SELECT COUNT(*) FROM trace")[0][0]
    assert total == 8 * 1000 + 8  # the ticks and one run.finished each
