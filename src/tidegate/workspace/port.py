"""The workspace port: confined, bounded, preconditioned access to the user's workspace.

Every workspace tool goes through a ``WorkspacePort``. What it guarantees:

* **Confinement.** Paths resolve beneath the root through ``confine.RootHandle`` (no-follow
  opens relative to directory descriptors; symlinks followed only while they stay inside).
* **Preconditions in the commit.** ``write``/``edit``/``delete`` carry the SHA-256 the
  caller last saw (or ``"must_not_exist"``). The check and the change happen under one
  lock (a thread lock plus ``flock`` on the root, so tidegate processes serialise), and the
  change itself re-checks atomically: a create is ``renameat2(RENAME_NOREPLACE)``, a
  replace is ``renameat2(RENAME_EXCHANGE)`` followed by a check that what was swapped out
  is the very inode and content that was verified (if not, it is swapped back and the call
  fails as stale). A stale call changes nothing: same bytes, same inode.
* **Atomic writes.** New content is written to a temp file in the same directory, fsynced,
  and renamed into place; a file is never rewritten in place. A hard-linked file therefore
  gets a new inode at this path while its other names keep the old content -- nothing
  outside the root is ever written through a hard link.
* **Bounds.** Reads, listings, globs and greps stop at configured limits, say so
  (``truncated``) and return an opaque cursor to continue. Traversals skip ``.git`` and,
  unless asked, what git ignores; what they skipped is disclosed in ``excluded``.

The remaining window: a process that already holds the old file open and writes into it in
place while a replace commits writes into the inode that is then unlinked. Writers that
replace files (editors, git) or open after the commit are never lost silently.
"""

from __future__ import annotations

import base64
import codecs
import errno
import fcntl
import hashlib
import io
import itertools
import json
import os
import re
import stat
import threading
import weakref
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import closing, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import ClassVar, Literal

from tidegate.errors import TidegateError, UsageError
from tidegate.workspace.confine import (
    FILE_READ_FLAGS,
    RENAME_EXCHANGE,
    RENAME_NOREPLACE,
    PathRefused,
    Resolved,
    RootHandle,
    WalkItem,
    check_relative,
    entry_state,
    renameat2,
)
from tidegate.workspace.fs import creation_mode
from tidegate.workspace.ignores import ALWAYS_EXCLUDED, IgnoreRules, git_view, load_ignores
from tidegate.workspace.states import (
    MISSING,
    EntryState,
    Kind,
    hash_fd,
    is_sha256,
    sha256_bytes,
)

Precondition = str
"""``"must_not_exist"`` or the ``"sha256:<hex>"`` the caller last saw."""
MUST_NOT_EXIST = "must_not_exist"

__all__ = [
    "MUST_NOT_EXIST",
    "BadQuery",
    "EditNotApplicable",
    "GrepMatch",
    "GrepResult",
    "ListEntry",
    "Listing",
    "Mutation",
    "NotADirectory",
    "NotAFile",
    "NotUtf8",
    "PathNotFound",
    "PathRefused",
    "Precondition",
    "ReadResult",
    "StalePrecondition",
    "TooLarge",
    "WorkspaceError",
    "WorkspaceLimits",
    "WorkspacePort",
]


# -- errors ------------------------------------------------------------------------------


class WorkspaceError(TidegateError):
    """A workspace operation that could not be done. Nothing was changed."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        super().__init__(f"{path}: {message}")


class PathNotFound(WorkspaceError):
    def __init__(self, path: str) -> None:
        super().__init__(path, "no such file or directory")


class NotAFile(WorkspaceError):
    """The path holds a directory, symlink or special entry where a file was needed."""

    def __init__(self, path: str, kind: Kind, detail: str = "") -> None:
        self.kind = kind
        super().__init__(path, detail or f"is a {kind}, not a regular file")


class NotADirectory(WorkspaceError):
    def __init__(self, path: str) -> None:
        super().__init__(path, "not a directory")


class StalePrecondition(WorkspaceError):
    """The workspace is not in the state the caller last saw; nothing was changed."""

    def __init__(self, path: str, expected: str, actual: EntryState) -> None:
        self.expected = expected
        self.actual = actual
        now = actual.kind if actual.sha256 is None else f"{actual.kind} {actual.sha256}"
        super().__init__(path, f"stale: expected {expected}, found {now}; read it again")


class NotUtf8(WorkspaceError):
    """Text that is not valid UTF-8: the file (``where="file"``, nothing rewritten) or the
    text given (``"content"``, ``"old"``, ``"new"``)."""

    def __init__(self, path: str, where: str = "file", sha256: str | None = None) -> None:
        self.where = where
        self.sha256 = sha256
        what = "the file is" if where == "file" else f"the {where} text is"
        super().__init__(path, f"{what} not valid UTF-8; text operations refuse it")


class EditNotApplicable(WorkspaceError):
    """``old`` was not found, found more than once without ``replace_all``, or the edit
    would change nothing."""

    def __init__(
        self, path: str, reason: Literal["not_found", "ambiguous", "no_change"], count: int = 0
    ) -> None:
        self.reason = reason
        self.count = count
        message = {
            "not_found": "the old text does not occur in the file",
            "ambiguous": f"the old text occurs {count} times; give more context or replace_all",
            "no_change": "old and new text are the same",
        }[reason]
        super().__init__(path, message)


class TooLarge(WorkspaceError):
    def __init__(self, path: str, size: int, limit: int) -> None:
        self.size = size
        self.limit = limit
        super().__init__(path, f"{size} bytes is more than the {limit}-byte limit for this")


class BadQuery(UsageError):
    """An unusable argument: a malformed precondition, pattern, regex or cursor."""


# -- results -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutation:
    """One committed change. ``path`` is canonical (symlinked directories resolved).

    ``created_dirs`` are parent directories the write had to create (each ``missing ->
    dir``). ``before == after`` only for a write of identical content, which touches nothing.
    """

    path: str
    before: EntryState
    after: EntryState
    created_dirs: tuple[str, ...] = ()
    size: int | None = None
    replacements: int = 0

    @property
    def changed(self) -> bool:
        return self.before != self.after or bool(self.created_dirs)


@dataclass(frozen=True)
class ReadResult:
    """Lines ``start_line..end_line`` of a file; ``sha256`` and ``size`` are the whole
    file's. ``truncated_line`` names a line cut short by the byte limit."""

    path: str
    content: str
    sha256: str
    size: int
    start_line: int
    end_line: int
    total_lines: int
    truncated: bool
    next_start_line: int | None
    truncated_line: int | None = None


@dataclass(frozen=True)
class ListEntry:
    path: str
    kind: Kind
    size: int | None


@dataclass(frozen=True)
class Listing:
    """Entries in depth-first order, children sorted. ``excluded`` names what the traversal
    skipped (``.git/``, ignored paths, directories past the depth limit); it is capped,
    ``excluded_total`` counts them all."""

    entries: list[ListEntry]
    truncated: bool
    next_cursor: str | None
    excluded: list[str]
    excluded_total: int = 0


@dataclass(frozen=True)
class GrepMatch:
    path: str
    line: int
    text: str


@dataclass(frozen=True)
class GrepResult:
    matches: list[GrepMatch]
    files_scanned: int
    truncated: bool
    next_cursor: str | None
    excluded: list[str]
    excluded_total: int = 0


@dataclass(frozen=True)
class WorkspaceLimits:
    max_read_bytes: int = 256_000
    max_read_lines: int = 2000
    max_entries: int = 1000
    """Entries (list/glob) per page."""
    max_depth: int = 12
    max_matches: int = 500
    """Grep matches per page."""
    max_file_bytes_scanned: int = 2_000_000
    """Grep skips (and discloses) files larger than this."""
    max_bytes_scanned: int = 64_000_000
    """Grep stops (truncated, with a cursor) after reading this much in one call."""
    max_scan_entries: int = 200_000
    """Glob and grep stop (truncated, with a cursor) after visiting this many entries."""
    max_edit_bytes: int = 16_000_000
    """Edits and writes refuse files larger than this."""
    max_match_chars: int = 1000
    """A grep match line is cut to this many characters."""
    max_searched_line_chars: int = 20_000
    """A regex is tried on at most this many characters of a line (bounds backtracking)."""
    max_excluded_shown: int = 200


# -- the port ----------------------------------------------------------------------------

_TMP_COUNTER = itertools.count()
_MAX_ATTEMPTS = 16


class _RootLock:
    """One per workspace root and process: a reentrant thread lock, and an ``flock`` on a
    descriptor of the root held while any thread is inside (so other tidegate processes
    serialise too). Shared by every port on the root, so nesting never self-deadlocks."""

    _all: ClassVar[dict[str, _RootLock]] = {}
    _guard: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, real_root: str) -> None:
        self._lock = threading.RLock()
        self._fd = os.open(real_root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self._depth = 0

    @classmethod
    def of(cls, real_root: str) -> _RootLock:
        with cls._guard:
            if real_root not in cls._all:
                cls._all[real_root] = cls(real_root)
            return cls._all[real_root]

    @contextmanager
    def held(self) -> Iterator[None]:
        with self._lock:
            self._depth += 1
            try:
                if self._depth == 1:
                    fcntl.flock(self._fd, fcntl.LOCK_EX)
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)


class WorkspacePort:
    """Confined, bounded, preconditioned operations on the workspace at ``root``."""

    def __init__(self, root: Path, limits: WorkspaceLimits | None = None) -> None:
        self._handle = RootHandle(root)
        self.root = self._handle.root
        self.limits = limits or WorkspaceLimits()
        self._lock = _RootLock.of(str(self._handle.real_root))
        self._finalizer = weakref.finalize(self, RootHandle.close, self._handle)
        self._git_checked = False
        self._is_git = False

    def close(self) -> None:
        self._finalizer()

    def __enter__(self) -> WorkspacePort:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the port's commit lock: no write, edit or delete through any port on this
        root (in this process, or another tidegate process) runs meanwhile. The tool
        executor holds it around a command's before/after inventory."""
        with self._lock.held():
            yield

    # -- observation -----------------------------------------------------------------------

    def state(self, path: str) -> EntryState:
        """The typed state of the entry at ``path`` (a final symlink is not followed)."""
        return self._handle.state(path)

    def read(self, path: str, *, start_line: int = 1, max_lines: int | None = None) -> ReadResult:
        if start_line < 1:
            raise BadQuery(f"start_line must be 1 or more, not {start_line}")
        if max_lines is not None and max_lines < 1:
            raise BadQuery(f"max_lines must be 1 or more, not {max_lines}")
        lines = min(max_lines or self.limits.max_read_lines, self.limits.max_read_lines)
        rel = self._relative(path)
        for _ in range(_MAX_ATTEMPTS):
            where = self._resolve_existing(rel, path, follow_final=True)
            try:
                if ALWAYS_EXCLUDED in where.rel.parts:
                    raise PathRefused(path, "git_dir")
                fd = self._open_file(where, path)
                if fd is None:
                    continue  # swapped for a symlink between resolve and open: again
            finally:
                where.close()
            with os.fdopen(fd, "rb") as fh:
                return _read_window(
                    fh, str(where.rel), start_line, lines, self.limits.max_read_bytes
                )
        raise PathRefused(path, "unstable")

    def list(
        self,
        path: str = ".",
        *,
        depth: int = 1,
        cursor: str | None = None,
        limit: int | None = None,
        include_ignored: bool = False,
        exclude_names: Sequence[str] = (),
    ) -> Listing:
        """Entries below the directory ``path`` down to ``depth`` levels. Directories named
        in ``exclude_names`` (e.g. ``node_modules``) are listed as excluded, not entered."""
        if depth < 1:
            raise BadQuery(f"depth must be 1 or more, not {depth}")
        rel = self._relative(path)
        depth = min(depth, self.limits.max_depth)
        page = self._page_size(limit, self.limits.max_entries)
        query = ("list", str(rel), depth, include_ignored, sorted(exclude_names))
        after = _cursor_parts(cursor, query)
        excluded = _Excluded(self.limits.max_excluded_shown)
        skip = self._skipper(rel, include_ignored, excluded, frozenset(exclude_names))
        entries: list[ListEntry] = []
        with closing(self._walk(rel, path, depth, skip, after)) as walk:
            for item in walk:
                if len(entries) == page:
                    return Listing(
                        entries,
                        True,
                        _encode_cursor(query, _parts(entries[-1].path)),
                        excluded.shown(),
                        excluded.total,
                    )
                entries.append(_list_entry(item))
        return Listing(entries, False, None, excluded.shown(), excluded.total)

    def glob(
        self,
        pattern: str,
        *,
        cursor: str | None = None,
        limit: int | None = None,
        include_ignored: bool = False,
    ) -> Listing:
        """Paths matching ``pattern`` (``*``, ``?``, ``[...]``, ``{a,b}``; ``**`` spans
        directories; a pattern without ``/`` matches only at the top level)."""
        matcher, base, depth = _compile_glob(self._glob_pattern(pattern), self.limits.max_depth)
        page = self._page_size(limit, self.limits.max_entries)
        query = ("glob", pattern, include_ignored)
        after = _cursor_parts(cursor, query)
        excluded = _Excluded(self.limits.max_excluded_shown)
        skip = self._skipper(base, include_ignored, excluded)
        entries: list[ListEntry] = []
        visited = 0
        previous: tuple[str, ...] = after or ()
        try:
            walk = self._walk(base, pattern, depth, skip, after)
        except (PathNotFound, NotADirectory):
            return Listing([], False, None, [], 0)
        with closing(walk):
            for item in walk:
                visited += 1
                if visited > self.limits.max_scan_entries:
                    excluded.add(f"(scan stopped after {self.limits.max_scan_entries} entries)")
                    return Listing(
                        entries,
                        True,
                        _encode_cursor(query, previous),
                        excluded.shown(),
                        excluded.total,
                    )
                previous = item.parts
                if item.is_dir and not item.descended and depth >= self.limits.max_depth:
                    excluded.add(f"{item.rel}/ (depth limit {self.limits.max_depth})")
                if not matcher(item.rel):
                    continue
                if len(entries) == page:
                    return Listing(
                        entries,
                        True,
                        _encode_cursor(query, _parts(entries[-1].path)),
                        excluded.shown(),
                        excluded.total,
                    )
                entries.append(_list_entry(item))
        return Listing(entries, False, None, excluded.shown(), excluded.total)

    def grep(
        self,
        pattern: str,
        *,
        path: str = ".",
        glob: str | None = None,
        regex: bool = False,
        case_sensitive: bool = True,
        cursor: str | None = None,
        limit: int | None = None,
        include_ignored: bool = False,
    ) -> GrepResult:
        """Lines matching ``pattern`` in the files under ``path`` (a file or directory).
        ``glob`` filters files: by name when it has no ``/``, else by root-relative path."""
        search = _compile_search(pattern, regex, case_sensitive)
        file_filter = _file_filter(glob, self.limits.max_depth)
        rel = self._relative(path)
        page = self._page_size(limit, self.limits.max_matches)
        query = ("grep", pattern, str(rel), glob, regex, case_sensitive, include_ignored)
        resume = _decode_cursor(cursor, query)
        excluded = _Excluded(self.limits.max_excluded_shown)
        scan = _GrepScan(self, search, page, excluded, regex)

        target = self._resolve_existing(rel, path, follow_final=True)
        if ALWAYS_EXCLUDED in target.rel.parts:
            target.close()
            raise PathRefused(path, "git_dir")
        try:
            is_dir = target.name is None or stat.S_ISDIR(
                os.stat(target.name, dir_fd=target.dir_fd, follow_symlinks=False).st_mode
            )
        except FileNotFoundError:
            raise PathNotFound(path) from None
        finally:
            target.close()
        if not is_dir:
            done = scan.scan_file(str(target.rel), start_after=resume[1] if resume else 0)
            return scan.result(None if done else _encode_cursor(query, *scan.position))

        if resume is not None and resume[1] > 0:
            resumed = "/".join(resume[0])
            if not scan.scan_file(resumed, start_after=resume[1]):
                return scan.result(_encode_cursor(query, *scan.position))
        after = resume[0] if resume is not None else None
        skip = self._skipper(rel, include_ignored, excluded)
        visited = 0
        previous: tuple[str, ...] = after or ()
        with closing(self._walk(rel, path, self.limits.max_depth, skip, after)) as walk:
            for item in walk:
                visited += 1
                over_entries = visited > self.limits.max_scan_entries
                if over_entries or scan.bytes_read > self.limits.max_bytes_scanned:
                    what = "entries" if over_entries else "bytes"
                    excluded.add(f"(scan stopped: the {what} limit of one call)")
                    return scan.result(_encode_cursor(query, previous, 0))
                previous = item.parts
                if item.is_dir:
                    if not item.descended:
                        excluded.add(f"{item.rel}/ (depth limit {self.limits.max_depth})")
                    continue
                if not stat.S_ISREG(item.st.st_mode) or not file_filter(item.rel):
                    continue
                if not scan.scan_item(item):
                    return scan.result(_encode_cursor(query, *scan.position))
        return scan.result(None)

    # -- mutation -------------------------------------------------------------------------

    def write(self, path: str, content: str, *, expect: Precondition) -> Mutation:
        """Create (``expect="must_not_exist"``) or replace (``expect=<sha256 last seen>``)
        the file at ``path`` with ``content`` encoded as UTF-8."""
        _check_precondition(expect)
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError:
            raise NotUtf8(path, "content") from None
        rel = self._mutable(path)
        with self.exclusive():
            if expect == MUST_NOT_EXIST:
                return self._create(rel, path, data)
            where = self._resolve_for_change(rel, path, expect)
            try:
                return self._replace(where, path, expect, lambda _old: data)
            finally:
                where.close()

    def edit(
        self, path: str, *, old: str, new: str, expect: str, replace_all: bool = False
    ) -> Mutation:
        """Replace ``old`` with ``new`` in the UTF-8 text file at ``path``, whose content
        hash must still be ``expect``. ``old`` must occur exactly once unless
        ``replace_all``. A file in CRLF form also matches ``old`` written with LF."""
        if not is_sha256(expect):
            raise BadQuery(f"expect must be the sha256 you last read, not {expect!r}")
        if not old:
            raise BadQuery("old text must not be empty")
        for label, text in (("old", old), ("new", new)):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                raise NotUtf8(path, label) from None
        if old == new:
            raise EditNotApplicable(path, "no_change")
        rel = self._mutable(path)
        counted: list[int] = []

        def transform(current: bytes) -> bytes:
            try:
                text = current.decode("utf-8")
            except UnicodeDecodeError:
                raise NotUtf8(path, "file", expect) from None
            before, after = old, new
            count = text.count(before)
            if count == 0 and "\r\n" in text and "\n" in old and "\r\n" not in old:
                before, after = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
                count = text.count(before)
            if count == 0:
                raise EditNotApplicable(path, "not_found")
            if count > 1 and not replace_all:
                raise EditNotApplicable(path, "ambiguous", count)
            counted.append(count if replace_all else 1)
            return text.replace(before, after, -1 if replace_all else 1).encode("utf-8")

        with self.exclusive():
            where = self._resolve_for_change(rel, path, expect)
            try:
                mutation = self._replace(where, path, expect, transform)
            finally:
                where.close()
        return Mutation(
            mutation.path,
            mutation.before,
            mutation.after,
            size=mutation.size,
            replacements=counted[-1],
        )

    def delete(self, path: str, *, expect: str) -> Mutation:
        """Remove the file, symlink or special entry at ``path`` if it still has state hash
        ``expect``. Directories are not deleted; parents are left alone."""
        if not is_sha256(expect):
            raise BadQuery(f"expect must be the sha256 you last saw, not {expect!r}")
        rel = self._mutable(path)
        with self.exclusive():
            where = self._resolve_for_change(rel, path, expect)
            try:
                return self._remove(where, path, expect)
            finally:
                where.close()

    # -- mutation internals ------------------------------------------------------------------

    def _relative(self, path: str) -> PurePosixPath:
        """The lexically checked root-relative path; ``.git`` is runtime state (it can hold
        credentials in remote URLs), not workspace content, so it is refused too."""
        rel = self._handle.relative(path)
        if ALWAYS_EXCLUDED in rel.parts:
            raise PathRefused(path, "git_dir")
        return rel

    def _mutable(self, path: str) -> PurePosixPath:
        rel = self._relative(path)
        if not rel.parts or rel.parts == (".",):
            raise NotAFile(path, "dir", "the workspace root itself cannot be written")
        return rel

    def _resolve_for_change(self, rel: PurePosixPath, path: str, expect: str) -> Resolved:
        try:
            where = self._handle.resolve(rel)
        except (FileNotFoundError, NotADirectoryError):
            raise StalePrecondition(path, expect, MISSING) from None
        assert where.name is not None
        if ALWAYS_EXCLUDED in where.rel.parts:
            where.close()
            raise PathRefused(path, "git_dir")
        return where

    def _create(self, rel: PurePosixPath, path: str, data: bytes) -> Mutation:
        try:
            where = self._handle.resolve(rel, create_dirs=True)
        except NotADirectoryError:
            raise NotADirectory(str(rel.parent)) from None
        assert where.name is not None
        name = where.name
        try:
            if ALWAYS_EXCLUDED in where.rel.parts:
                raise PathRefused(path, "git_dir")
            current = entry_state(where.dir_fd, name)
            if current.kind == "symlink":
                self._refuse_escaping_link(where, path)
            if current != MISSING:
                raise StalePrecondition(path, MUST_NOT_EXIST, current)
            self._check_size(path, len(data))
            try:
                tmp = _write_temp(where.dir_fd, name, data, creation_mode(False), None)
            except FileNotFoundError:
                # The directory we resolved was removed meanwhile: nothing was written.
                raise PathRefused(path, "unstable") from None
            try:
                if not renameat2(where.dir_fd, tmp, name, RENAME_NOREPLACE):
                    # No RENAME_NOREPLACE here: link(2) also refuses an existing name.
                    os.link(
                        tmp,
                        name,
                        src_dir_fd=where.dir_fd,
                        dst_dir_fd=where.dir_fd,
                        follow_symlinks=False,
                    )
                    os.unlink(tmp, dir_fd=where.dir_fd)
            except FileExistsError:
                with suppress(FileNotFoundError):
                    os.unlink(tmp, dir_fd=where.dir_fd)
                raise StalePrecondition(
                    path, MUST_NOT_EXIST, entry_state(where.dir_fd, name)
                ) from None
            _fsync_dir(where.dir_fd)
            return Mutation(
                str(where.rel),
                MISSING,
                EntryState("file", sha256_bytes(data)),
                where.created,
                len(data),
            )
        except BaseException:
            self._remove_created(where.created)
            raise
        finally:
            where.close()

    def _replace(
        self, where: Resolved, path: str, expect: str, transform: Callable[[bytes], bytes]
    ) -> Mutation:
        assert where.name is not None
        name = where.name
        old_fd, old_st, current = self._open_expected_file(where, path, expect)
        try:
            new = transform(current)
            self._check_size(path, len(new))
            rel = str(where.rel)
            after = EntryState("file", sha256_bytes(new))
            if new == current:
                return Mutation(rel, after, after, size=len(new))
            owner = (old_st.st_uid, old_st.st_gid)
            tmp = _write_temp(where.dir_fd, name, new, stat.S_IMODE(old_st.st_mode), owner)
            if renameat2(where.dir_fd, tmp, name, RENAME_EXCHANGE):
                # What now sits at tmp must be the inode we verified, still with the
                # verified content; otherwise someone changed it in between: undo.
                swapped = os.stat(tmp, dir_fd=where.dir_fd, follow_symlinks=False)
                same = (swapped.st_dev, swapped.st_ino) == (old_st.st_dev, old_st.st_ino)
                if not same or _rehash(old_fd) != expect:
                    renameat2(where.dir_fd, tmp, name, RENAME_EXCHANGE)
                    os.unlink(tmp, dir_fd=where.dir_fd)
                    raise StalePrecondition(path, expect, entry_state(where.dir_fd, name))
                os.unlink(tmp, dir_fd=where.dir_fd)
            else:
                # No RENAME_EXCHANGE on this file system: check once more, then replace.
                now = os.stat(name, dir_fd=where.dir_fd, follow_symlinks=False)
                if (now.st_dev, now.st_ino) != (old_st.st_dev, old_st.st_ino) or (
                    _rehash(old_fd) != expect
                ):
                    os.unlink(tmp, dir_fd=where.dir_fd)
                    raise StalePrecondition(path, expect, entry_state(where.dir_fd, name))
                os.replace(tmp, name, src_dir_fd=where.dir_fd, dst_dir_fd=where.dir_fd)
            _fsync_dir(where.dir_fd)
            return Mutation(rel, EntryState("file", expect), after, size=len(new))
        finally:
            os.close(old_fd)

    def _open_expected_file(
        self, where: Resolved, path: str, expect: str
    ) -> tuple[int, os.stat_result, bytes]:
        """Open the regular file at ``where`` and check it still hashes to ``expect``."""
        assert where.name is not None
        for _ in range(_MAX_ATTEMPTS):
            current = entry_state(where.dir_fd, where.name)
            if current.kind != "file":
                if current.kind in ("dir", "special"):
                    raise NotAFile(path, current.kind)
                if current.kind == "symlink":
                    target = self._refuse_escaping_link(where, path)
                    raise NotAFile(path, "symlink", f"is a symlink; write or edit {target}")
                raise StalePrecondition(path, expect, current)
            try:
                fd = os.open(where.name, FILE_READ_FLAGS, dir_fd=where.dir_fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOENT):
                    continue
                raise
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                os.close(fd)
                continue
            if st.st_size > self.limits.max_edit_bytes:
                os.close(fd)
                raise TooLarge(path, st.st_size, self.limits.max_edit_bytes)
            data = _read_all(fd)
            if sha256_bytes(data) != expect:
                os.close(fd)
                raise StalePrecondition(path, expect, EntryState.file(data))
            return fd, st, data
        raise PathRefused(path, "unstable")

    def _refuse_escaping_link(self, where: Resolved, path: str) -> str:
        """Raise PathRefused when the symlink at ``where`` leads out of the root; else
        return the canonical path it leads to."""
        link = where.rel
        target = self._handle.resolve(link, follow_final=True)  # raises on an escape
        target.close()
        return str(target.rel)

    def _remove(self, where: Resolved, path: str, expect: str) -> Mutation:
        assert where.name is not None
        name = where.name
        current = entry_state(where.dir_fd, name)
        if current.kind == "dir":
            raise NotAFile(path, "dir", "is a directory; only files and symlinks are deleted")
        if current.sha256 != expect:
            raise StalePrecondition(path, expect, current)
        st = os.stat(name, dir_fd=where.dir_fd, follow_symlinks=False)
        tmp = _temp_name(name)
        os.rename(name, tmp, src_dir_fd=where.dir_fd, dst_dir_fd=where.dir_fd)
        moved = os.stat(tmp, dir_fd=where.dir_fd, follow_symlinks=False)
        if (moved.st_dev, moved.st_ino) != (st.st_dev, st.st_ino) or (
            entry_state(where.dir_fd, tmp) != current
        ):
            if not renameat2(where.dir_fd, tmp, name, RENAME_NOREPLACE):
                os.link(
                    tmp,
                    name,
                    src_dir_fd=where.dir_fd,
                    dst_dir_fd=where.dir_fd,
                    follow_symlinks=False,
                )
                os.unlink(tmp, dir_fd=where.dir_fd)
            raise StalePrecondition(path, expect, entry_state(where.dir_fd, name))
        os.unlink(tmp, dir_fd=where.dir_fd)
        _fsync_dir(where.dir_fd)
        return Mutation(str(where.rel), current, MISSING)

    def _remove_created(self, created: tuple[str, ...]) -> None:
        for rel in reversed(created):
            with suppress(OSError):
                where = self._handle.resolve(PurePosixPath(rel))
                try:
                    assert where.name is not None
                    os.rmdir(where.name, dir_fd=where.dir_fd)
                finally:
                    where.close()

    def _check_size(self, path: str, size: int) -> None:
        if size > self.limits.max_edit_bytes:
            raise TooLarge(path, size, self.limits.max_edit_bytes)

    # -- traversal internals -----------------------------------------------------------------

    def _resolve_existing(self, rel: PurePosixPath, path: str, *, follow_final: bool) -> Resolved:
        try:
            return self._handle.resolve(rel, follow_final=follow_final)
        except (FileNotFoundError, NotADirectoryError):
            raise PathNotFound(path) from None

    def _open_file(self, where: Resolved, path: str) -> int | None:
        if where.name is None:
            raise NotAFile(path, "dir")
        try:
            fd = os.open(where.name, FILE_READ_FLAGS, dir_fd=where.dir_fd)
        except FileNotFoundError:
            raise PathNotFound(path) from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return None
            raise
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            raise NotAFile(path, "dir" if stat.S_ISDIR(mode) else "special")
        return fd

    def _walk(
        self,
        rel: PurePosixPath,
        path: str,
        depth: int,
        skip: Callable[[str, bool], bool],
        after: tuple[str, ...] | None,
    ) -> Generator[WalkItem, None, None]:
        """The walk below ``rel``; a missing or non-directory start is reported now."""
        start = self._resolve_existing(rel, path, follow_final=True)
        start.close()
        if ALWAYS_EXCLUDED in start.rel.parts:
            raise PathRefused(path, "git_dir")
        walk = self._handle.walk(start.rel, max_depth=depth, skip=skip, after=after)
        try:
            first = next(walk, None)  # resolution errors surface here
        except FileNotFoundError:
            raise PathNotFound(path) from None
        except NotADirectoryError:
            raise NotADirectory(path) from None
        return _chained(first, walk)

    def _skipper(
        self,
        rel: PurePosixPath,
        include_ignored: bool,
        excluded: _Excluded,
        names: frozenset[str] = frozenset(),
    ) -> Callable[[str, bool], bool]:
        ignores = IgnoreRules(git=False)
        if not include_ignored and self._in_git():
            ignores = load_ignores(self._handle.real_root, under=str(rel))

        def skip(entry: str, is_dir: bool) -> bool:
            name = entry.rpartition("/")[2]
            if name == ALWAYS_EXCLUDED:
                excluded.add(entry + "/" if is_dir else entry)
                return True
            if is_dir and name in names:
                excluded.add(entry + "/ (excluded by name)")
                return True
            if ignores.ignored(entry, is_dir):
                excluded.add(entry + "/ (ignored)" if is_dir else entry + " (ignored)")
                return True
            return False

        return skip

    def _in_git(self) -> bool:
        if not self._git_checked:
            self._is_git = git_view(self._handle.real_root) is not None
            self._git_checked = True
        return self._is_git

    def _glob_pattern(self, pattern: str) -> str:
        if "\0" in pattern:
            raise PathRefused(pattern, "nul")
        if pattern.startswith("/"):
            return str(self._handle.relative(pattern))
        text = pattern
        while text.startswith("./"):
            text = text[2:]
        if text.startswith("~"):
            raise PathRefused(pattern, "home")
        if ".." in text.split("/"):
            raise PathRefused(pattern, "parent")
        if ALWAYS_EXCLUDED in text.split("/"):
            raise PathRefused(pattern, "git_dir")
        if "\\" in text:
            raise PathRefused(pattern, "backslash")
        return text

    @staticmethod
    def _page_size(limit: int | None, ceiling: int) -> int:
        if limit is not None and limit < 1:
            raise BadQuery(f"limit must be 1 or more, not {limit}")
        return min(limit or ceiling, ceiling)


def _chained(
    first: WalkItem | None, rest: Generator[WalkItem, None, None]
) -> Generator[WalkItem, None, None]:
    try:
        if first is not None:
            yield first
            yield from rest
    finally:
        rest.close()


# -- reading -------------------------------------------------------------------------------

_LINE_PIECE = 1 << 20


def _read_window(
    fh: io.BufferedReader, rel: str, start: int, max_lines: int, max_bytes: int
) -> ReadResult:
    """One pass over the file: hash and validate all of it, keep the requested lines.

    Lines are read in pieces of at most 1 MiB, so one enormous line never has to fit in
    memory; a first line larger than ``max_bytes`` is returned cut (``truncated_line``).
    """
    digest = hashlib.sha256()
    validator = codecs.getincrementaldecoder("utf-8")()
    valid = True
    kept: list[bytes] = []
    kept_bytes = kept_lines = 0
    line_begins = 0  # index in ``kept`` where the current line's pieces start
    line_no = size = 0
    at_line_start = True
    full = False
    cut_line: int | None = None
    while piece := fh.readline(_LINE_PIECE):
        size += len(piece)
        digest.update(piece)
        if valid:
            try:
                validator.decode(piece)
            except UnicodeDecodeError:
                valid = False
        if at_line_start:
            line_no += 1
        if not full and line_no >= start:
            if at_line_start and kept_lines == max_lines:
                full = True
            elif kept_bytes + len(piece) <= max_bytes:
                if at_line_start:
                    line_begins = len(kept)
                    kept_lines += 1
                kept.append(piece)
                kept_bytes += len(piece)
            elif kept_lines == 0 or (kept_lines == 1 and not at_line_start):
                kept.append(piece[: max_bytes - kept_bytes])  # the first line alone is too long
                kept_lines, cut_line, full = 1, line_no, True
            else:
                if not at_line_start:  # drop the part of this line already kept
                    del kept[line_begins:]
                    kept_lines -= 1
                full = True
        at_line_start = piece.endswith(b"\n")
    if valid:
        try:
            validator.decode(b"", final=True)
        except UnicodeDecodeError:
            valid = False
    sha = "sha256:" + digest.hexdigest()
    if not valid:
        raise NotUtf8(rel, "file", sha)
    # final=False drops only a character split by the cut; the file itself is valid.
    text = codecs.getincrementaldecoder("utf-8")().decode(b"".join(kept), final=False)
    end = start + kept_lines - 1
    more = end < line_no
    return ReadResult(
        path=rel,
        content=text,
        sha256=sha,
        size=size,
        start_line=start,
        end_line=end,
        total_lines=line_no,
        truncated=more or cut_line is not None,
        next_start_line=end + 1 if more else None,
        truncated_line=cut_line,
    )


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _rehash(fd: int) -> str:
    os.lseek(fd, 0, os.SEEK_SET)
    return hash_fd(fd)


# -- writing -------------------------------------------------------------------------------


def _temp_name(name: str) -> str:
    return f".{name[:80]}.tidegate-{os.getpid()}-{next(_TMP_COUNTER)}.tmp"


def _write_temp(
    dir_fd: int, name: str, data: bytes, mode: int, owner: tuple[int, int] | None
) -> str:
    """A new file beside ``name`` holding ``data``, fsynced; returns its name."""
    tmp = _temp_name(name)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o600, dir_fd=dir_fd)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if owner is not None and os.geteuid() == 0:
            with suppress(OSError):
                os.fchown(fd, *owner)
        os.fchmod(fd, mode)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    os.close(fd)
    return tmp


def _fsync_dir(dir_fd: int) -> None:
    with suppress(OSError):
        os.fsync(dir_fd)


def _check_precondition(expect: str) -> None:
    if expect != MUST_NOT_EXIST and not is_sha256(expect):
        raise BadQuery(f"expect must be 'must_not_exist' or a sha256 you saw, not {expect!r}")


# -- listing helpers -----------------------------------------------------------------------


class _Excluded:
    """Disclosed exclusions, capped for output, all counted."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.items: list[str] = []
        self.total = 0

    def add(self, text: str) -> None:
        self.total += 1
        if len(self.items) < self.cap:
            self.items.append(text)

    def shown(self) -> list[str]:
        return list(self.items)


def _list_entry(item: WalkItem) -> ListEntry:
    mode = item.st.st_mode
    kind: Kind
    if stat.S_ISDIR(mode):
        kind = "dir"
    elif stat.S_ISREG(mode):
        kind = "file"
    elif stat.S_ISLNK(mode):
        kind = "symlink"
    else:
        kind = "special"
    return ListEntry(item.rel, kind, item.st.st_size if kind == "file" else None)


def _parts(path: str) -> tuple[str, ...]:
    return tuple(path.split("/"))


def _encode_cursor(query: tuple[object, ...], parts: tuple[str, ...], line: int = 0) -> str:
    body = {"v": 1, "q": _query_key(query), "p": list(parts), "l": line}
    return base64.urlsafe_b64encode(json.dumps(body).encode("utf-8", "surrogateescape")).decode()


def _decode_cursor(
    cursor: str | None, query: tuple[object, ...]
) -> tuple[tuple[str, ...], int] | None:
    if cursor is None:
        return None
    try:
        body = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
        parts = tuple(str(p) for p in body["p"])
        line = int(body["l"])
        ok = body.get("v") == 1 and body.get("q") == _query_key(query) and line >= 0
    except (ValueError, KeyError, TypeError, UnicodeError):
        ok = False
    if not ok:
        raise BadQuery("the cursor is malformed or belongs to a different query")
    for part in parts:
        if part in ("..", ".") or "/" in part or "\0" in part:
            raise BadQuery("the cursor is malformed or belongs to a different query")
    return parts, line


def _cursor_parts(cursor: str | None, query: tuple[object, ...]) -> tuple[str, ...] | None:
    decoded = _decode_cursor(cursor, query)
    return None if decoded is None else decoded[0]


def _query_key(query: tuple[object, ...]) -> str:
    return hashlib.sha256(json.dumps(query).encode()).hexdigest()[:24]


# -- glob ----------------------------------------------------------------------------------


def _compile_glob(pattern: str, max_depth: int) -> tuple[Callable[[str], bool], PurePosixPath, int]:
    """A matcher for root-relative paths, the literal directory to start walking from, and
    how deep to walk below it."""
    segments = [s for s in pattern.split("/") if s not in ("", ".")]
    if not segments:
        raise BadQuery("empty glob pattern")
    literal: list[str] = []
    for seg in segments[:-1]:
        if any(c in seg for c in "*?[{"):
            break
        literal.append(seg)
    rest = segments[len(literal) :]
    depth = max_depth if "**" in rest else len(rest)
    try:
        compiled = re.compile(_globstar_regex(segments))
    except re.error as exc:
        raise BadQuery(f"bad glob pattern {pattern!r}: {exc}") from None
    base = PurePosixPath(*literal) if literal else PurePosixPath(".")
    return (lambda rel: compiled.fullmatch(rel) is not None), base, max(1, min(depth, max_depth))


def _globstar_regex(segments: list[str]) -> str:
    out = ""
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        if seg == "**":
            out += ".*" if last else "(?:[^/]*/)*"
        else:
            out += _translate_segment(seg) + ("" if last else "/")
    return out


def _translate_segment(seg: str) -> str:
    out = []
    i = 0
    while i < len(seg):
        c = seg[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = seg.find("]", i + 2 if seg[i + 1 : i + 2] in ("!", "^") else i + 1)
            if end < 0:
                out.append(re.escape(c))
            else:
                body = seg[i + 1 : end]
                negate = body[:1] in ("!", "^")
                body = body[1:] if negate else body
                out.append("[" + ("^" if negate else "") + body.replace("\\", "\\\\") + "]")
                i = end
        elif c == "{":
            end = seg.find("}", i)
            if end < 0:
                out.append(re.escape(c))
            else:
                options = seg[i + 1 : end].split(",")
                out.append("(?:" + "|".join(_translate_segment(o) for o in options) + ")")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _file_filter(glob: str | None, max_depth: int) -> Callable[[str], bool]:
    if not glob:
        return lambda _rel: True
    if "/" not in glob:
        compiled = re.compile(_translate_segment(glob))
        return lambda rel: compiled.fullmatch(rel.rpartition("/")[2]) is not None
    matcher, _, _ = _compile_glob(glob.removeprefix("./"), max_depth)
    return matcher


# -- grep ----------------------------------------------------------------------------------


def _compile_search(pattern: str, regex: bool, case_sensitive: bool) -> re.Pattern[str]:
    flags = 0 if case_sensitive else re.IGNORECASE
    try:
        return re.compile(pattern if regex else re.escape(pattern), flags)
    except re.error as exc:
        raise BadQuery(f"bad regular expression {pattern!r}: {exc}") from None


@dataclass
class _GrepScan:
    port: WorkspacePort
    search: re.Pattern[str]
    page: int
    excluded: _Excluded
    regex: bool
    matches: list[GrepMatch] = field(default_factory=list)
    files_scanned: int = 0
    bytes_read: int = 0
    position: tuple[tuple[str, ...], int] = ((), 0)
    truncated: bool = False

    def result(self, cursor: str | None) -> GrepResult:
        return GrepResult(
            self.matches,
            self.files_scanned,
            cursor is not None,
            cursor,
            self.excluded.shown(),
            self.excluded.total,
        )

    def scan_item(self, item: WalkItem) -> bool:
        """Scan one walked file; False when the page filled up inside it."""
        limits = self.port.limits
        if item.st.st_size > limits.max_file_bytes_scanned:
            self.excluded.add(f"{item.rel} (larger than {limits.max_file_bytes_scanned} bytes)")
            return True
        try:
            fd = os.open(item.name, FILE_READ_FLAGS, dir_fd=item.dir_fd)
        except OSError:
            return True  # replaced or unreadable since the walk saw it
        return self._scan_fd(fd, item.rel, 0)

    def scan_file(self, rel: str, start_after: int) -> bool:
        """Scan a file named by path (a grep of one file, or a resumed file)."""
        handle = self.port._handle
        try:
            where = handle.resolve(check_relative(rel), follow_final=True)
        except (FileNotFoundError, NotADirectoryError):
            return True
        try:
            if where.name is None:
                return True
            try:
                fd = os.open(where.name, FILE_READ_FLAGS, dir_fd=where.dir_fd)
            except OSError:
                return True
        finally:
            where.close()
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > self.port.limits.max_file_bytes_scanned:
            os.close(fd)
            if stat.S_ISREG(st.st_mode):
                self.excluded.add(
                    f"{rel} (larger than {self.port.limits.max_file_bytes_scanned} bytes)"
                )
            return True
        return self._scan_fd(fd, rel, start_after)

    def _scan_fd(self, fd: int, rel: str, start_after: int) -> bool:
        limits = self.port.limits
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return True
            data = fh.read(limits.max_file_bytes_scanned + 1)
        self.bytes_read += len(data)
        if b"\0" in data[:8192]:
            self.excluded.add(f"{rel} (binary)")
            return True
        self.files_scanned += 1
        text = data.decode("utf-8", "replace")
        long_lines = 0
        for number, line in enumerate(text.split("\n"), start=1):
            if number <= start_after:
                continue
            searched = line
            if self.regex and len(line) > limits.max_searched_line_chars:
                searched = line[: limits.max_searched_line_chars]
                long_lines += 1
            if self.search.search(searched) is None:
                continue
            if len(self.matches) == self.page:
                self.position = (_parts(rel), number - 1)
                return False
            shown = line.rstrip("\r")[: limits.max_match_chars]
            self.matches.append(GrepMatch(rel, number, shown))
        if long_lines:
            self.excluded.add(
                f"{rel} ({long_lines} long lines searched only in their first "
                f"{limits.max_searched_line_chars} characters)"
            )
        self.position = (_parts(rel), 0)
        return True
