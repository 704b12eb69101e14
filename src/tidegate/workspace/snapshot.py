"""The T0 snapshot: HEAD, the index and the work tree, frozen as a commit.

Built through a temporary copy of the index (``GIT_INDEX_FILE``), so the user's own index
file is only ever read. The copy keeps git's stat cache, which makes ``git add -A`` hash
only the files that changed since the user last touched the index.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import stat
import threading
from pathlib import Path
from typing import BinaryIO

import msgspec

from tidegate.disk.faults import maybe_crash
from tidegate.errors import GitError
from tidegate.git.command import Git
from tidegate.git.settings import IDENTITY
from tidegate.workspace.confine.entries import DIR_FLAGS
from tidegate.workspace.loose import write_commit
from tidegate.workspace.repo import Repository

REF_PREFIX = "refs/tidegate/runs"


def result_ref(run_id: str) -> str:
    """The ref of a run's verified change: a commit of the candidate tree on T0, kept
    when the run lands or holds it (``tidegate apply`` and ``tidegate undo`` read it)."""
    return f"{REF_PREFIX}/{run_id}/result"


class T0Snapshot(msgspec.Struct, frozen=True):
    run_id: str
    head: str
    commit: str
    """Commit whose tree is the work tree at T0 (tracked + untracked-not-ignored), parent HEAD."""
    index_tree: str | None
    """Tree of the staged state at T0; None while the index has unresolved conflicts."""
    index_file: Path | None = None
    tree: str | None = None
    """The tree of ``commit`` (the work tree at T0), when known."""
    """A scratch index holding exactly the T0 tree (with its cached trees): a cheap starting
    point for candidate indexes, instead of reading 'T0' into an empty one."""

    @property
    def ref(self) -> str:
        return f"{REF_PREFIX}/{self.run_id}/t0"


class T0Trees(msgspec.Struct, frozen=True):
    """The trees of a T0 snapshot before it is recorded: no commit, no ref yet."""

    index_tree: str | None
    tree: str
    index_file: Path


def take_snapshot(repo: Repository, run_id: str, scratch: Path) -> T0Snapshot:
    """Record the T0 state of ``repo`` under ``refs/tidegate/runs/<run_id>/``."""
    return record_snapshot(repo, run_id, snapshot_trees(repo, scratch))


def snapshot_trees(repo: Repository, scratch: Path) -> T0Trees:
    """The trees of the index and of the work tree as they are now, written to the object
    store through a scratch index in ``scratch``; no ref changes, so it may run before the
    run is decided (``tidegate.flow.headstart``)."""
    git = repo.git
    temp_index = scratch / "t0.index"
    if repo.index_path.exists():
        # copy2 keeps the mtime: git judges "racily clean" entries against it, so a fresh
        # mtime would make it trust stale stat data for files edited just after `git add`.
        shutil.copy2(repo.index_path, temp_index)
    maybe_crash("snapshot.index_copied")  # crash tests: die while the scratch index exists
    env = {"GIT_INDEX_FILE": str(temp_index), **IDENTITY}
    # The staged tree from a second copy, beside the scan: the two need nothing of each
    # other, and the scan is the run's longest wait.
    staged: list[str | BaseException | None] = []
    staged_copy = scratch / "t0-staged.index"
    if temp_index.exists():
        shutil.copy2(temp_index, staged_copy)

    def write_staged() -> None:
        try:
            staged.append(_staged_tree(git, staged_copy))
        except BaseException as exc:  # raised in the caller's thread
            staged.append(exc)

    writer = threading.Thread(target=write_staged, name="tidegate-staged-tree", daemon=True)
    writer.start()
    settings = threading.Thread(target=_read_settings, args=(git,), daemon=True)
    try:
        # The whole tree (add runs at its top). --sparse: a file the user (or an earlier
        # run) put outside a sparse checkout's cone is part of the work tree too; without
        # it, git refuses and every run fails here. Skip-worktree entries keep their index
        # version.
        added = git.run("add", "--all", "--sparse", "--verbose", env=env).stdout
        # The settings the run's later phases read, on the core the scan no longer needs.
        settings.start()
        tree = _unchanged_tree(added, writer, staged, staged_copy, temp_index)
        if tree is None:
            tree = git.out("write-tree", env=env)
    finally:
        if settings.ident is not None:
            settings.join()
        writer.join()
        staged_copy.unlink(missing_ok=True)
    index_tree = staged[0]
    if isinstance(index_tree, BaseException):
        raise index_tree
    return T0Trees(index_tree=index_tree, tree=tree, index_file=temp_index)


def _unchanged_tree(
    added: bytes,
    writer: threading.Thread,
    staged: list[str | BaseException | None],
    staged_copy: Path,
    temp_index: Path,
) -> str | None:
    """The work tree's tree when the scan changed nothing in the index (else None).

    ``add --verbose`` names every path it adds, updates or removes, so no output means
    the index holds the same entries as the staged copy: the work tree's tree is the
    staged tree, and the staged copy (the same entries, its cached trees complete) becomes
    T0's index. That saves the ``write-tree`` that would write the 4.8 MB index of a
    50,000-file repository once more, on the critical path of every run on a clean tree."""
    if added.strip():
        return None
    writer.join()
    tree = staged[0] if staged else None
    if not isinstance(tree, str):
        return None  # unmerged entries (or an error): the scan's own write-tree decides
    os.replace(staged_copy, temp_index)
    return tree


def _read_settings(git: Git) -> None:
    with contextlib.suppress(GitError, OSError):  # read again, and reported, where used
        git.core_settings()


def _staged_tree(git: Git, index: Path) -> str | None:
    """The tree of the index at ``index``; None for unmerged entries (the staged state has
    no tree of its own)."""
    try:
        return git.out("write-tree", env={"GIT_INDEX_FILE": str(index), **IDENTITY})
    except GitError:
        return None


def record_snapshot(repo: Repository, run_id: str, trees: T0Trees) -> T0Snapshot:
    """T0 as commits on HEAD, under the run's refs (both created in one transaction)."""
    git = repo.git
    commit = write_commit(repo, trees.tree, repo.head, f"tidegate T0 for run {run_id}")
    snapshot = T0Snapshot(
        run_id=run_id,
        head=repo.head,
        commit=commit,
        index_tree=trees.index_tree,
        index_file=trees.index_file,
        tree=trees.tree,
    )
    # Both refs in one transaction; "create": neither may exist yet.
    refs = [(snapshot.ref, commit)]
    if trees.index_tree is not None:
        staged = write_commit(repo, trees.index_tree, repo.head, f"tidegate T0 index for {run_id}")
        refs.append((f"{REF_PREFIX}/{run_id}/index", staged))
    git.create_refs(refs)
    return snapshot


def excluded_already(repo: Repository) -> bool:
    """Whether ``.git/info/exclude`` is a plain file that already has tidegate's line, so
    that ``ensure_excluded`` would write nothing (read-only; symlinks are not followed)."""
    try:
        dir_fd = os.open(repo.common_dir / "info", DIR_FLAGS)
    except OSError:
        return False
    try:
        fd = os.open("exclude", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return False
    finally:
        os.close(dir_fd)
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            return False
        return _has_exclude_line(fh.read().decode("utf-8", errors="replace"))


def ensure_excluded(repo: Repository) -> bool:
    """Add ``.tidegate/`` to ``.git/info/exclude`` (the only edit tidegate makes there).

    Opened without following symlinks: when ``info/`` or ``info/exclude`` is a symlink, a
    hard link or not a regular file, nothing is written and False is returned (a symlink
    there could send the line to any file the user can write)."""
    info = repo.common_dir / "info"
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(info, 0o755)
        dir_fd = os.open(info, DIR_FLAGS)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            return False
        raise
    try:
        flags = os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open("exclude", flags, 0o644, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EISDIR, errno.ENXIO):
                return False
            raise
        with os.fdopen(fd, "r+b") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
                return False
            # Runs start side by side: one reads and appends at a time (no line twice).
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            _append_exclude(fh)
        return True
    finally:
        os.close(dir_fd)


def _append_exclude(fh: BinaryIO) -> None:
    line = "/.tidegate/"
    existing = fh.read().decode("utf-8", errors="replace")
    if _has_exclude_line(existing):
        return
    prefix = "" if not existing or existing.endswith("\n") else "\n"
    fh.write(f"{prefix}# tidegate runtime files (rejects, notes)\n{line}\n".encode())


def _has_exclude_line(text: str) -> bool:
    return any(
        entry.strip() in ("/.tidegate/", ".tidegate/", ".tidegate") for entry in text.splitlines()
    )
