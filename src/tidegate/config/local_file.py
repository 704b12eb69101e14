"""The user's ``.tidegate/config.toml``: read without following a link, and whether git
tracks it (then it came with the repository)."""

from __future__ import annotations

import errno
import mmap
import os
import stat
from pathlib import Path

import msgspec

from tidegate.config.records import CONFIG_LOCAL
from tidegate.errors import GitError, UsageError


class LocalFile(msgspec.Struct, frozen=True):
    """``.tidegate/config.toml`` as ``load_policy`` reads it."""

    data: bytes | None
    """None: there is none, or it was not read (``problem`` says why)."""
    problem: str | None = None


def read_local(root: Path) -> LocalFile:
    """The user's file, opened without following a link at ``.tidegate`` or at
    ``config.toml``: a symlink, a FIFO or a device there is not read (and said so), since
    the link could lead to a file the repository wrote. UsageError when it cannot be read."""
    nofollow = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise UsageError(f"{root}: {exc.strerror}") from exc
    try:
        folder = _open_below(top, ".tidegate", nofollow | os.O_DIRECTORY)
        if isinstance(folder, LocalFile):
            return folder
        try:
            fd = _open_below(folder, "config.toml", nofollow | os.O_NONBLOCK)
        finally:
            os.close(folder)
        if isinstance(fd, LocalFile):
            return fd
        with os.fdopen(fd, "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                return LocalFile(None, f"{CONFIG_LOCAL} is not a regular file: not read")
            return LocalFile(file.read())
    except OSError as exc:
        raise UsageError(f"{root / CONFIG_LOCAL}: {exc.strerror}") from exc
    finally:
        os.close(top)


def _open_below(parent: int, name: str, flags: int) -> int | LocalFile:
    """``name`` opened in the directory ``parent``, or the LocalFile that says why not."""
    try:
        return os.open(name, flags, dir_fd=parent)
    except FileNotFoundError:
        return LocalFile(None)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        if not stat.S_ISLNK(os.lstat(name, dir_fd=parent).st_mode):
            return LocalFile(None)  # a file named .tidegate: there is no local file
        if name == ".tidegate":
            return LocalFile(
                None, f".tidegate is a symlink: not followed, so {CONFIG_LOCAL} was not read"
            )
        return LocalFile(None, f"{CONFIG_LOCAL} is a symlink: not followed, so it was not read")


def tracked(root: Path) -> bool:
    """Whether git tracks ``.tidegate/config.toml`` (a repository can commit it: an exclude
    keeps out untracked files only)."""
    if not _maybe_in_index(root):
        return False
    from tidegate.git.command import Git

    try:
        found = Git(root).run("ls-files", "-z", "--cached", "--", CONFIG_LOCAL, check=False)
    except GitError:
        return False
    return found.returncode == 0 and bool(found.stdout.strip(b"\0"))


def _maybe_in_index(root: Path) -> bool:
    """False only when the index of the work tree's own ``.git`` directory cannot hold
    ``.tidegate/config.toml``: a version 2 or 3 index, neither split nor sparse, stores each
    path whole and NUL-terminated, so a path absent from its bytes is not tracked. Saves a
    git process per read in the common case; anything else is for git to answer."""
    git_dir = root / ".git"
    try:
        with (
            open(git_dir / "index", "rb") as file,
            mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as index,
        ):
            if index[:4] != b"DIRC" or int.from_bytes(index[4:8], "big") not in (2, 3):
                return True
            if index.find(b"sdir") != -1 or any(
                name.startswith("sharedindex.") for name in os.listdir(git_dir)
            ):
                return True
            return index.find(CONFIG_LOCAL.encode() + b"\0") != -1
    except FileNotFoundError:
        return not git_dir.is_dir()  # a repository with no index yet tracks nothing
    except (OSError, ValueError):  # .git is a file (a linked worktree), an empty index...
        return True
