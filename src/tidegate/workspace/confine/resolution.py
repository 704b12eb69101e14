"""Resolving a path beneath the root one component at a time, with no-follow opens
from directory descriptors; symlinks resolved by hand while they stay inside."""

from __future__ import annotations

import errno
import os
import stat
from contextlib import suppress
from pathlib import PurePosixPath

import msgspec

from tidegate.workspace.confine.entries import DIR_FLAGS, MAX_RETRIES, is_race
from tidegate.workspace.confine.refusal import PathRefused, strip_root

MAX_SYMLINK_HOPS = 40


class Resolved(msgspec.Struct):
    """Where a path ends up: the open parent directory and the final name in it.

    ``name`` is None for the root itself (``dir_fd`` is then the root). ``rel`` is the
    canonical root-relative path after following symlinks inside the root. The caller owns
    ``dir_fd`` and must close it (``close()``).
    """

    dir_fd: int
    name: str | None
    rel: PurePosixPath
    created: tuple[str, ...] = ()

    def close(self) -> None:
        with suppress(OSError):
            os.close(self.dir_fd)


class Resolution:
    """One ``RootHandle.resolve`` in progress: the directories opened so far (``fds``, the
    root's duplicate first), their ``names``, and the components still ``pending``."""

    def __init__(
        self,
        root_fd: int,
        roots: tuple[PurePosixPath, ...],
        rel: PurePosixPath,
        create_dirs: bool,
    ) -> None:
        self.shown = str(rel)
        self.roots = roots
        self.create_dirs = create_dirs
        self.pending = [p for p in rel.parts if p != "."]
        self.fds = [os.dup(root_fd)]
        self.names: list[str] = []
        self.created: list[str] = []
        self.hops = self.retries = 0

    def step(self, follow_final: bool) -> bool:
        """Walk one pending component; False when what is pending is the final entry."""
        name = self.pending.pop(0)
        if name in ("", "."):
            return True
        if name == "..":
            if not self.names:
                raise PathRefused(self.shown, "symlink_escape")
            os.close(self.fds.pop())
            self.names.pop()
            return True
        last = not self.pending
        if last and not follow_final:
            self.pending.insert(0, name)
            return False
        try:
            st = os.stat(name, dir_fd=self.fds[-1], follow_symlinks=False)
        except FileNotFoundError:
            if last:
                self.pending.insert(0, name)
                return False
            if not self.create_dirs:
                raise
            self._again(name, None)
            with suppress(FileExistsError):
                os.mkdir(name, dir_fd=self.fds[-1])
                self.created.append("/".join([*self.names, name]))
            return True
        if stat.S_ISLNK(st.st_mode):
            self._follow(name)
            return True
        if last:
            self.pending.insert(0, name)
            return False
        if not stat.S_ISDIR(st.st_mode):
            raise NotADirectoryError(errno.ENOTDIR, "not a directory", self.shown)
        self._enter(name)
        return True

    def _again(self, name: str, cause: BaseException | None) -> None:
        """Look at ``name`` again, a bounded number of times (it changed under us)."""
        self.retries += 1
        if self.retries > MAX_RETRIES:
            raise PathRefused(self.shown, "unstable") from cause
        self.pending.insert(0, name)

    def _follow(self, name: str) -> None:
        """Put the target of the symlink ``name`` in place of it (an absolute target inside
        the root is walked again from the root)."""
        self.hops += 1
        if self.hops > MAX_SYMLINK_HOPS:
            raise PathRefused(self.shown, "symlink_loop")
        try:
            target = os.readlink(name, dir_fd=self.fds[-1])
        except OSError as exc:
            # No longer a symlink (EINVAL) or gone (ENOENT): look again.
            if exc.errno not in (errno.EINVAL, errno.ENOENT):
                raise
            self._again(name, exc)
            return
        if target.startswith("/"):
            below = strip_root(target, self.roots)
            if below is None:
                raise PathRefused(self.shown, "symlink_escape")
            for fd in self.fds[1:]:
                os.close(fd)
            del self.fds[1:]
            self.names.clear()
            target = below
        self.pending[:0] = [p for p in target.split("/") if p not in ("", ".")]

    def _enter(self, name: str) -> None:
        """Open the directory ``name`` (no-follow) and go into it."""
        try:
            self.fds.append(os.open(name, DIR_FLAGS, dir_fd=self.fds[-1]))
        except OSError as exc:
            # Replaced between the stat and the open: look again, a bounded number
            # of times; ELOOP/ENOTDIR mean O_NOFOLLOW caught a swapped-in symlink.
            if not is_race(exc):
                raise
            self._again(name, exc)
            return
        self.names.append(name)

    def result(self) -> Resolved:
        """The open parent of the final entry (taken out of ``fds``) and its name."""
        final = self.pending[0] if self.pending else None
        parent = self.fds.pop()
        canonical = PurePosixPath(*self.names, *([final] if final else []))
        return Resolved(
            parent, final, canonical if canonical.parts else PurePosixPath("."), tuple(self.created)
        )

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
