"""Memory and evidence records, and the artifacts index."""

from __future__ import annotations

from pathlib import Path

import pytest

from tidegate.errors import UsageError
from tidegate.store.db import RunStore
from tidegate.store.records import (
    artifacts,
    index_artifact,
    latest_record,
    put_record,
    records,
)


def test_records_are_appended_redacted_and_read_as_copies(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.sqlite3")
    put_record(store, "memory", "decision", {"text": "use sqlite", "score": 0.5})
    newer = put_record(
        store, "memory", "decision", {"text": "keep WAL", "api_key": "k-123456"}, run_id="r1"
    )
    put_record(store, "evidence", "decision", {"text": "other kind"})
    latest = latest_record(store, "memory", "decision")
    assert latest is not None and latest.record_id == newer.record_id
    assert latest.value == {"text": "keep WAL", "api_key": "[REDACTED]"}
    latest.value["text"] = "changed by a reader"
    assert latest.value["text"] == "keep WAL"
    history = records(store, "memory", "decision")
    assert [r.value["text"] for r in history] == ["use sqlite", "keep WAL"]
    assert history[0].value["score"] == 0.5
    assert [r.record_id for r in records(store, "memory", run_id="r1")] == [newer.record_id]
    with pytest.raises(UsageError, match="memory or evidence"):
        put_record(store, "gossip", "x", 1)  # type: ignore[arg-type]


def test_artifacts_are_indexed_with_their_digest(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.sqlite3")
    file = tmp_path / "out.txt"
    file.write_text("hello\n")
    first = index_artifact(store, file, kind="verify-output", run_id="r1", media_type="text/plain")
    index_artifact(store, file, kind="verify-output", run_id="r2")
    assert first.size == 6
    assert first.sha256 == "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
    assert [a.artifact_id for a in artifacts(store, "r1")] == [first.artifact_id]
    assert len(artifacts(store)) == 2
    with pytest.raises(UsageError, match="artifact"):
        index_artifact(store, tmp_path / "missing", kind="x")
