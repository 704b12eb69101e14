"""Checkpoints stored as deltas: what is read back is byte for byte what was signed, every
edit of a stored row is refused, a crash mid-write leaves a readable chain, and the bytes a
session stores grow with its length, not with its square."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tidegate.store.checkpoints import CheckpointKey, CheckpointRefused, verify_committed
from tidegate.store.db import RunStart, RunStore
from tidegate.store.delta import BadDelta, diff, patch
from tidegate.store.faults import StoreFaults

RUN = "run-delta"


def _store(root: Path) -> RunStore:
    return RunStore(
        root / "runs.sqlite3", key=CheckpointKey.load_or_create(root), faults=StoreFaults()
    )


def _begun(root: Path) -> RunStore:
    store = _store(root)
    store.begin_run(RunStart(RUN, "/repo", RUN, "patch", "exec-1"))
    return store


def _state(i: int) -> dict[str, Any]:
    """A state that grows by one phase per checkpoint and changes in awkward ways: a
    bool/int swap (``True == 1``), a key coming and going, a container changing type, an
    early list item edited, text outside ASCII and a lone surrogate."""
    phases = [{"i": j, "status": "ok", "detail": f"phase {j} " + "x" * 40} for j in range(i)]
    if i > 50:
        phases[3]["status"] = "redone"
    state: dict[str, Any] = {
        "format": "tidegate.engine/1",
        "counters": {"n": i, "even": i % 2 == 0, "flag": True if i % 2 else 1},
        "phases": phases,
        "shape": {} if i % 4 else [],
        "note": "é\udcff" * (i % 3),
    }
    if i % 5 == 0:
        state["sometimes"] = {"i": i}
    return state


def _write(store: RunStore, count: int, start: int = 0) -> list[str]:
    documents = []
    for i in range(start, start + count):
        sealed = store.flush(RUN, [], checkpoint=("phase", _state(i)))
        assert sealed is not None
        documents.append(sealed.document)
    return documents


def _encodings(root: Path) -> dict[str, int]:
    with sqlite3.connect(root / "runs.sqlite3") as db:
        rows = db.execute(
            "SELECT encoding, COUNT(*) FROM checkpoints WHERE run_id = ? GROUP BY encoding",
            (RUN,),
        ).fetchall()
    db.close()
    return dict(rows)


def _verified(store: RunStore) -> list[str]:
    checkpoints = store.checkpoints(RUN)
    assert store.key is not None
    verify_committed(RUN, checkpoints, store.checkpoint_head(RUN), store.key)
    return [c.document for c in checkpoints]


def test_every_checkpoint_reads_back_byte_for_byte(tmp_path: Path) -> None:
    store = _begun(tmp_path)
    written = _write(store, 200)
    assert _verified(store) == written
    store.close()
    fresh = _store(tmp_path)  # nothing cached: rebuilt from the rows alone
    assert _verified(fresh) == written
    assert [json.loads(d)["state"] for d in written] == [_state(i) for i in range(200)]
    encodings = _encodings(tmp_path)
    assert encodings["delta"] > 150 and encodings["full"] >= 1, encodings


def test_a_store_reopened_mid_session_goes_on_with_deltas(tmp_path: Path) -> None:
    first = _begun(tmp_path)
    written = _write(first, 30)
    first.close()
    second = _store(tmp_path)  # e.g. `tidegate resume` in a new process
    written += _write(second, 30, start=30)
    assert _verified(second) == written
    assert _encodings(tmp_path)["delta"] > 50


def _edit(root: Path, sql: str, *params: object) -> None:
    with sqlite3.connect(root / "runs.sqlite3") as db:
        assert db.execute(sql, params).rowcount == 1
    db.close()


def _a_delta_row(root: Path) -> tuple[int, str]:
    with sqlite3.connect(root / "runs.sqlite3") as db:
        seq, document = db.execute(
            "SELECT seq, document FROM checkpoints WHERE run_id = ? AND encoding = 'delta' "
            "ORDER BY seq LIMIT 1 OFFSET 10",
            (RUN,),
        ).fetchone()
    db.close()
    return int(seq), str(document)


def _refused(root: Path, words: str) -> None:
    store = _store(root)
    with pytest.raises(CheckpointRefused, match=words):
        _verified(store)
    store.close()


def test_an_edited_delta_is_refused(tmp_path: Path) -> None:
    _write(_begun(tmp_path), 40)
    seq, document = _a_delta_row(tmp_path)
    node = json.loads(document)
    node[1]["counters"] = ["=", {"n": 999}]  # a well-formed delta, other values
    edited = json.dumps(node, sort_keys=True, separators=(",", ":"))
    _edit(
        tmp_path,
        "UPDATE checkpoints SET document = ? WHERE run_id = ? AND seq = ?",
        edited,
        RUN,
        seq,
    )
    _refused(tmp_path, f"checkpoint {seq} of run {RUN} does not match its hash")


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE checkpoints SET document = '[\"l\", 0' WHERE run_id = ? AND seq = ?",
        "UPDATE checkpoints SET document = '[\"l\", 999, []]' WHERE run_id = ? AND seq = ?",
        "UPDATE checkpoints SET encoding = 'full' WHERE run_id = ? AND seq = ?",
        "UPDATE checkpoints SET encoding = 'zip' WHERE run_id = ? AND seq = ?",
    ],
)
def test_a_delta_that_cannot_be_applied_is_refused_not_raised(tmp_path: Path, sql: str) -> None:
    _write(_begun(tmp_path), 40)
    seq, _ = _a_delta_row(tmp_path)
    _edit(tmp_path, sql, RUN, seq)
    _refused(tmp_path, f"checkpoint {seq} of run {RUN} ")


def test_an_edited_snapshot_breaks_the_deltas_after_it(tmp_path: Path) -> None:
    _write(_begun(tmp_path), 40)
    _edit(
        tmp_path,
        "UPDATE checkpoints SET document = replace(document, '\"n\":0', '\"n\":7') "
        "WHERE run_id = ? AND seq = 1",
        RUN,
    )
    _refused(tmp_path, f"checkpoint 1 of run {RUN} does not match its hash")


def test_removing_the_last_deltas_is_still_a_truncation(tmp_path: Path) -> None:
    _write(_begun(tmp_path), 40)
    with sqlite3.connect(tmp_path / "runs.sqlite3") as db:
        db.execute("DELETE FROM checkpoints WHERE run_id = ? AND seq > 37", (RUN,))
    db.close()
    _refused(tmp_path, "truncated: 37 of the 40")


WRITER = """
import sys
from pathlib import Path
from tidegate.store.checkpoints import CheckpointKey
from tidegate.store.db import RunStart, RunStore
from tidegate.store.faults import StoreFaults
from tests.unit.store.test_checkpoint_deltas import RUN, _state

root = Path(sys.argv[1])
store = RunStore(root / "runs.sqlite3", key=CheckpointKey.load_or_create(root), faults=StoreFaults())
store.begin_run(RunStart(RUN, "/repo", RUN, "patch", "exec-1"))
for i in range(20):
    store.flush(RUN, [], checkpoint=("phase", _state(i)))
"""


def test_a_crash_between_the_delta_and_the_head_leaves_a_readable_store(tmp_path: Path) -> None:
    env = {**os.environ, "TIDEGATE_FAULT": "checkpoint.before_head:12"}
    proc = subprocess.run(
        [sys.executable, "-c", WRITER, str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert proc.returncode == -9, proc.stderr  # killed at the fault point
    store = _store(tmp_path)
    documents = _verified(store)  # the delta of checkpoint 12 never committed
    assert len(documents) == 11
    assert [json.loads(d)["state"] for d in documents] == [_state(i) for i in range(11)]
    written = _write(store, 5, start=11)  # and the chain goes on from there
    assert _verified(store)[11:] == written


def _stored_bytes(root: Path, count: int) -> tuple[int, int]:
    """(bytes stored in checkpoint rows, bytes the whole documents would have taken)."""
    root.mkdir()
    store = _begun(root)
    written = _write(store, count)
    store.close()
    with sqlite3.connect(root / "runs.sqlite3") as db:
        (stored,) = db.execute(
            "SELECT SUM(LENGTH(document)) FROM checkpoints WHERE run_id = ?", (RUN,)
        ).fetchone()
    db.close()
    return int(stored), sum(len(d) for d in written)


def test_stored_bytes_grow_linearly_with_the_session(tmp_path: Path) -> None:
    short, short_full = _stored_bytes(tmp_path / "short", 100)
    long, long_full = _stored_bytes(tmp_path / "long", 400)
    # Whole documents of a growing state: 4x the checkpoints cost ~16x the bytes.
    assert long_full > 12 * short_full
    # Stored as deltas (with the occasional snapshot): ~4x.
    assert long < 6 * short, (short, long)
    assert long * 10 < long_full


def test_diff_and_patch_round_trip_and_share() -> None:
    old = {"a": [1, 2, {"b": True}], "c": {"d": "x"}, "gone": 1}
    new = {"a": [1, 2, {"b": 1}, 4], "c": {"d": "y"}, "new": None}
    node = diff(old, new)
    assert patch(old, node) == new
    assert old == {"a": [1, 2, {"b": True}], "c": {"d": "x"}, "gone": 1}  # unchanged
    for bad in ([], ["?"], ["l", -1, []], ["d", {"x": ["d", {}, []]}, []], ["d", [], []]):
        with pytest.raises(BadDelta):
            patch(old, bad)


def test_the_remembering_redactor_redacts_as_redact_value() -> None:
    """The store redacts checkpoint states with ``Redactor`` (memoised); it must give what
    ``redact_value`` gives, for secrets in text, under secret-named keys, and reasoning."""
    from tidegate.store.canonical import NotCanonical, canonical_json
    from tidegate.store.redact import Redactor
    from tidegate.text.sanitize import redact_value

    token = "ghp_" + "a1B2" * 9
    state = {
        "notes": [f"pushed with {token}", "plain", "export API_KEY=sk-live-0123456789abcdef"],
        "api_key": "hunter2-hunter2",
        "password": "",
        "apiKey": {"nested": "not text: walked"},
        "reasoning": {"steps": ["private"]},
        "thinking": "private",
        "headers": {"Authorization": "Bearer abc.def.ghi", "accept": "json"},
        "numbers": [1, True, None, {"token": 5}],
        ("tuple",): "odd key",
        "pairs": ("a", f"url https://user:pw@host/{token}"),
    }
    redactor = Redactor(limit=3)  # small: the memo is cleared along the way
    for _ in range(3):
        assert redactor(state) == redact_value(state)
    assert token not in json.dumps(redactor(state))
    assert redactor.canonical(state) == canonical_json(redact_value(state))
    with pytest.raises(NotCanonical, match="floats"):
        redactor.canonical({"duration": 1.5})
