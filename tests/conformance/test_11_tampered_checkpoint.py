"""Matrix 11: a tampered checkpoint, or a changed workspace, is refused.

One run is paused; then, one at a time, its stored checkpoints are attacked the way
someone with write access to the state root (but not the key) could: an edited byte, an
edited byte with the hash recomputed, an edited delta row, a deleted checkpoint (a broken chain), a forged
signature, a replaced key. Each resume is refused in one line, exit 2, with nothing
changed; after each attack the store is put back, and finally an untouched store resumes.
The same run is refused while the workspace differs from its checkpoint."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import signal
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Repo
from tests.integration._store import FIX, cli, start, state_root, wait_for_checkpoint_after
from tidegate.store.chain_rows import rebuild
from tidegate.store.reading import CHECKPOINT_ROW

CHECK = f"sleep 2; {sys.executable} -c 'from calc import add; assert add(2, 3) == 5'"


def _document(db: sqlite3.Connection, run_id: str, seq: int) -> str:
    """Checkpoint ``seq``'s signed document as a reader rebuilds it (most rows hold only a
    delta on the row before: ``tidegate.store.chain_rows``)."""
    rows = db.execute(
        f"SELECT {CHECKPOINT_ROW} FROM checkpoints WHERE run_id = ? AND seq <= ? ORDER BY seq",
        (run_id, seq),
    ).fetchall()
    document = rebuild(run_id, rows)[-1].document
    assert '"max_attempts":3' in document
    return document


def _rewrite(db: sqlite3.Connection, run_id: str, seq: int, document: str, digest: str) -> None:
    """Store ``document`` whole as checkpoint ``seq``, with the hash ``digest``."""
    db.execute(
        "UPDATE checkpoints SET document = ?, encoding = 'full', hash = ? "
        "WHERE run_id = ? AND seq = ?",
        (document, digest, run_id, seq),
    )


def _edit_byte(db: sqlite3.Connection, run_id: str) -> None:
    (digest,) = db.execute(
        "SELECT hash FROM checkpoints WHERE run_id = ? AND seq = 3", (run_id,)
    ).fetchone()
    edited = _document(db, run_id, 3).replace('"max_attempts":3', '"max_attempts":9')
    _rewrite(db, run_id, 3, edited, digest)


def _edit_with_hash(db: sqlite3.Connection, run_id: str) -> None:
    (last,) = db.execute("SELECT MAX(seq) FROM checkpoints WHERE run_id = ?", (run_id,)).fetchone()
    edited = _document(db, run_id, last).replace('"max_attempts":3', '"max_attempts":9')
    digest = "sha256:" + hashlib.sha256(edited.encode()).hexdigest()
    _rewrite(db, run_id, last, edited, digest)


def _edit_delta(db: sqlite3.Connection, run_id: str) -> None:
    """A delta row edited in place: it still applies, to other values."""
    seq, text = db.execute(
        "SELECT seq, document FROM checkpoints WHERE run_id = ? AND encoding = 'delta' "
        "ORDER BY seq LIMIT 1",
        (run_id,),
    ).fetchone()
    node = json.loads(text)
    node[1]["planted"] = ["=", "by someone with write access"]
    db.execute(
        "UPDATE checkpoints SET document = ? WHERE run_id = ? AND seq = ?",
        (json.dumps(node), run_id, seq),
    )


def _delete_middle(db: sqlite3.Connection, run_id: str) -> None:
    db.execute("DELETE FROM checkpoints WHERE run_id = ? AND seq = 2", (run_id,))


def _forge_mac(db: sqlite3.Connection, run_id: str) -> None:
    db.execute(
        "UPDATE checkpoints SET mac = ? WHERE run_id = ? AND seq = 1",
        ("hmac-sha256:" + "0" * 64, run_id),
    )


ATTACKS: dict[str, tuple[Callable[[sqlite3.Connection, str], None] | None, str]] = {
    "edited byte": (_edit_byte, "checkpoint 3 of run {run} does not match its hash"),
    "edited delta": (_edit_delta, "does not match its hash"),
    "edited byte, hash recomputed": (_edit_with_hash, "signature that does not match"),
    "deleted checkpoint": (_delete_middle, "out of sequence"),
    "forged signature": (_forge_mac, "checkpoint 1 of run {run} has a signature"),
    "replaced key": (None, "checkpoint 1 of run {run} has a signature"),
}


@pytest.fixture
def paused(committed_repo: Repo) -> tuple[Repo, str]:
    proc = start("run", "--objective", FIX, "--verify", CHECK, cwd=committed_repo.root)
    run_id = wait_for_checkpoint_after(committed_repo, "APPLY", proc)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert proc.returncode == 130
    return committed_repo, run_id


def test_tampered_checkpoints_are_refused(paused: tuple[Repo, str], tmp_path: Path) -> None:
    repo, run_id = paused
    root = state_root()
    [store_path] = root.glob("*/runs.sqlite3")
    key_path = root / "checkpoint.key"
    backup = tmp_path / "backup"
    backup.mkdir()
    for attack, (tamper, expected) in ATTACKS.items():
        shutil.copy2(store_path, backup / "runs.sqlite3")
        shutil.copy2(key_path, backup / "checkpoint.key")
        if tamper is None:
            key_path.unlink()
            fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.write(fd, secrets.token_hex(32).encode() + b"\n")
            os.close(fd)
        else:
            db = sqlite3.connect(store_path)
            tamper(db, run_id)
            db.commit()
            db.close()  # the last connection: the WAL is folded into the file and removed
        before = repo.tree_state(with_mtimes=True)

        code, _, err = cli("resume", run_id, cwd=repo.root)

        assert code == 2, (attack, err)
        assert err.count("\n") == 1 and expected.format(run=run_id) in err, (attack, err)
        assert err.rstrip().endswith("refusing to resume"), attack
        assert repo.tree_state(with_mtimes=True) == before, attack
        shutil.copy2(backup / "runs.sqlite3", store_path)
        shutil.copy2(backup / "checkpoint.key", key_path)

    repo.write("calc.py", "def add(a, b):\n    return b - a\n")
    code, _, err = cli("resume", run_id, cwd=repo.root)
    assert code == 2 and "the workspace changed (calc.py) since checkpoint" in err
    repo.git("checkout", "--", "calc.py")

    code, report, err = cli("resume", run_id, cwd=repo.root)
    assert code == 0, err
    assert isinstance(report, dict) and report["status"] == "succeeded"
