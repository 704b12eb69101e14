"""The file-system port for the user's main workspace.

Everything tidegate does to the main work tree goes through a ``WorkspaceFS``. Review mode
hands phases a ``ReadOnlyFS`` whose write methods raise ``PermissionError``, so even a
buggy phase or tool cannot mutate the workspace in a read-only run.

Paths are repository-relative POSIX strings. Every component is checked with ``lstat``:
a path through a symlink, or any path leaving the root, is refused.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

Kind = Literal["missing", "file", "symlink", "dir", "other"]


class UnsafePathError(ValueError):
    """A path that escapes the workspace or passes through a symlink."""


@dataclass(frozen=True)
class Entry:
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
    """Read-write access beneath ``root``, never through symlinks, with atomic writes."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _parent_dir(self, parts: list[str], create: bool) -> tuple[Path, list[str]]:
        """The parent directory of ``parts``; every existing component must be a real dir."""
        current = self.root
        created: list[str] = []
        for i, name in enumerate(parts[:-1]):
            current = current / name
            try:
                st = os.lstat(current)
            except FileNotFoundError:
                if not create:
                    return current, created
                os.mkdir(current)
                created.append("/".join(parts[: i + 1]))
                continue
            if not stat.S_ISDIR(st.st_mode):
                what = "a symlink" if stat.S_ISLNK(st.st_mode) else "not a directory"
                raise UnsafePathError(f"{'/'.join(parts[: i + 1])}: {what}")
        return current, created

    def read(self, path: str) -> Entry:
        parts = check_relative(path)
        parent, _ = self._parent_dir(parts, create=False)
        target = parent / parts[-1]
        try:
            st = os.lstat(target)
        except (FileNotFoundError, NotADirectoryError):
            return Entry("missing")
        if stat.S_ISLNK(st.st_mode):
            return Entry("symlink", os.fsencode(os.readlink(target)))
        if stat.S_ISDIR(st.st_mode):
            return Entry("dir")
        if not stat.S_ISREG(st.st_mode):
            return Entry("other")
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            return Entry("file", fh.read(), stat.S_IMODE(st.st_mode))

    def write_file(self, path: str, data: bytes, mode: int, tmp_name: str) -> list[str]:
        """Atomically replace ``path`` (temp file in the same dir + rename). Returns the
        directories it had to create."""
        parts = check_relative(path)
        parent, created = self._parent_dir(parts, create=True)
        tmp = parent / tmp_name
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
        )
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, parent / parts[-1])
        _fsync_dir(parent)
        return created

    def write_symlink(self, path: str, target: bytes, tmp_name: str) -> list[str]:
        parts = check_relative(path)
        parent, created = self._parent_dir(parts, create=True)
        tmp = parent / tmp_name
        os.symlink(target, tmp)
        os.replace(tmp, parent / parts[-1])
        _fsync_dir(parent)
        return created

    def remove(self, path: str) -> None:
        """Delete a file or symlink, then any parent directories it leaves empty."""
        parts = check_relative(path)
        parent, _ = self._parent_dir(parts, create=False)
        os.unlink(parent / parts[-1])
        for depth in range(len(parts) - 1, 0, -1):
            directory = self.root.joinpath(*parts[:depth])
            try:
                os.rmdir(directory)
            except OSError:
                break
        _fsync_dir(parent if parent.exists() else self.root)


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


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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
