"""An exact, incremental index of a workspace's secret-shaped files (the contained
command's mask).

Every contained command must see each secret-shaped file of the workspace empty, so the
mask has to name all of them: no cap on the walk (a repository padded past a cap would
otherwise hide a ``.env`` behind it). Walking a 50,000-file tree before every command is
seconds, so the index walks once, keeps each listed directory's ``(st_mtime_ns,
st_ctime_ns, st_ino)``, and on later refreshes re-lists only the directories whose stat
changed: creating, deleting or renaming an entry changes its directory's mtime, so an
unchanged stat means an unchanged listing. Stat-ing every known directory is O(repository)
per command (7 ms on 2,700 directories), so where inotify can be trusted (a local file
system, ``workspace/dir_watch.py``) each directory is watched from just before its
listing, and a refresh lists again only the directories the queued events name, stats
only those it could not watch (or all of them once, after an event queue overflow), and
walks the subdirectories that appeared or are now another directory under the same name:
O(what changed).

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

import msgspec

from tidegate.workspace.dir_watch import DirWatch

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


class _Dir(msgspec.Struct, frozen=True):
    key: tuple[int, int, int]  # st_mtime_ns, st_ctime_ns, st_ino when listed
    racy: bool  # listed too close to its last change: list again next time
    subdirs: tuple[str, ...]  # names
    secrets: tuple[str, ...]  # root-relative paths of the withheld regular files in it
    unlistable: bool = False  # there, but could not be listed: masked whole
    watched: bool = False  # an inotify watch reports its changes: never stat-checked

    @property
    def polled(self) -> bool:
        """Checked at every refresh: not watched, racily listed, or unlistable."""
        return not self.watched or self.racy or self.unlistable


def _key(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _join(rel: str, name: str) -> str:
    return f"{rel}/{name}" if rel else name


class SecretIndex:
    """The withheld regular files under ``root`` (a resolved path), kept current by
    ``refresh``. ``candidate(name)`` is a fast name test; ``withheld(rel)`` decides.
    ``watch=False``: no inotify, every directory is stat-checked at each refresh."""

    def __init__(
        self,
        root: str,
        candidate: Callable[[str], bool],
        withheld: Callable[[str], bool],
        *,
        watch: bool = True,
    ) -> None:
        self.root = root
        self._candidate = candidate
        self._withheld = withheld
        self._dirs: dict[str, _Dir] = {}
        self._dirty: set[str] = set()
        self._polled: set[str] = set()
        self._with_secrets: set[str] = set()
        self._lock = threading.Lock()
        self._watch = DirWatch.open(root) if watch else None
        self._wd_of: dict[str, int] = {}
        self._rel_of: dict[int, str] = {}
        try:
            self._dev: int | None = os.stat(root).st_dev
        except OSError:
            self._dev = None
        self.listed = 0
        """Directories listed by the last refresh (the rest were only stat-ed, or not
        looked at: their watches reported nothing)."""
        self.stated = 0
        """Directories the last refresh stat-checked (unwatched, racy or unlistable ones;
        all of them after an event queue overflow)."""
        self.unlistable: list[str] = []
        """Root-relative directories the last refresh could not list, sorted (masked whole
        by the containment)."""

    @property
    def watching(self) -> bool:
        """Whether changes are reported by inotify (else every refresh stats them all)."""
        return self._watch is not None

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
            self.listed = self.stated = 0
            dirty, self._dirty = self._dirty, set()
            if "" not in self._dirs:
                self._walk("", start)
            else:
                dirty |= self._changed()
                for rel in sorted(dirty, key=lambda r: (r.count("/") if r else -1, r)):
                    if rel in self._dirs:
                        self._relist(rel, start)
            root = self._dirs.get("")
            if root is not None and root.unlistable:
                raise UnlistableRoot(
                    f"{self.root}: the workspace root cannot be listed, so its "
                    "secret-shaped files cannot be masked"
                )
            self.unlistable = sorted(r for r in self._polled if self._dirs[r].unlistable)
            return sorted(s for r in self._with_secrets for s in self._dirs[r].secrets)

    def _changed(self) -> set[str]:
        """The indexed directories whose listing may have changed: those the watches name,
        and those among the polled (all, without watches or after an overflow) whose stat
        moved."""
        dirty: set[str] = set()
        poll: Iterable[str] = self._polled
        if self._watch is None:
            poll = list(self._dirs)
        else:
            events = self._watch.read()
            for wd in events.gone:
                rel = self._rel_of.pop(wd, None)
                if rel is not None and self._wd_of.get(rel) == wd:
                    del self._wd_of[rel]
                    dirty.add(rel)
            dirty.update(self._rel_of[wd] for wd in events.changed if wd in self._rel_of)
            if events.overflowed:
                poll = list(self._dirs)
        for rel in list(poll):
            known = self._dirs.get(rel)
            if known is not None and (known.racy or known.unlistable or self._moved(rel, known)):
                dirty.add(rel)
        return dirty

    def _moved(self, rel: str, known: _Dir) -> bool:
        self.stated += 1
        try:
            st = os.lstat(_join(self.root, rel) if rel else self.root)
        except OSError:
            return True  # gone: dropped with its subtree
        return not stat.S_ISDIR(st.st_mode) or _key(st) != known.key

    def _relist(self, rel: str, start: int) -> None:
        """List ``rel`` again; drop the subdirectories gone from it, walk the new ones and
        those now another directory under the same name."""
        prev = self._dirs[rel]
        state = self._list(rel, start)
        if state is None:  # gone, or replaced by a symlink or a file
            self._drop(rel)
            return
        self._put(rel, state)
        for name in set(prev.subdirs).difference(state.subdirs):
            self._drop(_join(rel, name))
        for name in state.subdirs:
            child = _join(rel, name)
            known = self._dirs.get(child)
            if known is None or self._replaced(child, known):
                self._drop(child)
                self._walk(child, start)

    def _replaced(self, rel: str, known: _Dir) -> bool:
        try:
            return os.lstat(_join(self.root, rel)).st_ino != known.key[2]
        except OSError:
            return True

    def _walk(self, rel: str, start: int) -> None:
        stack = [rel]
        while stack:
            here = stack.pop()
            state = self._list(here, start)
            if state is not None:
                self._put(here, state)
                stack.extend(_join(here, name) for name in state.subdirs)

    def _put(self, rel: str, state: _Dir) -> None:
        self._dirs[rel] = state
        (self._polled.add if state.polled else self._polled.discard)(rel)
        (self._with_secrets.add if state.secrets else self._with_secrets.discard)(rel)

    def _drop(self, rel: str) -> None:
        """Forget ``rel`` and everything indexed under it; their watches too, unless the
        same directory was meanwhile indexed under another name (a rename)."""
        stack = [rel]
        while stack:
            here = stack.pop()
            known = self._dirs.pop(here, None)
            if known is None:
                continue
            self._polled.discard(here)
            self._with_secrets.discard(here)
            wd = self._wd_of.pop(here, None)
            if wd is not None and self._rel_of.get(wd) == here:
                del self._rel_of[wd]
                assert self._watch is not None
                self._watch.remove(wd)
            stack.extend(_join(here, name) for name in known.subdirs)

    def _watch_dir(self, rel: str, fd: int, st: os.stat_result) -> bool:
        """Watch the directory open at ``fd`` (before it is listed); whether it is."""
        if self._watch is None or st.st_dev != self._dev:
            return False
        wd = self._watch.add(fd)
        if wd is None:
            return False
        old = self._wd_of.get(rel)
        if old is not None and old != wd and self._rel_of.get(old) == rel:
            del self._rel_of[old]  # the directory once under this name, watched apart
            self._watch.remove(old)
        self._wd_of[rel] = wd
        self._rel_of[wd] = rel
        return True

    def _list(self, rel: str, start: int) -> _Dir | None:
        path = _join(self.root, rel) if rel else self.root
        self.listed += 1
        try:
            fd = _open_dir(path)
        except OSError:
            return _unlistable(path)
        try:
            st = os.fstat(fd)
            watched = self._watch_dir(rel, fd, st)
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
        racy = not watched and st.st_mtime_ns >= start - RACY_SLACK_NS
        return _Dir(_key(st), racy, tuple(subdirs), tuple(secrets), watched=watched)


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
