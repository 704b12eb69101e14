"""An attacker with write access to the state root (but not the checkpoint key) edits the
run store so that a resume starts from the wrong place:

- deleting the *last* checkpoints of an interrupted run leaves a shorter chain whose links
  and signatures all still verify, so only the committed head (count and last hash,
  signed, rewritten with every checkpoint) shows the truncation;
- splicing in a checkpoint the store really signed, but on another branch of the run (a
  copy of the store that went on differently), keeps every record valid on its own, so
  only the back-link (``prev_hash``) check catches it.

Each is refused by ``tidegate read`` (chain not verified, no resume offered) and by
``tidegate resume`` (one line, exit 2), with the workspace and ``.git/index`` unchanged.
The same store, untouched, resumes.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import Repo
from tests.integration._store import FIX, cli, state_root
from tidegate.store import open_run_store

KILLED = {"TIDEGATE_FAULT": "phase.VERIFY"}


def _tree(repo: Repo) -> dict[str, bytes]:
    """Every file of the work tree and the git index, byte for byte."""
    files = {
        str(p.relative_to(repo.root)): p.read_bytes()
        for p in sorted(repo.root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(repo.root).parts[:1]
    }
    files[".git/index"] = (repo.root / ".git" / "index").read_bytes()
    return files


def _store_db() -> Path:
    return next(state_root().glob("*/runs.sqlite3"))


@pytest.fixture
def interrupted(committed_repo: Repo) -> tuple[Repo, str]:
    """A run killed (SIGKILL) as VERIFY starts: interrupted, with several checkpoints."""
    code, _, _ = cli(
        "run", "--objective", FIX, "--verify", "true", cwd=committed_repo.root, env=KILLED
    )
    assert code == -9
    code, runs, err = cli("runs", cwd=committed_repo.root)
    assert code == 0 and isinstance(runs, list), err
    assert runs[0]["status"] == "interrupted"
    return committed_repo, runs[0]["run_id"]


def _refused_everywhere(repo: Repo, run_id: str, words: str) -> None:
    before = _tree(repo)
    code, detail, err = cli("read", run_id, "--detail", cwd=repo.root)
    assert code == 0 and isinstance(detail, dict), err
    chain = detail["evidence"]["checkpoint_chain"]
    assert chain.startswith("refused:") and words in chain, chain
    assert detail["resume"] is None
    code, out, err = cli("resume", run_id, cwd=repo.root)
    assert code == 2 and out is None, (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and run_id in lines[0], err
    assert "Traceback" not in err
    assert _tree(repo) == before


def test_deleting_the_last_checkpoints_is_refused(interrupted: tuple[Repo, str]) -> None:
    repo, run_id = interrupted
    with sqlite3.connect(_store_db()) as db:
        (count,) = db.execute(
            "SELECT COUNT(*) FROM checkpoints WHERE run_id = ?", (run_id,)
        ).fetchone()
        assert count >= 3
        db.execute("DELETE FROM checkpoints WHERE run_id = ? AND seq > ?", (run_id, count - 2))
    db.close()

    _refused_everywhere(repo, run_id, "truncated")
    code, _, err = cli("resume", run_id, cwd=repo.root)
    assert code == 2
    assert f"{count - 2} of the {count} committed checkpoint(s) remain" in err


def test_deleting_the_head_with_the_checkpoints_is_refused(
    interrupted: tuple[Repo, str],
) -> None:
    repo, run_id = interrupted
    with sqlite3.connect(_store_db()) as db:
        db.execute("DELETE FROM checkpoints WHERE run_id = ? AND seq > 1", (run_id,))
        db.execute("DELETE FROM checkpoint_heads WHERE run_id = ?", (run_id,))
    db.close()
    _refused_everywhere(repo, run_id, "no committed head")


def test_every_checkpoint_deleted_is_refused_not_a_fresh_start(
    interrupted: tuple[Repo, str],
) -> None:
    repo, run_id = interrupted
    with sqlite3.connect(_store_db()) as db:
        db.execute("DELETE FROM checkpoints WHERE run_id = ?", (run_id,))
    db.close()
    _refused_everywhere(repo, run_id, "truncated")


def test_a_forged_head_is_refused(interrupted: tuple[Repo, str]) -> None:
    repo, run_id = interrupted
    with sqlite3.connect(_store_db()) as db:
        db.execute("DELETE FROM checkpoints WHERE run_id = ? AND seq > 2", (run_id,))
        (last,) = db.execute(
            "SELECT hash FROM checkpoints WHERE run_id = ? AND seq = 2", (run_id,)
        ).fetchone()
        db.execute(
            "UPDATE checkpoint_heads SET count = 2, last_hash = ? WHERE run_id = ?",
            (last, run_id),
        )
    db.close()
    _refused_everywhere(repo, run_id, "committed head of its checkpoint chain has a signature")


def test_a_checkpoint_spliced_from_another_branch_breaks_the_back_link(
    interrupted: tuple[Repo, str], tmp_path: Path
) -> None:
    """Two copies of the store go on from the same interrupted run; each checkpoint is
    signed by the store itself. Replacing checkpoint N+1 of one with the other's keeps
    every record's hash, signature, run and position valid, and the head still matches
    the last checkpoint: only the ``prev_hash`` link of checkpoint N+2 is wrong."""
    repo, run_id = interrupted
    db_path = _store_db()
    fork = tmp_path / "fork"
    fork.mkdir()
    for part in db_path.parent.iterdir():
        shutil.copy2(part, fork / part.name)

    store = open_run_store(repo.root, None)
    next_seq = len(store.checkpoints(run_id)) + 1
    store.flush(run_id, [], checkpoint=("phase", {"branch": "original"}))
    store.flush(run_id, [], checkpoint=("phase", {"branch": "original, later"}))
    store.close()
    # The other branch, through the store's own code on the copy (same state root key).
    other = type(store)(fork / "runs.sqlite3", key=store.key)
    foreign = other.flush(run_id, [], checkpoint=("phase", {"branch": "fork"}))
    other.close()
    assert foreign is not None and foreign.seq == next_seq

    with sqlite3.connect(db_path) as db:
        db.execute(
            "UPDATE checkpoints SET event_seq = ?, reason = ?, prev_hash = ?, hash = ?, mac = ?, "
            "document = ? WHERE run_id = ? AND seq = ?",
            (
                foreign.event_seq,
                foreign.reason,
                foreign.prev_hash,
                foreign.hash,
                foreign.mac,
                foreign.document,
                run_id,
                next_seq,
            ),
        )
    db.close()
    _refused_everywhere(repo, run_id, "does not follow the previous checkpoint")
    code, _, err = cli("resume", run_id, cwd=repo.root)
    assert code == 2
    assert f"checkpoint {next_seq + 1} of run {run_id}" in err


def test_the_untouched_store_resumes(interrupted: tuple[Repo, str]) -> None:
    """The control: the same interrupted run, not attacked, reads as verified and resumes."""
    repo, run_id = interrupted
    code, detail, err = cli("read", run_id, "--detail", cwd=repo.root)
    assert code == 0 and isinstance(detail, dict), err
    assert detail["evidence"]["checkpoint_chain"] == "verified"
    assert detail["resume"] is not None
    code, report, err = cli("resume", run_id, cwd=repo.root)
    assert code == 0 and isinstance(report, dict), err
    assert report["status"] == "succeeded"
