"""The file-system port for the user's main workspace.

Everything tidegate does to the main work tree goes through a ``WorkspaceFS``. Review mode
hands phases a ``ReadOnlyFS`` whose write methods raise ``PermissionError``, so even a
buggy phase or tool cannot mutate the workspace in a read-only run.

Paths are repository-relative POSIX strings. Every component is looked at with ``lstat``
and opened relative to its parent's descriptor with ``O_NOFOLLOW``: a path through a
symlink, or any path leaving the root, is refused, even if the symlink appears between the
check and the open.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from pathlib import Path
from typing import Literal, Protocol

import msgspec

from tidegate.disk.linksafe import fresh_file
from tidegate.workspace.confine.entries import DIR_FLAGS, FILE_READ_FLAGS

Kind = Literal["missing", "file", "symlink", "dir", "other"]


class UnsafePathError(ValueError):
    """A path that escapes the workspace or passes through a symlink."""


class Entry(msgspec.Struct, frozen=True):
    """What is at a path right now (never following a final symlink)."""

    kind: Kind
    content: bytes | None = None  # file bytes, or a symlink's target
    mode: int | None = None  # st_mode permission bits

    @property
    def executable(self) -> bool:
        return bool(self.mode and self.mode & 0o100)

    def digest(self) -> str | None:
        """A compact identity for compare-and-swap checks; None when nothing is there."""
        if self.kind == "missing":
            return None
        if self.kind == "file":
            assert self.content is not None
            x = "x" if self.executable else "-"
            return f"file:{x}:{hashlib.sha256(self.content).hexdigest()}"
        if self.kind == "symlink":
            assert self.content is not None
            return f"link:{hashlib.sha256(self.content).hexdigest()}"
        return self.kind


def check_relative(path: str) -> list[str]:
    """Split a repo-relative path into components, refusing anything that could escape."""
    if not path or "\0" in path or path.startswith("/") or "\\" in path:
        raise UnsafePathError(f"{path!r}: not a relative repository path")
    parts = path.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise UnsafePathError(f"{path!r}: empty, '.' or '..' component")
    return parts


class WorkspaceFS(Protocol):
    root: Path

    def read(self, path: str) -> Entry: ...
    def write_file(self, path: str, data: bytes, mode: int, tmp_name: str) -> list[str]: ...
    def write_symlink(self, path: str, target: bytes, tmp_name: str) -> list[str]: ...
    def remove(self, path: str) -> None: ...


class LocalFS:
    """Read-write access beneath ``root``, never through symlinks, with atomic writes.

    Every component is opened relative to the directory before it with ``O_NOFOLLOW``
    (see ``tidegate.workspace.confine``), so a symlink swapped in after a check is refused
    by the open itself instead of being followed.
    """

    def __init__(self, root: Path) -> None:
        self.root = root

    def _dirs(self, parts: list[str], create: bool) -> tuple[list[int], list[str]]:
        """Descriptors of the root and of every directory above ``parts[-1]`` (fewer when
        one is missing and ``create`` is false), and the directories created. The caller
        closes the descriptors."""
        fds = [os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)]
        created: list[str] = []
        try:
            for i, name in enumerate(parts[:-1]):
                shown = "/".join(parts[: i + 1])
                try:
                    st = os.stat(name, dir_fd=fds[-1], follow_symlinks=False)
                except FileNotFoundError:
                    if not create:
                        break
                    os.mkdir(name, dir_fd=fds[-1])
                    created.append(shown)
                    st = os.stat(name, dir_fd=fds[-1], follow_symlinks=False)
                if not stat.S_ISDIR(st.st_mode):
                    what = "a symlink" if stat.S_ISLNK(st.st_mode) else "not a directory"
                    raise UnsafePathError(f"{shown}: {what}")
                try:
                    fds.append(os.open(name, DIR_FLAGS, dir_fd=fds[-1]))
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise UnsafePathError(f"{shown}: replaced by a symlink") from exc
                    raise
        except BaseException:
            _close_all(fds)
            raise
        return fds, created

    def read(self, path: str) -> Entry:
        parts = check_relative(path)
        fds, _ = self._dirs(parts, create=False)
        try:
            if len(fds) < len(parts):
                return Entry("missing")
            return _entry_at(fds[-1], parts[-1])
        finally:
            _close_all(fds)

    def write_file(self, path: str, data: bytes, mode: int, tmp_name: str) -> list[str]:
        """Atomically replace ``path`` (temp file in the same dir + rename). Returns the
        directories it had to create."""
        parts = check_relative(path)
        fds, created = self._dirs(parts, create=True)
        parent = fds[-1]
        try:
            # A fresh file: whatever was left or planted at the name (a link, a hard link
            # to a file elsewhere, a FIFO) is unlinked, never opened.
            fd = fresh_file(parent, tmp_name, 0o600, shown=path)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fchmod(fd, mode)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp_name, parts[-1], src_dir_fd=parent, dst_dir_fd=parent)
            os.fsync(parent)
        finally:
            _close_all(fds)
        return created

    def write_symlink(self, path: str, target: bytes, tmp_name: str) -> list[str]:
        parts = check_relative(path)
        fds, created = self._dirs(parts, create=True)
        parent = fds[-1]
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp_name, dir_fd=parent)
            os.symlink(target, os.fsencode(tmp_name), dir_fd=parent)
            os.replace(tmp_name, parts[-1], src_dir_fd=parent, dst_dir_fd=parent)
            os.fsync(parent)
        finally:
            _close_all(fds)
        return created

    def remove(self, path: str) -> None:
        """Delete a file or symlink, then any parent directories it leaves empty."""
        parts = check_relative(path)
        fds, _ = self._dirs(parts, create=False)
        try:
            if len(fds) < len(parts):
                raise FileNotFoundError(errno.ENOENT, "no such file or directory", path)
            os.unlink(parts[-1], dir_fd=fds[-1])
            synced = fds[-1]
            for depth in range(len(parts) - 1, 0, -1):
                try:
                    os.rmdir(parts[depth - 1], dir_fd=fds[depth - 1])
                except OSError:
                    break
                synced = fds[depth - 1]
            os.fsync(synced)
        finally:
            _close_all(fds)


def _entry_at(dir_fd: int, name: str) -> Entry:
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return Entry("missing")
    if stat.S_ISLNK(st.st_mode):
        return Entry("symlink", os.fsencode(os.readlink(name, dir_fd=dir_fd)))
    if stat.S_ISDIR(st.st_mode):
        return Entry("dir")
    if not stat.S_ISREG(st.st_mode):
        return Entry("other")
    fd = os.open(name, FILE_READ_FLAGS, dir_fd=dir_fd)
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            return Entry("other")
        return Entry("file", fh.read(), stat.S_IMODE(st.st_mode))


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)


class ReadOnlyFS:
    """The read-only view used by review mode: reads pass through, writes raise."""

    def __init__(self, inner: WorkspaceFS) -> None:
        self._inner = inner
        self.root = inner.root

    def read(self, path: str) -> Entry:
        return self._inner.read(path)

    def write_file(self, path: str, data: bytes, mode: int, tmp_name: str) -> list[str]:
        raise PermissionError(f"read-only workspace: refusing to write {path}")

    def write_symlink(self, path: str, target: bytes, tmp_name: str) -> list[str]:
        raise PermissionError(f"read-only workspace: refusing to create symlink {path}")

    def remove(self, path: str) -> None:
        raise PermissionError(f"read-only workspace: refusing to delete {path}")


def creation_mode(executable: bool) -> int:
    """Permission bits for a new file under the process umask, as git checkout would use."""
    umask = _current_umask()
    return (0o777 if executable else 0o666) & ~umask


def _current_umask() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except OSError:
        pass
    return 0o022
