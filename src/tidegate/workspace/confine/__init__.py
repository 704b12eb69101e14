"""Confinement: every path the workspace port touches resolves beneath the root.

Two layers. ``check_relative`` refuses lexical escapes (``..``, absolute paths, ``~``, NUL,
backslashes) before anything touches the disk. ``RootHandle`` then resolves the remaining
components one at a time from an open descriptor of the root: each component is looked at
with ``fstatat`` and opened with ``openat(..., O_NOFOLLOW | O_DIRECTORY)`` relative to the
directory before it, so a symlink swapped in between a check and a use makes the open fail
instead of being followed. Symlinks met on the way are resolved by hand, the way
``openat2(RESOLVE_BENEATH)`` would: a target inside the root is walked again from the root,
a target that leaves it (absolute elsewhere, or ``..`` above the root) is refused.

What this does not cover: a directory that is *moved* out of the root while an operation
holds its descriptor. The operation then finishes in that directory, which was inside the
root when it was resolved. Moving a directory out needs write access outside the root.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator
from pathlib import Path, PurePosixPath
from types import TracebackType

from tidegate.errors import UsageError
from tidegate.workspace.confine.entries import DIR_FLAGS, entry_state
from tidegate.workspace.confine.refusal import PathRefused, check_relative, strip_root
from tidegate.workspace.confine.resolution import Resolution, Resolved
from tidegate.workspace.confine.walk import WalkItem, walk_fd
from tidegate.workspace.states import DIRECTORY, MISSING, EntryState


class RootHandle:
    """An open descriptor of the workspace root that resolves paths beneath it.

    The root itself may be reached through symlinks (it is configured, not model input);
    nothing below it is followed out of it.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(os.path.abspath(root))
        self.real_root = Path(os.path.realpath(root))
        try:
            self.fd = os.open(self.real_root, DIR_FLAGS & ~os.O_NOFOLLOW)
        except OSError as exc:
            raise UsageError(f"{root}: not a usable workspace root ({exc.strerror})") from exc
        self._roots = tuple(
            dict.fromkeys((PurePosixPath(self.real_root), PurePosixPath(self.root)))
        )

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> RootHandle:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- lexical ------------------------------------------------------------------------

    def relative(self, path: str) -> PurePosixPath:
        """``check_relative``, but an absolute path beneath the root is accepted too."""
        if path.startswith("/") and "\0" not in path:
            below = strip_root(path, self._roots)
            if below is None:
                raise PathRefused(path, "absolute")
            if ".." in below.split("/"):
                raise PathRefused(path, "parent")
            return check_relative(below)
        return check_relative(path)

    # -- resolution -----------------------------------------------------------------------

    def resolve(
        self, rel: PurePosixPath, *, follow_final: bool = False, create_dirs: bool = False
    ) -> Resolved:
        """Open the directory that holds ``rel``'s final entry, walking with no-follow opens.

        Symlinked directories on the way are followed while they stay inside the root; the
        final component is followed only with ``follow_final``. Raises ``PathRefused`` for
        an escape, ``FileNotFoundError`` when a directory on the way is missing (unless
        ``create_dirs``), ``NotADirectoryError`` when one is not a directory.
        """
        walk = Resolution(self.fd, self._roots, rel, create_dirs)
        try:
            while walk.pending and walk.step(follow_final):
                pass
            return walk.result()
        finally:
            walk.close()

    def open_parent(self, rel: PurePosixPath, *, create_dirs: bool = False) -> int:
        """A directory descriptor of ``rel``'s parent (the caller closes it)."""
        return self.resolve(rel, create_dirs=create_dirs).dir_fd

    def state(self, rel: str) -> EntryState:
        """The typed state of the entry at ``rel`` itself (a final symlink is not followed)."""
        try:
            where = self.resolve(self.relative(rel))
        except (FileNotFoundError, NotADirectoryError):
            return MISSING
        try:
            if where.name is None:
                return DIRECTORY
            return entry_state(where.dir_fd, where.name)
        finally:
            where.close()

    def walk(
        self,
        start: PurePosixPath,
        *,
        max_depth: int,
        skip: Callable[[str, bool], bool] | None = None,
        after: tuple[str, ...] | None = None,
    ) -> Generator[WalkItem, None, None]:
        """Entries below the directory ``start``, depth first, children in sorted order.

        Nothing is followed: symlinks are reported as symlinks and never descended. ``skip``
        is asked ``(rel, is_dir)`` for each entry; a skipped directory is not descended.
        ``after`` resumes a previous walk just after that path (root-relative components).
        Directories at ``max_depth`` are reported with ``descended=False``.
        """
        where = self.resolve(start, follow_final=True)
        try:
            if where.name is None:
                top = os.dup(where.dir_fd)
            else:
                top = os.open(where.name, DIR_FLAGS, dir_fd=where.dir_fd)
        finally:
            where.close()
        base = where.rel.parts if where.rel.parts != (".",) else ()
        yield from walk_fd(top, base, max_depth, skip, after)
