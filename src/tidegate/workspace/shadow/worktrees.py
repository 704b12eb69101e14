"""The shadows' linked git worktrees on disk: added, found by their links, discarded.

git's worktree commands are not safe against each other: each reads every linked work
tree's admin files, which a concurrent ``worktree add`` is still writing, and dies on one
it catches half-written ("failed to read .../commondir"); a ``remove`` racing a ``prune``
dies too. Measured with 8 loops of add+remove on one repository: ~1% of calls fail. So
every worktree command tidegate runs holds one lock per repository (``admin``), and a
shadow's files are checked out after it, outside the lock.

A ``worktree add`` killed between writing an admin file's name and its content leaves an
entry that makes every later ``git worktree`` command, and ``git gc``, die until it is
removed by hand. Under the lock nobody is adding, so a tidegate entry still marked as
being added is such a leftover: ``admin`` removes it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

from tidegate.disk.linksafe import WriteRefused, held_lock, opened_dir
from tidegate.errors import GitError
from tidegate.git.command import Git
from tidegate.workspace.lock import POOL_SLOTS, pool_name
from tidegate.workspace.repo import Repository

SHADOW_PREFIX = "tidegate-shadow-"
POOL_PREFIX = "tidegate-pool-"
SCRATCH_PREFIX = "tidegate-run-"
ADMIN_LOCK = "worktrees.lock"
_held = threading.local()


@contextlib.contextmanager
def admin(repo: Repository) -> Iterator[None]:
    """The repository's worktree lock (``<common-dir>/tidegate/worktrees.lock``), held by
    this thread for the block; re-entered, it is already held."""
    if getattr(_held, "depth", 0):
        yield
        return
    shown = repo.common_dir / "tidegate" / ADMIN_LOCK
    with (
        opened_dir(repo.common_dir, "tidegate", create=True, mode=0o777) as dir_fd,
        held_lock(dir_fd, ADMIN_LOCK, shown=shown),
    ):
        _held.depth = 1
        try:
            _drop_half_made(repo)
            yield
        finally:
            _held.depth = 0


def _drop_half_made(repo: Repository) -> None:
    """Remove the admin entries of tidegate's own work trees that a killed ``worktree add``
    left locked: git locks an entry "initializing" while adding it (tidegate's git runs
    with ``LC_ALL=C``: never a translation), and every add runs under ``admin``. A lock
    with any other reason is someone's on purpose, and stays."""
    entries = repo.common_dir / "worktrees"
    try:
        names = os.listdir(entries)
    except OSError:
        return
    for name in names:
        if (
            name.startswith((SHADOW_PREFIX, POOL_PREFIX))
            and _lock_reason(entries / name / "locked") == b"initializing"
        ):
            shutil.rmtree(entries / name, ignore_errors=True)  # never through a link


def _lock_reason(path: Path) -> bytes | None:
    data = _read_nofollow(path, 64)
    return None if data is None else data.strip()


def _read_nofollow(path: Path, limit: int) -> bytes | None:
    """Up to ``limit`` bytes of the file at ``path``, never through a link; None when
    there is no such file or it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        return os.read(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def add_worktree(repo: Repository, path: Path, commit: str) -> None:
    with admin(repo):
        repo.git.run("worktree", "add", "--no-checkout", "--detach", "--quiet", str(path), commit)
    # What ``worktree add`` runs to check out, here outside the lock. checkout.workers=0:
    # one checkout worker per core (git >= 2.32; older gits ignore the key). The full
    # checkout is most of a cold run; on 2 cores it is ~35% shorter.
    Git(path, git_dir=shadow_git_dir(repo, path), work_tree=path).run(
        "-c", "checkout.workers=0", "reset", "--hard", "--quiet", "--no-recurse-submodules"
    )


def discard(repo: Repository, path: Path) -> None:
    """Remove a shadow whatever state it is in (half-made and still locked by a killed
    ``git worktree add`` included), with Ctrl-C and SIGTERM held meanwhile."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        with admin(repo):
            # Twice --force: also a worktree git left locked ("initializing").
            removed = repo.git.run(
                "worktree", "remove", "--force", "--force", str(path), check=False
            )
            if removed.returncode != 0:  # not (or no longer) a registered worktree
                shutil.rmtree(path, ignore_errors=True)
                repo.git.run("worktree", "prune", check=False)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def pooled_path(repo: Repository, slot: int, forget: bool = True) -> Path | None:
    """Pool slot ``slot``'s recorded warm shadow, if it is still one of this repository's
    worktrees and no other slot's record names it. A record that names anything else is
    forgotten; what it names is removed only if it is a pool worktree git has registered
    for this repository (never a directory a planted record names, never another slot's).
    ``forget`` False: change nothing, only say whether there is a healthy one."""
    record = repo.runtime_dir / pool_name(slot)
    path = _read_record(record)
    if path is None:
        return None
    shared = any(
        _read_record(repo.runtime_dir / pool_name(s)) == path
        for s in range(POOL_SLOTS)
        if s != slot
    )
    pooled = path.name.startswith(POOL_PREFIX)
    if pooled and not shared and links_back(repo, path):
        return path
    if not forget:
        return None
    record.unlink(missing_ok=True)
    with admin(repo):
        if pooled and not shared and str(path) in registered(repo):
            repo.git.run("worktree", "remove", "--force", "--force", str(path), check=False)
        repo.git.run("worktree", "prune", check=False)
    return None


def _read_record(record: Path) -> Path | None:
    """The absolute path a pool record names, read without following a link; None when
    there is no such record or it names no absolute path."""
    data = _read_nofollow(record, 8192)
    if data is None:
        return None
    text = data.decode("utf-8", "surrogateescape").strip()
    path = Path(text)
    return path if text and path.is_absolute() and "\n" not in text else None


def registered(repo: Repository) -> list[str]:
    """The work trees git lists for ``repo``, in its order. Listed without the lock where
    it cannot be taken (a git dir this user may only read): listing writes nothing."""
    listing_args = ("worktree", "list", "--porcelain", "-z")
    try:
        with admin(repo):
            listing = repo.git.run(*listing_args).stdout.split(b"\0")
    except (OSError, WriteRefused):
        listing = repo.git.run(*listing_args).stdout.split(b"\0")
    return [
        entry[len(b"worktree ") :].decode("utf-8", "surrogateescape")
        for entry in listing
        if entry.startswith(b"worktree ")
    ]


def links_back(repo: Repository, path: Path) -> bool:
    """``path`` is one of ``repo``'s linked work trees the way ``git worktree list`` reads
    them, without running git: its ``.git`` file names an admin dir of ``repo``'s
    (``shadow_git_dir``) whose ``gitdir`` file names ``path`` back. A ``.git`` rewritten
    to another work tree's admin dir fails the second half."""
    try:
        admin = shadow_git_dir(repo, path)
        back = (admin / "gitdir").read_text(encoding="utf-8").strip()
    except (GitError, OSError, UnicodeDecodeError):
        return False
    return back == f"{path}/.git"


def shadow_git_dir(repo: Repository, path: Path) -> Path:
    """The git dir of the linked work tree at ``path``, read from its ``.git`` file without
    running git, and accepted only if it is one of ``repo``'s own work tree dirs: every
    later git call in the shadow is pinned to it, so whatever a command writes in the
    shadow (a ``.git`` of its own, a rewritten link) never chooses the repository."""
    try:
        text = (path / ".git").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise GitError(["worktree"], 1, f"{path}: no readable .git file: {exc}") from exc
    if not text.startswith("gitdir: "):
        raise GitError(["worktree"], 1, f"{path}/.git is not a link to a git dir")
    target = Path(text[len("gitdir: ") :])
    target = (target if target.is_absolute() else path / target).resolve()
    if target.parent != (repo.common_dir / "worktrees").resolve():
        raise GitError(["worktree"], 1, f"{path}/.git points outside {repo.common_dir}")
    return target


def forget_pooled(repo: Repository, path: Path, slot: int) -> None:
    (repo.runtime_dir / pool_name(slot)).unlink(missing_ok=True)
    discard(repo, path)
