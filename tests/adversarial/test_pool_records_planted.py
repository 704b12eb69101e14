"""A warm-pool slot's record (``.git/tidegate/shadow-pool[.N]``) names a directory the next
pooled run cleans with destructive git (``clean -ffdx``, ``checkout``) or removes when it is
not a healthy shadow. Anything that can write ``.git`` (an uncontained command) could plant
one; whatever it names, no directory but tidegate's own pooled worktrees is ever cleaned or
removed, and a slot never takes over a shadow another slot's run is using."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._pool import pool_path, pool_record, remove_pool
from tests.conftest import Repo
from tidegate.workspace.lock import PoolLock
from tidegate.workspace.repo import discover
from tidegate.workspace.shadow import acquire_shadow


@pytest.fixture
def work(repo: Repo) -> Iterator[Repo]:
    repo.write("f.txt", "one\n")
    repo.commit_all()
    (repo.root / ".git" / "tidegate").mkdir(exist_ok=True)
    yield repo
    remove_pool(repo)


def _victim(tmp_path: Path, name: str) -> Path:
    victim = tmp_path / name
    (victim / "sub").mkdir(parents=True)
    (victim / "sub" / "precious.txt").write_text("the user's\n")
    return victim


@pytest.mark.parametrize(
    "name",
    ["not-a-pool-dir", "tidegate-pool-lookalike"],
    ids=["any-directory", "pool-named-directory"],
)
@pytest.mark.parametrize("slot", [0, 3])
def test_a_record_naming_another_directory_removes_nothing(
    work: Repo, tmp_path: Path, name: str, slot: int
) -> None:
    victim = _victim(tmp_path, name)
    # Slots below ``slot`` are in use, so the run takes the planted one.
    held = [PoolLock(work.root / ".git" / "tidegate", "busy", s) for s in range(slot)]
    assert all(lock.try_acquire() for lock in held)
    pool_record(work, slot).write_text(f"{victim}\n")
    try:
        shadow = acquire_shadow(discover(work.root), work.git("rev-parse", "HEAD").strip(),
                                "run-1", pool=True)  # fmt: skip
        assert shadow.pooled and shadow.slot == slot and shadow.path != victim
        shadow.release(keep=False)
    finally:
        for lock in held:
            lock.release()
    assert (victim / "sub" / "precious.txt").read_text() == "the user's\n"
    assert pool_path(work, slot) != victim


def test_a_slot_never_takes_a_shadow_another_slot_is_using(work: Repo) -> None:
    """Slot 1's record planted to name slot 0's shadow while a run uses it: the next run
    gets a new shadow for slot 1, and slot 0's run's files are untouched."""
    root = discover(work.root)
    head = work.git("rev-parse", "HEAD").strip()
    first = acquire_shadow(root, head, "run-1", pool=True)
    assert first.slot == 0
    (first.path / "f.txt").write_text("run-1 is using this\n")
    pool_record(work, 1).write_text(f"{first.path}\n")
    try:
        second = acquire_shadow(discover(work.root), head, "run-2", pool=True)
        assert second.slot == 1 and second.path != first.path
        second.release(keep=False)
        assert (first.path / "f.txt").read_text() == "run-1 is using this\n"
        assert first.path.is_dir() and pool_path(work, 1) == second.path
    finally:
        first.release(keep=False)


def test_the_temp_dir_itself_is_never_removed(
    work: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pool's own parent (the OS temp dir) named by a record stays. The test's temp
    dir stands in for it: before the fix this removed the whole directory, which, on the
    real one, is every other process's temp files too."""
    temp = _victim(tmp_path, "tmp")
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    pool_record(work).write_text(f"{temp}\n")
    shadow = acquire_shadow(discover(work.root), work.git("rev-parse", "HEAD").strip(),
                            "run-1", pool=True)  # fmt: skip
    assert shadow.path.parent == temp
    shadow.release(keep=False)
    assert (temp / "sub" / "precious.txt").read_text() == "the user's\n"
