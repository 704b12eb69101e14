"""Records and artifacts in the run store.

A record is a small keyed value of one of two kinds: ``memory`` (what later runs may carry
over: decisions, goals, notes) and ``evidence`` (host-attested facts about a run or a task).
Records are append-only: writing a key again adds a newer record and the older ones stay
for the audit; ``latest_record`` returns the newest. Values are JSON, redacted, and kept
canonical (floats as ``{"$float": repr}``), with their SHA-256.

The artifacts index lists files kept for a run (spilled output, review artifacts): path,
size and SHA-256 at the time they were indexed. The files themselves stay where they are.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import msgspec

from tidegate.errors import UsageError
from tidegate.store.canonical import canonical_json
from tidegate.store.db import RunStore
from tidegate.store.trace import now_ms
from tidegate.text.floats import decode_floats, encode_floats
from tidegate.text.sanitize import redact_value

RecordKind = Literal["memory", "evidence"]
KINDS = ("memory", "evidence")


class StoredRecord(msgspec.Struct, frozen=True):
    record_id: int
    kind: str
    key: str
    run_id: str | None
    task_id: str | None
    document: str
    sha256: str
    at_ms: int

    @property
    def value(self) -> Any:
        """The value: a fresh copy on every access."""
        return decode_floats(json.loads(self.document))


def put_record(
    store: RunStore,
    kind: RecordKind,
    key: str,
    value: object,
    *,
    run_id: str | None = None,
    task_id: str | None = None,
) -> StoredRecord:
    """Append a record (durable on return)."""
    if kind not in KINDS:
        raise UsageError(f"record kind {kind!r}: use memory or evidence")
    if not key or len(key) > 200:
        raise UsageError("a record key is 1 to 200 characters")
    document = canonical_json(redact_value(encode_floats(value)))
    digest = hashlib.sha256(document).hexdigest()
    stamp = now_ms()

    def write(db: Any) -> int:
        cursor = db.execute(
            "INSERT INTO records (kind, key, run_id, task_id, value, sha256, at_ms) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (kind, key, run_id, task_id, document.decode("ascii"), digest, stamp),
        )
        return int(cursor.lastrowid)

    record_id = store.transaction(f"store the {kind} record {key!r}", write)
    return StoredRecord(
        record_id, kind, key, run_id, task_id, document.decode("ascii"), digest, stamp
    )


def records(
    store: RunStore, kind: RecordKind, key: str | None = None, *, run_id: str | None = None
) -> list[StoredRecord]:
    """Records of ``kind`` (optionally one key, one run), oldest first."""
    sql = (
        "SELECT record_id, kind, key, run_id, task_id, value, sha256, at_ms FROM records "
        "WHERE kind = ?"
    )
    params: list[object] = [kind]
    if key is not None:
        sql += " AND key = ?"
        params.append(key)
    if run_id is not None:
        sql += " AND run_id = ?"
        params.append(run_id)
    return [StoredRecord(*row) for row in store.query(sql + " ORDER BY record_id", params)]


def latest_record(store: RunStore, kind: RecordKind, key: str) -> StoredRecord | None:
    found = records(store, kind, key)
    return found[-1] if found else None


class Artifact(msgspec.Struct, frozen=True):
    artifact_id: str
    run_id: str | None
    kind: str
    path: str
    sha256: str
    size: int
    media_type: str | None
    at_ms: int


def index_artifact(
    store: RunStore,
    path: Path,
    *,
    kind: str,
    run_id: str | None = None,
    media_type: str | None = None,
) -> Artifact:
    """Hash ``path`` and add it to the index."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"artifact {path}: {exc.strerror}") from exc
    artifact = Artifact(
        artifact_id="art-" + secrets.token_hex(8),
        run_id=run_id,
        kind=kind,
        path=str(path),
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        media_type=media_type,
        at_ms=now_ms(),
    )
    store.transaction(
        f"index the artifact {path}",
        lambda db: db.execute(
            "INSERT INTO artifacts VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                artifact.artifact_id,
                artifact.run_id,
                artifact.kind,
                artifact.path,
                artifact.sha256,
                artifact.size,
                artifact.media_type,
                artifact.at_ms,
            ),
        ),
    )
    return artifact


def artifacts(store: RunStore, run_id: str | None = None) -> list[Artifact]:
    """Indexed artifacts (of one run, or all), in the order they were indexed."""
    sql = "SELECT * FROM artifacts"
    params: list[object] = []
    if run_id is not None:
        sql += " WHERE run_id = ?"
        params.append(run_id)
    return [Artifact(*row) for row in store.query(sql + " ORDER BY at_ms, rowid", params)]


def record_summary(record: StoredRecord) -> Mapping[str, object]:
    return {
        "record_id": record.record_id,
        "kind": record.kind,
        "key": record.key,
        "run_id": record.run_id,
        "task_id": record.task_id,
        "value": record.value,
        "sha256": record.sha256,
    }
