"""The shadows' linked git worktrees on disk: added, found by their links, discarded."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

from tidegate.errors import GitError
from tidegate.workspace.lock import POOL_SLOTS, pool_name
from tidegate.workspace.repo import Repository

SHADOW_PREFIX = "tidegate-shadow-"
POOL_PREFIX = "tidegate-pool-"
SCRATCH_PREFIX = "tidegate-run-"


def add_worktree(repo: Repository, path: Path, commit: str) -> None:
    # checkout.workers=0: one checkout worker per core (git >= 2.32; older gits ignore the
    # key). The full checkout is most of a cold run; on 2 cores it is ~35% shorter.
    repo.git.run(
        "-c", "checkout.workers=0", "worktree", "add", "--detach", "--quiet", str(path), commit
    )


def discard(repo: Repository, path: Path) -> None:
    """Remove a shadow whatever state it is in (half-made and still locked by a killed
    ``git worktree add`` included), with Ctrl-C and SIGTERM held meanwhile."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        # Twice --force: also a worktree git left locked ("initializing").
        repo.git.run("worktree", "remove", "--force", "--force", str(path), check=False)
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
    if pooled and not shared and str(path) in _registered(repo):
        repo.git.run("worktree", "remove", "--force", "--force", str(path), check=False)
    repo.git.run("worktree", "prune", check=False)
    return None


def _read_record(record: Path) -> Path | None:
    """The absolute path a pool record names, read without following a link; None when
    there is no such record or it names no absolute path."""
    try:
        fd = os.open(record, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        text = os.read(fd, 8192).decode("utf-8", "surrogateescape").strip()
    except OSError:
        return None
    finally:
        os.close(fd)
    path = Path(text)
    return path if text and path.is_absolute() and "\n" not in text else None


def _registered(repo: Repository) -> set[str]:
    """The work trees git lists for ``repo``."""
    listing = repo.git.run("worktree", "list", "--porcelain", "-z").stdout.split(b"\0")
    return {
        entry[len(b"worktree ") :].decode("utf-8", "surrogateescape")
        for entry in listing
        if entry.startswith(b"worktree ")
    }


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
    repo.git.run("worktree", "remove", "--force", "--force", str(path), check=False)
    repo.git.run("worktree", "prune", check=False)
