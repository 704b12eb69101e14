"""The warm shadow pool: one shadow per work tree, reset to each run's T0."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._pool import pool_path, pool_paths, remove_pool
from tests.conftest import Repo

EDIT = "edit-file: f.txt\nreplace: two\nwith: TWO\n"


@pytest.fixture(autouse=True)
def _remove_pool(repo: Repo) -> Iterator[None]:
    yield
    remove_pool(repo)


def test_second_run_reuses_the_shadow_and_sees_the_new_t0(repo: Repo) -> None:
    repo.write("f.txt", "one\ntwo\n")
    repo.write("gone.txt", "bye\n")
    repo.commit_all()
    index = repo.index_bytes()

    first = repo.run(EDIT, verify="test ! -e leftover", warm_shadow=True)
    assert first.status == "succeeded", first.message
    shadow = pool_path(repo)
    assert shadow.is_dir() and any("shadow kept at" in n for n in first.notes)
    (shadow / "leftover").write_text("from an earlier run\n")  # must not survive a reset

    # The user moves on: the edit is reverted, a file deleted, another one created.
    repo.write("f.txt", "one\ntwo\nthree\n")
    (repo.root / "gone.txt").unlink()
    repo.write("new.txt", "untracked\n")
    second = repo.run(
        EDIT,
        verify="test ! -e leftover && test ! -e gone.txt && grep -q three f.txt && test -f new.txt",
        warm_shadow=True,
    )
    assert second.status == "succeeded", second.message
    assert second.attempts == 1
    assert any(f"reused the warm shadow {shadow}" in n for n in second.notes)
    assert pool_path(repo) == shadow
    assert repo.read("f.txt") == "one\nTWO\nthree\n"
    assert repo.index_bytes() == index


def test_a_broken_pool_is_replaced(repo: Repo) -> None:
    repo.write("f.txt", "one\ntwo\n")
    repo.commit_all()
    assert repo.run(EDIT, warm_shadow=True).status == "succeeded"
    old = pool_path(repo)
    shutil.rmtree(old)  # e.g. the temp dir was cleaned
    repo.git("checkout", "--", "f.txt")
    report = repo.run(EDIT, warm_shadow=True)
    assert report.status == "succeeded", report.message
    assert pool_path(repo) != old and pool_path(repo).is_dir()
    assert not any("reused" in n for n in report.notes)
    listed = repo.git("worktree", "list", "--porcelain")
    assert str(old) not in listed


def test_pool_from_config_and_fresh_shadows_still_removed(repo: Repo) -> None:
    repo.write("f.txt", "one\ntwo\n")
    repo.commit_all()
    assert repo.run(EDIT).status == "succeeded"
    assert "tidegate-" not in repo.git("worktree", "list")  # default: fresh and removed
    repo.git("checkout", "--", "f.txt")
    repo.write(".tidegate/config.toml", "[shadow]\npool = true\n")
    assert repo.run(EDIT).status == "succeeded"
    assert pool_path(repo).name.startswith("tidegate-pool-")


def test_a_shadow_a_command_committed_in_staged_in_and_littered_is_back_at_t0(repo: Repo) -> None:
    """Whatever state a run left the pooled shadow in (a new commit on its HEAD, staged
    and unstaged edits, untracked and ignored files, a deleted file), the next run's
    shadow is exactly its T0."""
    repo.write(".gitignore", "*.log\n")
    repo.write("f.txt", "one\ntwo\n")
    repo.write("keep.txt", "kept\n")
    repo.commit_all()
    assert repo.run(EDIT, warm_shadow=True).status == "succeeded"
    shadow = pool_path(repo)
    git_dir = (shadow / ".git").read_text().split(":", 1)[1].strip()
    env = ["--git-dir", git_dir, "--work-tree", str(shadow)]
    (shadow / "keep.txt").write_text("changed by a command\n")
    repo.git(*env, "commit", "-qam", "a command committed in the shadow")
    (shadow / "staged.txt").write_text("staged\n")
    repo.git(*env, "add", "staged.txt")
    (shadow / "f.txt").write_text("edited\n")
    (shadow / "keep.txt").unlink()
    (shadow / "build.log").write_text("ignored\n")
    (shadow / "junk").mkdir()
    (shadow / "junk" / "x").write_text("untracked\n")

    repo.git("checkout", "--", "f.txt")
    report = repo.run(
        EDIT,
        verify="grep -qx kept keep.txt && test ! -e staged.txt && test ! -e build.log "
        "&& test ! -e junk && git diff --quiet HEAD -- keep.txt",
        warm_shadow=True,
    )
    assert report.status == "succeeded", report.message
    assert report.attempts == 1  # a retry would begin with a ROLLBACK of its own
    # git's state of the shadow moved (a commit, a staged file): no undo, the full way
    assert any("reused the warm shadow" in n and "cleaned in full" in n for n in report.notes)
    assert repo.git(*env, "rev-parse", "HEAD").strip() == report.t0_commit
    # Only the run's own candidate edit is left in it.
    assert repo.git(*env, "status", "--porcelain", "--untracked-files=all", "--ignored") == (
        " M f.txt\n"
    )


def test_acquiring_the_pool_without_a_started_cleaning_cleans_it_there(repo: Repo) -> None:
    """The synchronous way (``tidegate resume`` takes it): a second acquire reuses the
    pooled shadow, cleaned, at the new commit."""
    from tidegate.workspace.repo import discover
    from tidegate.workspace.shadow import acquire_shadow

    repo.write("f.txt", "one\n")
    first_commit = repo.commit_all()
    root = discover(repo.root)
    root.runtime_dir.mkdir(exist_ok=True)  # a run's lock makes it
    first = acquire_shadow(root, first_commit, "run-1", pool=True)
    first.unknown()  # a command writes in it directly: the next cleaning is the full one
    (first.path / "f.txt").write_text("scribbled\n")
    (first.path / "stray.txt").write_text("left behind\n")
    repo.write("f.txt", "two\n")
    second_commit = repo.commit_all()
    # While run-1 uses slot 0's warm shadow, another run gets the next slot: a new
    # pooled shadow, kept there for the next run that overlaps.
    busy = acquire_shadow(discover(repo.root), second_commit, "run-x", pool=True)
    assert busy.pooled and busy.slot == 1 and busy.path != first.path
    busy.release(keep=False)
    assert busy.path.exists() and pool_path(repo, 1) == busy.path
    first.release(keep=False)  # the pool is free again

    second = acquire_shadow(discover(repo.root), second_commit, "run-2", pool=True)

    assert second.reused and second.path == first.path
    assert (second.path / "f.txt").read_text() == "two\n"
    assert not (second.path / "stray.txt").exists()
    assert second.git.out("rev-parse", "HEAD") == second_commit
    second.release(keep=False)


def test_a_run_finding_every_slot_in_use_gets_a_shadow_of_its_own(repo: Repo) -> None:
    """The pool never grows past its slots: with each slot's lock held by a live run, the
    next run checks out a shadow of its own and removes it when it ends."""
    from tidegate.workspace.lock import POOL_SLOTS, PoolLock
    from tidegate.workspace.repo import discover
    from tidegate.workspace.shadow import acquire_shadow

    repo.write("f.txt", "one\n")
    commit = repo.commit_all()
    root = discover(repo.root)
    root.runtime_dir.mkdir(exist_ok=True)
    held = [PoolLock(root.runtime_dir, f"live-{s}", s) for s in range(POOL_SLOTS)]
    assert all(lock.try_acquire() for lock in held)
    try:
        own = acquire_shadow(root, commit, "run-9", pool=True)
        assert not own.pooled and (own.path / "f.txt").read_text() == "one\n"
        own.release(keep=False)
        assert not own.path.exists()
        assert pool_paths(repo) == {}
    finally:
        for lock in held:
            lock.release()


@pytest.mark.parametrize("unmerged", [False, True], ids=["changes", "unmerged-entry"])
def test_every_kind_of_leftover_in_tracked_paths_is_undone(repo: Repo, unmerged: bool) -> None:
    """The cleaning's cheap way (a look at the tracked files, then only the reported paths
    back to HEAD) and its full reset both leave exactly HEAD: type changes both ways, a mode
    change, a deleted file, a file turned directory, an empty directory, a file staged as new
    and, with ``unmerged``, conflict stages in the index (only the reset undoes those)."""
    repo.write("f.txt", "one\ntwo\n")
    repo.write("link-me.txt", "target\n")
    repo.write("tool.sh", "#!/bin/sh\n")
    repo.write("dir/inner.txt", "inner\n")
    repo.write("gone.txt", "bye\n")
    repo.commit_all()
    assert repo.run(EDIT, warm_shadow=True).status == "succeeded"
    shadow = pool_path(repo)
    git_dir = (shadow / ".git").read_text().split(":", 1)[1].strip()
    env = ["--git-dir", git_dir, "--work-tree", str(shadow)]
    (shadow / "link-me.txt").unlink()
    (shadow / "link-me.txt").symlink_to("/etc/passwd")  # file -> symlink
    (shadow / "tool.sh").chmod(0o755)  # mode change
    shutil.rmtree(shadow / "dir")
    (shadow / "dir").write_text("a file where a directory was\n")  # directory -> file
    (shadow / "gone.txt").unlink()
    (shadow / "empty").mkdir()  # git lists no empty directory
    (shadow / "new.txt").write_text("staged as new\n")
    repo.git(*env, "add", "new.txt")
    if unmerged:
        blob = repo.git(*env, "hash-object", "-w", "--stdin", input=b"theirs\n").strip()
        stages = "".join(f"100644 {blob} {n}\tf.txt\n" for n in (1, 2, 3))
        repo.git(
            *env, "update-index", "--index-info", input=(f"0 {'0' * 40}\tf.txt\n" + stages).encode()
        )

    repo.git("checkout", "--", "f.txt")
    report = repo.run(
        EDIT,
        verify="test -f link-me.txt && ! test -L link-me.txt && ! test -x tool.sh "
        "&& test -f dir/inner.txt && test -f gone.txt && test ! -e empty && test ! -e new.txt",
        warm_shadow=True,
    )
    assert report.status == "succeeded", report.message
    assert report.attempts == 1  # a retry would begin with a ROLLBACK of its own
    # git's state of the shadow moved (a commit, a staged file): no undo, the full way
    assert any("reused the warm shadow" in n and "cleaned in full" in n for n in report.notes)
    assert repo.git(*env, "status", "--porcelain", "--untracked-files=all", "--ignored") == (
        " M f.txt\n"
    )
    assert "100644" in repo.git(*env, "ls-files", "-s", "tool.sh")


def test_the_pools_index_stays_split(repo: Repo) -> None:
    """The kept shadow's index is split, and stays so after full cleanings (whose refresh
    rewrites every racily clean entry): each restore then rewrites a small index."""
    for i in range(30):
        repo.write(f"d/f{i}.txt", f"{i}\n")
    repo.write("f.txt", "one\ntwo\n")
    repo.commit_all()
    repo.write(".tidegate/config.toml", '[shadow]\nverify_layer = "off"\n')  # full cleanings
    for _ in range(3):
        assert repo.run(EDIT, verify="true", warm_shadow=True).status == "succeeded"
        repo.git("checkout", "--", "f.txt")
    admin = Path((pool_path(repo) / ".git").read_text().split(":", 1)[1].strip())
    index = (admin / "index").read_bytes()
    # A split index names its shared part: the part's id is in the "link" extension.
    shared = [bytes.fromhex(p.name.split(".", 1)[1]) for p in admin.glob("sharedindex.*")]
    assert any(oid in index for oid in shared)
