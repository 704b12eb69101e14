"""Attack: links planted in a task directory (it lives in a repository, so the repository
or a command may have put them there).

A ``.ledger.lock`` link aimed at ``.git/index.lock`` would make every later ``git add``
fail; a link at a temporary file's name would have a ledger write land outside the task;
the task directory swapped for a link between two writes would send the second one
elsewhere. Nothing outside the task is written, the lock link is refused in one line, and
the ledger files are still replaced whole (never written in place): a hard link to one
keeps the old bytes, and a writer killed halfway leaves the old file intact.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from tests.conftest import Repo, tidegate_cli
from tests.unit.ledger.helpers import item, new_task
from tidegate import ledger
from tidegate.ledger import ItemStatus
from tidegate.ledger.atomic import stale_temp_files

LEDGER_FILES = ("checkpoint.md", "implementation-notes.md", "ledger.md")
OUTSIDE = b"a file outside the task\n"


def _files(directory: Path) -> dict[str, bytes]:
    """The task's own files (not the lock, not temporary files)."""
    return {
        p.name: p.read_bytes()
        for p in sorted(directory.iterdir())
        if p.is_file() and not p.name.startswith(".")
    }


def _outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    (out / "victim").write_bytes(OUTSIDE)
    return out


def test_a_lock_link_to_the_git_index_lock_is_refused_and_creates_nothing(
    committed_repo: Repo,
) -> None:
    repo = committed_repo
    task = new_task(repo.root / "tasks")
    (task / ".ledger.lock").unlink()
    (task / ".ledger.lock").symlink_to("../../.git/index.lock")
    before = _files(task)

    res = tidegate_cli("ledger", "claim", str(task), "T1", "--as", "ana")

    assert res.returncode == 2, (res.returncode, res.stderr)
    assert res.stderr == f"tidegate: error: {task}/.ledger.lock: a symlink; not followed\n"
    assert not (repo.root / ".git" / "index.lock").exists()
    assert not (repo.root / ".git" / "index.lock").is_symlink()
    repo.git("add", "-A")  # git's own lock is free
    assert _files(task) == before


def test_links_at_temporary_names_are_never_written_through(tmp_path: Path) -> None:
    out = _outside(tmp_path)
    task = new_task(tmp_path)
    # The names the writer used to take (``.NAME.PID.tmp``) for this very process.
    for name in LEDGER_FILES:
        (task / f".{name}.{os.getpid()}.tmp").symlink_to(out / "victim")

    ledger.claim(task, "T1", "ana")

    assert (out / "victim").read_bytes() == OUTSIDE
    assert item(task, "T1").status is ItemStatus.IN_PROGRESS
    for name in LEDGER_FILES:
        assert (task / f".{name}.{os.getpid()}.tmp").is_symlink()  # not taken for a leftover


def test_the_task_directory_swapped_for_a_link_between_writes_gets_nothing_outside(
    tmp_path: Path,
) -> None:
    out = _outside(tmp_path)
    task = new_task(tmp_path)
    moved = tmp_path / "moved"
    before_outside = _files(out)
    swap = f"mv '{task}' '{moved}' && ln -s '{out}' '{task}'"

    res = tidegate_cli(
        "ledger",
        "claim",
        str(task),
        "T1",
        "--as",
        "ana",
        env={"TIDEGATE_FAULT": "ledger.between_writes=run", "TIDEGATE_FAULT_RUN": swap},
    )

    assert res.returncode == 0, res.stderr
    assert task.is_symlink()
    assert _files(out) == before_outside
    # Every write of the command went to the directory it started in.
    assert item(moved, "T1").status is ItemStatus.IN_PROGRESS


def test_a_hard_link_to_a_ledger_file_keeps_the_old_bytes(tmp_path: Path) -> None:
    task = new_task(tmp_path)
    out = _outside(tmp_path)
    for name in LEDGER_FILES:
        os.link(task / name, out / name)
    before = {name: (out / name).read_bytes() for name in LEDGER_FILES}
    inode = (task / "ledger.md").stat().st_ino

    ledger.claim(task, "T1", "ana")
    ledger.record(task, "T1", ["command: pytest -q (exit 0)"])

    assert {name: (out / name).read_bytes() for name in LEDGER_FILES} == before
    assert (task / "ledger.md").stat().st_ino != inode
    assert item(task, "T1").evidence


def test_a_writer_killed_halfway_through_a_file_leaves_it_whole(tmp_path: Path) -> None:
    task = new_task(tmp_path)
    before = _files(task)

    res = tidegate_cli(
        "ledger",
        "claim",
        str(task),
        "T1",
        "--as",
        "ana",
        env={"TIDEGATE_FAULT": "write.half_written"},
    )

    assert res.returncode == -signal.SIGKILL, (res.returncode, res.stderr)
    after = _files(task)
    assert after == before  # the file being written is old and whole; none half-new
    assert len(stale_temp_files(task)) == 1  # the half-written temporary file, ignored
    assert ledger.load(task)[1].item == "T1"
    ledger.claim(task, "T1", "ana")
    assert stale_temp_files(task) == []
