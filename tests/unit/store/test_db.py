"""The run store: migrations, projections, acknowledgement, fault points, derived status."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tidegate.errors import PersistenceError, UsageError
from tidegate.records.report import FlowReport
from tidegate.store.checkpoints import CheckpointKey
from tidegate.store.db import MIGRATIONS, SCHEMA_VERSION, RunStart, RunStore
from tidegate.store.faults import StoreFaults
from tidegate.store.trace import Trace


def _report(run_id: str, status: str = "succeeded") -> FlowReport:
    return FlowReport(
        status=status,  # type: ignore[arg-type]
        mode="patch",
        run_id=run_id,
        repo="/repo",
        attempts=1,
        max_attempts=3,
        fs_mode="read-write",
        planner="structured",
        duration_s=0.25,
    )


def _store(tmp_path: Path, *faults: str) -> RunStore:
    return RunStore(
        tmp_path / "runs.sqlite3",
        key=CheckpointKey.load_or_create(tmp_path),
        faults=StoreFaults(faults),
    )


def _begin(store: RunStore, run_id: str = "run-1") -> Trace:
    first = store.begin_run(RunStart(run_id, "/repo", "task-1", "patch", "exec-1"))
    return Trace(run_id, "task-1", "exec-1", first_seq=first)


def _phase(trace: Trace, phase: str, status: str = "ok") -> None:
    trace.append("phase.started", attempt=1, phase=phase)
    trace.append(
        "phase.finished",
        attempt=1,
        phase=phase,
        payload={"phase": phase, "effect": "read-only", "status": status, "error_class": None},
        meta={"duration_us": 1500, "detail": f"{phase} done"},
    )


def test_a_fresh_store_is_at_the_latest_schema_in_wal_mode(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert store.query("PRAGMA user_version")[0][0] == SCHEMA_VERSION
    assert store.query("PRAGMA journal_mode")[0][0] == "wal"
    names = {r[0] for r in store.query("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {
        "runs",
        "trace",
        "phase_events",
        "attempts",
        "tool_calls",
        "checkpoints",
        "records",
        "artifacts",
    } <= names
    assert (tmp_path / "runs.sqlite3").stat().st_mode & 0o077 == 0


def _v1_store(path: Path) -> None:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    for statement in MIGRATIONS[0].split(";"):
        if statement.strip():
            db.execute(statement)
    db.execute("PRAGMA user_version = 1")
    report = _report("old-run", "failed").model_copy(update={"error_class": "TEST"})
    db.execute(
        "INSERT INTO runs VALUES (?, 1, '/repo', 'patch', 'failed', 'TEST', 'VERIFY', 1, NULL,"
        " NULL, 0.25, ?)",
        ("old-run", report.model_dump_json()),
    )
    db.execute(
        "INSERT INTO phase_events VALUES ('old-run', 1, 1, 'VERIFY', 'read-only', 'failed', "
        "3.5, 'boom', 'TEST')"
    )
    db.close()


def test_a_version_1_store_is_migrated_keeping_its_runs(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite3"
    _v1_store(path)
    store = RunStore(path)
    assert store.query("PRAGMA user_version")[0][0] == SCHEMA_VERSION
    old = store.get("old-run")
    assert (old.status, old.error_class, old.acknowledged) == ("failed", "TEST", True)
    assert old.report is not None and old.report.run_id == "old-run"
    rows = store.query("SELECT phase, detail, event_seq FROM phase_events")
    assert rows == [("VERIFY", "boom", None)]
    assert store.integrity_check() == "ok"
    assert store.query("PRAGMA foreign_key_check") == []


def test_reading_an_old_store_never_writes_it(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite3"
    _v1_store(path)
    before = path.read_bytes()
    store = RunStore.open_read_only(path)
    assert store.get("latest").run_id == "old-run"
    with pytest.raises(PersistenceError, match="read-only"):
        store.set_status("old-run", "paused")
    store.close()
    assert path.read_bytes() == before
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == 1


def test_a_store_from_a_newer_tidegate_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite3"
    sqlite3.connect(path).execute("PRAGMA user_version = 99").connection.close()
    with pytest.raises(UsageError, match="newer tidegate"):
        RunStore(path)


def test_a_flush_writes_events_projections_and_a_chained_checkpoint(tmp_path: Path) -> None:
    store = _store(tmp_path)
    trace = _begin(store)
    _phase(trace, "PLAN")
    first = store.flush("run-1", trace.pending(), checkpoint=("phase", {"n": 1}))
    trace.mark_flushed(trace.last_seq)
    _phase(trace, "PATCH")
    trace.append(
        "tool.requested",
        tool_call_id="c1",
        payload={"canonical_tool": "workspace.write", "input_sha256": "sha256:ab"},
    )
    trace.append(
        "tool.finished",
        tool_call_id="c1",
        payload={
            "status": "succeeded",
            "effects": {"write": [{"path": "a"}]},
            "result_sha256": None,
        },
    )
    second = store.flush("run-1", trace.pending(), checkpoint=("phase", {"n": 2}))
    assert first is not None and second is not None
    assert (first.seq, second.seq, second.prev_hash) == (1, 2, first.hash)
    assert second.event_seq == trace.last_seq
    events = store.events("run-1")
    assert [e.seq for e in events] == list(range(1, trace.last_seq + 1))
    assert {e.task_id for e in events} == {"task-1"}
    assert store.query("SELECT phase, duration_ms, detail FROM phase_events ORDER BY seq") == [
        ("PLAN", 1.5, "PLAN done"),
        ("PATCH", 1.5, "PATCH done"),
    ]
    [call] = store.tool_calls("run-1")
    assert (call.canonical_tool, call.status, call.effects) == (
        "workspace.write",
        "succeeded",
        {"write": [{"path": "a"}]},
    )
    # Retrying a flush that had committed (an interrupt hid the result) changes nothing.
    store.flush("run-1", events[-3:])
    assert len(store.events("run-1")) == len(events)


def test_a_resumed_execution_continues_the_sequence(tmp_path: Path) -> None:
    store = _store(tmp_path)
    trace = _begin(store)
    _phase(trace, "PLAN")
    store.flush("run-1", trace.pending())
    store.set_status("run-1", "paused")
    first = store.begin_run(RunStart("run-1", "/repo", "task-1", "patch", "exec-2"), resumed=True)
    assert first == trace.last_seq + 1
    assert store.get("run-1").stored_status == "running"
    with pytest.raises(PersistenceError, match="no run nope to resume"):
        store.begin_run(RunStart("nope", "/repo", "t", "patch", "e"), resumed=True)


@pytest.mark.parametrize("point", ["trace.write", "checkpoint.write"])
def test_a_failed_write_commits_nothing(tmp_path: Path, point: str) -> None:
    store = _store(tmp_path, point)
    trace = _begin(store)
    _phase(trace, "PLAN")
    with pytest.raises(PersistenceError, match=f"injected store fault at {point}"):
        store.flush("run-1", trace.pending(), checkpoint=("phase", {"n": 1}))
    assert store.events("run-1") == [] and store.checkpoints("run-1") == []


@pytest.mark.parametrize("point", ["trace.ack", "checkpoint.ack"])
def test_an_unacknowledged_write_fails_although_it_committed(tmp_path: Path, point: str) -> None:
    store = _store(tmp_path, point)
    trace = _begin(store)
    _phase(trace, "PLAN")
    with pytest.raises(PersistenceError, match="was not acknowledged"):
        store.flush("run-1", trace.pending(), checkpoint=("phase", {"n": 1}))
    assert len(store.events("run-1")) == 2 and len(store.checkpoints("run-1")) == 1


def test_a_final_report_counts_only_once_acknowledged(tmp_path: Path) -> None:
    store = _store(tmp_path, "report.ack")
    trace = _begin(store)
    trace.append("run.finished", payload={"status": "succeeded"})
    with pytest.raises(PersistenceError, match="report of run run-1 was not acknowledged"):
        store.finish("run-1", _report("run-1"), trace.pending())
    run = store.get("run-1")
    assert run.stored_status == "succeeded" and not run.acknowledged
    assert (run.status, run.error_class) == ("failed", "PERSISTENCE_ERROR")
    assert run.report is not None and run.report.status == "failed"
    assert "never acknowledged" in run.report.message

    (tmp_path / "clean").mkdir()
    clean = _store(tmp_path / "clean")
    _begin(clean, "run-2")
    stored = clean.finish("run-2", _report("run-2"), [])
    assert clean.get("run-2").status == "succeeded" and stored.status == "succeeded"


def test_a_report_without_a_started_run_is_inserted(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.record(_report("refused", "failed"))
    assert store.get("latest").run_id == "refused"


def test_a_running_run_whose_process_died_reads_as_interrupted(tmp_path: Path) -> None:
    code = (
        "import sys; from pathlib import Path; "
        "from tidegate.store.db import RunStore, RunStart; "
        "s = RunStore(Path(sys.argv[1])); "
        "s.begin_run(RunStart('dead', '/repo', 't', 'patch', 'e'))"
    )
    path = tmp_path / "runs.sqlite3"
    subprocess.run([sys.executable, "-c", code, str(path)], check=True)
    store = RunStore(path)
    _begin(store, "alive")
    assert store.get("dead").status == "interrupted"
    assert store.get("dead").stored_status == "running"
    assert store.get("alive").status == "running"


def test_secrets_and_reasoning_never_reach_the_file(tmp_path: Path) -> None:
    store = _store(tmp_path)
    trace = _begin(store)
    trace.append(
        "note",
        payload={"command": "curl -H 'Authorization: Bearer abcdefghijklmnopqrstuvwx'"},
        meta={"reasoning": "private chain of thought", "password": "hunter2hunter2"},
    )
    store.flush("run-1", trace.pending(), checkpoint=("phase", {"env": "TOKEN=ghp_" + "a" * 30}))
    store.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("runs.sqlite3*"))
    for secret in (b"abcdefghijklmnopqrstuvwx", b"private chain", b"hunter2hunter2", b"ghp_aaaa"):
        assert secret not in raw


def test_a_checkpoint_needs_the_key(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.sqlite3", faults=StoreFaults())
    trace = _begin(store)
    with pytest.raises(PersistenceError, match="no checkpoint key"):
        store.flush("run-1", trace.pending(), checkpoint=("phase", {}))


def test_unknown_fault_points_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown store fault point"):
        StoreFaults(["trace.explode"])
    faults = StoreFaults(["report.write:2"])
    faults.check("report.write")
    with pytest.raises(OSError, match=r"report\.write"):
        faults.check("report.write")
    faults.check("report.write")


def test_stored_report_json_digest_is_what_was_acknowledged(tmp_path: Path) -> None:
    store = _store(tmp_path)
    _begin(store)
    stored = store.finish("run-1", _report("run-1"), [])
    text = store.query("SELECT report_json FROM runs")[0][0]
    assert (
        hashlib.sha256(text.encode()).hexdigest()
        == hashlib.sha256(stored.model_dump_json().encode()).hexdigest()
    )
    assert json.loads(text)["status"] == "succeeded"


def test_a_version_2_paused_run_migrates_without_a_head_and_never_reads_verified(
    tmp_path: Path,
) -> None:
    """Schema 3 adds committed chain heads. A run checkpointed before it has none, so its
    chain reads as unverifiable (truncation cannot be ruled out), never as verified."""
    from tidegate.store.checkpoints import CheckpointRefused, verify_committed

    path = tmp_path / "runs.sqlite3"
    store = _store(tmp_path)
    trace = _begin(store)
    _phase(trace, "PLAN")
    store.flush("run-1", trace.pending(), checkpoint=("phase", {"n": 1}))
    store.close()
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("DROP TABLE checkpoint_heads")
    db.execute("ALTER TABLE checkpoints DROP COLUMN encoding")  # added by schema 4
    db.execute("DROP TABLE landings")  # added by schema 5
    db.execute("PRAGMA user_version = 2")
    db.close()

    migrated = _store(tmp_path)
    assert migrated.query("PRAGMA user_version")[0][0] == SCHEMA_VERSION == 5
    assert migrated.checkpoint_head("run-1") is None
    assert migrated.key is not None
    with pytest.raises(CheckpointRefused, match="no committed head"):
        verify_committed("run-1", migrated.checkpoints("run-1"), None, migrated.key)
    # A checkpoint written after the migration commits a head covering the whole chain.
    migrated.flush("run-1", [], checkpoint=("phase", {"n": 2}))
    head = migrated.checkpoint_head("run-1")
    assert head is not None and head.count == 2
    verify_committed("run-1", migrated.checkpoints("run-1"), head, migrated.key)


def test_a_store_another_process_creates_between_check_and_create_is_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes opening a fresh store at once: both see no file, one creates it
    first; the other must open that store, not fail (test_store_concurrency's race,
    made deterministic)."""
    path = tmp_path / "runs.sqlite3"
    RunStore(path).close()
    real_exists = Path.exists
    monkeypatch.setattr(Path, "exists", lambda p: False if p == path else real_exists(p))
    store = RunStore(path)  # the check said "absent"; the exclusive create finds it there
    assert store.integrity_check() == "ok"
    store.close()
