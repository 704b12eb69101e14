"""The tool host's byte store: content addressing, link-safe 0600 blobs, a tampered blob
refused, retention by age and size (oldest sessions first, the current one kept)."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pytest

from tidegate.disk.linksafe import WriteRefused
from tidegate.errors import UsageError
from tidegate.store.blobs import BlobTampered, ByteStore, Retention, check_id


def _store(tmp_path: Path) -> ByteStore:
    (tmp_path / "repo").mkdir()
    return ByteStore(tmp_path / "repo")


def _session(store: ByteStore, name: str, data: bytes, age_s: float) -> None:
    digest = store.put(data)
    index = {
        "session": name,
        "created": time.time() - age_s,
        "calls": [{"call_id": "c1", "paths": [{"before": {"kept": digest}, "after": {}}]}],
    }
    store.save_session(index)


def test_blobs_are_content_addressed_private_and_checked(tmp_path: Path) -> None:
    store = _store(tmp_path)
    digest = store.put(b"hello\n")
    raw = hashlib.sha256(b"hello\n").hexdigest()
    assert digest == "sha256:" + raw
    blob = tmp_path / "repo" / "blobs" / "sha256" / raw[:2] / raw[2:]
    assert blob.read_bytes() == b"hello\n" and blob.stat().st_mode & 0o777 == 0o600
    assert store.get(digest) == b"hello\n"
    blob.write_bytes(b"other\n")
    with pytest.raises(BlobTampered):
        store.get(digest)


def test_a_linked_blob_directory_is_refused(tmp_path: Path) -> None:
    store = _store(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "repo" / "blobs").symlink_to(elsewhere)
    with pytest.raises(WriteRefused):
        store.put(b"x")
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("bad", ["", "..", "a/b", "../x", "x..y", "/abs", "a\0b", "-x"])
def test_ids_are_identifiers_not_paths(bad: str) -> None:
    with pytest.raises(UsageError):
        check_id(bad, "call")


def test_old_sessions_go_first_and_the_current_one_stays(tmp_path: Path) -> None:
    store = _store(tmp_path)
    _session(store, "old", b"a" * 100, age_s=30 * 86400)
    _session(store, "mid", b"b" * 100, age_s=3600)
    _session(store, "new", b"c" * 100, age_s=60)
    freed = store.prune(Retention(max_bytes=150, max_age_s=14 * 86400), keep="new")
    assert store.sessions() == ["new"]
    assert freed == 200
    assert store.get("sha256:" + hashlib.sha256(b"c" * 100).hexdigest()) == b"c" * 100
    with pytest.raises(FileNotFoundError):
        store.get("sha256:" + hashlib.sha256(b"a" * 100).hexdigest())


def test_retention_is_configured_by_the_environment() -> None:
    retention = Retention.from_env(
        {"TIDEGATE_UNDO_MAX_BYTES": "1000", "TIDEGATE_UNDO_MAX_DAYS": "2"}
    )
    assert (retention.max_bytes, retention.max_age_s) == (1000, 2 * 86400)
    with pytest.raises(UsageError):
        Retention.from_env({"TIDEGATE_UNDO_MAX_BYTES": "lots"})
