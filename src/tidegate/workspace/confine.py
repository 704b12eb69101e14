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

import ctypes
import errno
import os
import stat
from collections.abc import Callable, Generator, Iterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import Literal, NamedTuple

from tidegate.errors import UsageError
from tidegate.workspace.states import DIRECTORY, MISSING, EntryState, hash_fd

RefusalReason = Literal[
    "empty",
    "nul",
    "too_long",
    "absolute",
    "home",
    "parent",
    "backslash",
    "outside_root",
    "symlink_escape",
    "symlink_loop",
    "unstable",
    "git_dir",
    "tidegate_config",
]

_REASONS: dict[str, str] = {
    "empty": "an empty path",
    "nul": "contains a NUL byte",
    "too_long": "longer than the file system allows",
    "absolute": "an absolute path outside the workspace root",
    "home": "'~' paths are not expanded; give a path relative to the workspace root",
    "parent": "'..' components are not accepted",
    "backslash": "backslashes are not path separators here; use '/'",
    "outside_root": "resolves outside the workspace root",
    "symlink_escape": "a symlink on this path points outside the workspace root",
    "symlink_loop": "too many symlinks on this path",
    "unstable": "the path kept changing while it was being resolved",
    "git_dir": "paths inside .git are repository internals, not workspace files",
    "tidegate_config": "tidegate's own configuration belongs to the user; tools never change it",
}

MAX_SYMLINK_HOPS = 40
NAME_MAX = 255
"""Bytes in one path component (Linux and macOS); longer names fail with ENAMETOOLONG."""
PATH_MAX = 4095
_MAX_RETRIES = 16  # a component that flips between kinds while we look at it

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a fifo swapped in for a file must not block the open; it has no effect on
# reading regular files.
FILE_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


class PathRefused(UsageError):
    """A path that would leave the workspace root, or that is not a usable path at all."""

    def __init__(self, path: str, reason: RefusalReason, detail: str = "") -> None:
        self.path = path
        self.reason: RefusalReason = reason
        super().__init__(f"{path!r}: {detail or _REASONS[reason]}")


def check_relative(path: str) -> PurePosixPath:
    """Lexical validation of a root-relative POSIX path; no file system access.

    ``""`` is refused; ``"."`` (and ``"./"``) mean the root itself and come back as
    ``PurePosixPath(".")``. Repeated and trailing slashes and ``.`` components are dropped.
    """
    if not path:
        raise PathRefused(path, "empty")
    if "\0" in path:
        raise PathRefused(path, "nul")
    if path.startswith("/"):
        raise PathRefused(path, "absolute")
    if path.startswith("~"):
        raise PathRefused(path, "home")
    if "\\" in path:
        raise PathRefused(path, "backslash")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise PathRefused(path, "parent")
    _check_lengths(path, parts)
    return PurePosixPath(*parts) if parts else PurePosixPath(".")


def _check_lengths(path: str, parts: list[str]) -> None:
    """Refuse, before any system call, a name the kernel would refuse with ENAMETOOLONG
    (which would otherwise surface mid-operation as an error of unknown outcome)."""
    for part in parts:
        size = len(os.fsencode(part))
        if size > NAME_MAX:
            raise PathRefused(
                path, "too_long", f"a component of {size} bytes (at most {NAME_MAX} allowed)"
            )
    if len(os.fsencode(path)) > PATH_MAX:
        raise PathRefused(path, "too_long", f"a path of more than {PATH_MAX} bytes")


def _strip_root(path: str, roots: tuple[PurePosixPath, ...]) -> str | None:
    """The part of an absolute ``path`` below one of ``roots``, compared by components
    (so ``/w/proj_evil`` is not below ``/w/proj``); None when it is below none of them."""
    parts = tuple(p for p in path.split("/") if p not in ("", "."))
    for root in roots:
        n = len(root.parts) - 1  # parts[0] of an absolute PurePosixPath is "/"
        if parts[:n] == root.parts[1:]:
            return "/".join(parts[n:]) or "."
    return None


@dataclass
class Resolved:
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
            below = _strip_root(path, self._roots)
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
        shown = str(rel)
        pending = [p for p in rel.parts if p != "."]
        fds = [os.dup(self.fd)]
        names: list[str] = []
        created: list[str] = []
        hops = retries = 0
        try:
            while pending:
                name = pending.pop(0)
                if name in ("", "."):
                    continue
                if name == "..":
                    if not names:
                        raise PathRefused(shown, "symlink_escape")
                    os.close(fds.pop())
                    names.pop()
                    continue
                last = not pending
                if last and not follow_final:
                    pending.insert(0, name)
                    break
                try:
                    st = os.stat(name, dir_fd=fds[-1], follow_symlinks=False)
                except FileNotFoundError:
                    if last:
                        pending.insert(0, name)
                        break
                    if not create_dirs:
                        raise
                    retries += 1
                    if retries > _MAX_RETRIES:
                        raise PathRefused(shown, "unstable") from None
                    with suppress(FileExistsError):
                        os.mkdir(name, dir_fd=fds[-1])
                        created.append("/".join([*names, name]))
                    pending.insert(0, name)
                    continue
                if stat.S_ISLNK(st.st_mode):
                    hops += 1
                    if hops > MAX_SYMLINK_HOPS:
                        raise PathRefused(shown, "symlink_loop")
                    try:
                        target = os.readlink(name, dir_fd=fds[-1])
                    except OSError as exc:
                        # No longer a symlink (EINVAL) or gone (ENOENT): look again.
                        if exc.errno not in (errno.EINVAL, errno.ENOENT):
                            raise
                        retries += 1
                        if retries > _MAX_RETRIES:
                            raise PathRefused(shown, "unstable") from exc
                        pending.insert(0, name)
                        continue
                    if target.startswith("/"):
                        below = _strip_root(target, self._roots)
                        if below is None:
                            raise PathRefused(shown, "symlink_escape")
                        for fd in fds[1:]:
                            os.close(fd)
                        del fds[1:]
                        names.clear()
                        target = below
                    pending[:0] = [p for p in target.split("/") if p not in ("", ".")]
                    continue
                if last:
                    pending.insert(0, name)
                    break
                if not stat.S_ISDIR(st.st_mode):
                    raise NotADirectoryError(errno.ENOTDIR, "not a directory", shown)
                try:
                    fds.append(os.open(name, DIR_FLAGS, dir_fd=fds[-1]))
                except OSError as exc:
                    # Replaced between the stat and the open: look again, a bounded number
                    # of times; ELOOP/ENOTDIR mean O_NOFOLLOW caught a swapped-in symlink.
                    if not _is_race(exc):
                        raise
                    retries += 1
                    if retries > _MAX_RETRIES:
                        raise PathRefused(shown, "unstable") from exc
                    pending.insert(0, name)
                    continue
                names.append(name)
            final = pending[0] if pending else None
            parent = fds.pop()
            canonical = PurePosixPath(*names, *([final] if final else []))
            return Resolved(
                parent, final, canonical if canonical.parts else PurePosixPath("."), tuple(created)
            )
        finally:
            for fd in fds:
                os.close(fd)

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
        yield from _walk_fd(top, base, max_depth, skip, after)


class WalkItem(NamedTuple):
    """One entry met by ``RootHandle.walk``; ``dir_fd`` is its parent, valid during the
    iteration step that yields it. (A named tuple: walks create one per entry.)"""

    rel: str
    parts: tuple[str, ...]
    name: str
    dir_fd: int
    st: os.stat_result
    depth: int
    descended: bool

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.st.st_mode)


def _walk_fd(
    top: int,
    base: tuple[str, ...],
    max_depth: int,
    skip: Callable[[str, bool], bool] | None,
    after: tuple[str, ...] | None,
) -> Iterator[WalkItem]:
    stack: list[tuple[int, tuple[str, ...], Iterator[str]]] = []
    try:
        stack.append((top, base, iter(_sorted_names(top))))
        while stack:
            dir_fd, parts, names = stack[-1]
            name = next(names, None)
            if name is None:
                os.close(dir_fd)
                stack.pop()
                continue
            child = (*parts, name)
            if after is not None and child <= after and after[: len(child)] != child:
                continue  # this subtree lies entirely before the cursor
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                continue  # vanished while we walked
            rel = "/".join(child)
            is_dir = stat.S_ISDIR(st.st_mode)
            if skip is not None and skip(rel, is_dir):
                continue
            depth = len(child) - len(base)
            descend = is_dir and depth < max_depth
            if after is None or child > after:
                yield WalkItem(rel, child, name, dir_fd, st, depth, descend)
            if descend:
                try:
                    sub = os.open(name, DIR_FLAGS, dir_fd=dir_fd)
                except OSError as exc:
                    if _is_race(exc) or exc.errno == errno.EACCES:
                        continue  # replaced by a symlink or unreadable: not descended
                    raise
                stack.append((sub, child, iter(_sorted_names(sub))))
    finally:
        for fd, _, _ in stack:
            with suppress(OSError):
                os.close(fd)


def _sorted_names(dir_fd: int) -> list[str]:
    with os.scandir(dir_fd) as it:
        return sorted(entry.name for entry in it)


def _is_race(exc: OSError) -> bool:
    return exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT)


def entry_state(dir_fd: int, name: str) -> EntryState:
    """The typed state of ``name`` in ``dir_fd``, never following it."""
    for _ in range(_MAX_RETRIES):
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return MISSING
        if stat.S_ISDIR(st.st_mode):
            return DIRECTORY
        if stat.S_ISLNK(st.st_mode):
            try:
                return EntryState.symlink(os.fsencode(os.readlink(name, dir_fd=dir_fd)))
            except (FileNotFoundError, OSError):
                continue
        if not stat.S_ISREG(st.st_mode):
            return EntryState.special(st)
        try:
            fd = os.open(name, FILE_READ_FLAGS, dir_fd=dir_fd)
        except OSError as exc:
            if _is_race(exc):
                continue
            raise
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            return EntryState("file", hash_fd(fd))
        finally:
            os.close(fd)
    raise PathRefused(name, "unstable")


# -- atomic renames ----------------------------------------------------------------------

RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2

_renameat2: Callable[..., int] | None
try:
    _libc = ctypes.CDLL(None, use_errno=True)
    _renameat2 = _libc.renameat2
    _renameat2.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    _renameat2.restype = ctypes.c_int
except (OSError, AttributeError):  # pragma: no cover - non-glibc platforms
    _renameat2 = None


def renameat2(dir_fd: int, src: str, dst: str, flags: int) -> bool:
    """``renameat2`` within one directory. Returns False when the kernel, libc or file
    system does not support ``flags`` (the caller falls back); raises other errors."""
    if _renameat2 is None:
        return False
    rc = _renameat2(dir_fd, os.fsencode(src), dir_fd, os.fsencode(dst), flags)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), dst)
