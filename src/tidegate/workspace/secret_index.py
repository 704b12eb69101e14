"""An exact, incremental index of a workspace's secret-shaped files (the contained
command's mask).

Every contained command must see each secret-shaped file of the workspace empty, so the
mask has to name all of them: no cap on the walk (a repository padded past a cap would
otherwise hide a ``.env`` behind it). Walking a 50,000-file tree before every command is
seconds, so the index walks once, keeps each listed directory's ``(st_mtime_ns,
st_ctime_ns, st_ino)``, and on later refreshes re-lists only the directories whose stat
changed: creating, deleting or renaming an entry changes its directory's mtime, so an
unchanged stat means an unchanged listing. A refresh stats every known directory (a few
hundred in a typical repository) and descends into new ones.

Two cases a stat comparison alone would miss, handled as git handles its racily clean
index entries: a directory changed within the same timestamp tick as its listing keeps
its stat, so a directory whose mtime is not older than the listing's start (less a slack
that covers coarse filesystem clocks) is listed again on the next refresh, whatever its
stat. A directory replaced by a symlink or a file is dropped with everything under it;
symlinks are never followed (each directory is opened with ``O_NOFOLLOW`` and its stat
taken from that descriptor). Only ``.git`` directories are not entered.

A directory that cannot be listed (``EACCES``: a mode-000 directory of the user's) may
hold secrets the walk cannot see, and a contained command runs as the same user, so it
could ``chmod`` the directory open and read them. Such directories are reported
(``unlistable``) for the containment to cover whole with an empty read-only tmpfs, and
are tried again at every refresh: once readable they are listed like any other. A root
that cannot be listed is refused (``UnlistableRoot``): nothing under it could be masked.

``note_changed(paths)`` lets a caller that knows what a command changed (its captured
effects) force those directories to be listed again; the index is exact without it.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

RACY_SLACK_NS = 2_000_000_000
"""A directory whose mtime is within this of a listing's start (or after it) is listed
again next time: covers filesystems with 1-2 s timestamps and the kernel's coarse clock."""
NOT_ENTERED = frozenset({".git"})
_OPEN_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class UnlistableRoot(PermissionError):
    """The workspace root itself cannot be listed: its secrets cannot be named."""


def _open_dir(path: str) -> int:
    """Open a directory for listing (one place, so tests can make a listing fail: as root,
    ``CAP_DAC_OVERRIDE`` lists even a mode-000 directory)."""
    return os.open(path, _OPEN_FLAGS)


@dataclass(frozen=True, slots=True)
class _Dir:
    key: tuple[int, int, int]  # st_mtime_ns, st_ctime_ns, st_ino when listed
    racy: bool  # listed too close to its last change: list again next time
    subdirs: tuple[str, ...]  # names
    secrets: tuple[str, ...]  # root-relative paths of the withheld regular files in it
    unlistable: bool = False  # there, but could not be listed: masked whole


def _key(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


class SecretIndex:
    """The withheld regular files under ``root`` (a resolved path), kept current by
    ``refresh``. ``candidate(name)`` is a fast name test; ``withheld(rel)`` decides."""

    def __init__(
        self, root: str, candidate: Callable[[str], bool], withheld: Callable[[str], bool]
    ) -> None:
        self.root = root
        self._candidate = candidate
        self._withheld = withheld
        self._dirs: dict[str, _Dir] = {}
        self._dirty: set[str] = set()
        self._lock = threading.Lock()
        self.listed = 0
        """Directories listed by the last refresh (the rest were only stat-ed)."""
        self.unlistable: list[str] = []
        """Root-relative directories the last refresh could not list, sorted (masked whole
        by the containment)."""

    def note_changed(self, paths: Iterable[str]) -> None:
        """Root-relative paths a command changed: their directories are listed again."""
        with self._lock:
            for path in paths:
                self._dirty.add(path.rpartition("/")[0])
                self._dirty.add(path)  # in case it was itself a directory

    def refresh(self) -> list[str]:
        """Bring the index up to date; the withheld files' root-relative paths, sorted."""
        with self._lock:
            start = time.time_ns()
            old, dirty = self._dirs, self._dirty
            self._dirty = set()
            new: dict[str, _Dir] = {}
            listed = 0
            stack = [""]
            while stack:
                rel = stack.pop()
                path = f"{self.root}/{rel}" if rel else self.root
                prev = old.get(rel)
                state: _Dir | None = None
                if prev is not None and not prev.racy and rel not in dirty:
                    try:
                        st = os.lstat(path)
                    except OSError:
                        continue  # gone: dropped with its subtree
                    if not stat.S_ISDIR(st.st_mode):
                        continue  # replaced by a symlink or a file: dropped
                    if _key(st) == prev.key:
                        state = prev
                if state is None:
                    state = self._list(rel, path, start)
                    listed += 1
                    if state is None:
                        continue
                    if state.unlistable and not rel:
                        raise UnlistableRoot(
                            f"{self.root}: the workspace root cannot be listed, so its "
                            "secret-shaped files cannot be masked"
                        )
                new[rel] = state
                prefix = f"{rel}/" if rel else ""
                stack.extend(prefix + name for name in state.subdirs)
            self._dirs = new
            self.listed = listed
            self.unlistable = sorted(rel for rel, d in new.items() if d.unlistable)
            return sorted(s for d in new.values() for s in d.secrets)

    def _list(self, rel: str, path: str, start: int) -> _Dir | None:
        try:
            fd = _open_dir(path)
        except OSError:
            return _unlistable(path)
        try:
            st = os.fstat(fd)
            subdirs: list[str] = []
            secrets: list[str] = []
            prefix = f"{rel}/" if rel else ""
            with os.scandir(fd) as entries:
                for entry in entries:
                    name = entry.name
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            if name not in NOT_ENTERED:
                                subdirs.append(name)
                        elif (
                            self._candidate(name)
                            and entry.is_file(follow_symlinks=False)
                            and self._withheld(prefix + name)
                        ):
                            secrets.append(prefix + name)
                    except OSError:
                        continue  # vanished while listed: the directory's mtime moved
        except OSError:
            return _unlistable(path)
        finally:
            os.close(fd)
        racy = st.st_mtime_ns >= start - RACY_SLACK_NS
        return _Dir(_key(st), racy, tuple(subdirs), tuple(secrets))


def _unlistable(path: str) -> _Dir | None:
    """A directory that is there but could not be listed: masked whole, tried again at
    every refresh. None when it is gone, a file, or a symlink (``O_NOFOLLOW``)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode):
        return None
    return _Dir(_key(st), True, (), (), unlistable=True)
