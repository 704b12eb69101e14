"""Bounded, paginated traversals for the port: list, glob and grep.

Every traversal walks beneath the root through ``confine`` (no-follow, descriptor-relative),
skips ``.git`` and, unless asked, what git ignores, and discloses what it skipped. A page
that fills up, or a scan that reaches its per-call budget, ends ``truncated`` with a
cursor that continues after the last path it covered.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Generator, Sequence
from contextlib import closing
from pathlib import PurePosixPath

import msgspec

from tidegate.workspace.confine import RootHandle
from tidegate.workspace.confine.refusal import PathRefused
from tidegate.workspace.confine.walk import WalkItem
from tidegate.workspace.ignores import ALWAYS_EXCLUDED, GitView, IgnoreRules, load_ignores
from tidegate.workspace.port.cursor import cursor_parts, decode_cursor, encode_cursor, path_parts
from tidegate.workspace.port.errors import BadQuery, NotADirectory, PathNotFound, SecretWithheld
from tidegate.workspace.port.excluded import Excluded
from tidegate.workspace.port.glob import compile_glob, file_filter
from tidegate.workspace.port.grep import GrepScan, compile_search
from tidegate.workspace.port.paths import relative, resolve_existing
from tidegate.workspace.port.results import (
    GrepResult,
    ListEntry,
    Listing,
    WorkspaceLimits,
)
from tidegate.workspace.secret_files import WITHHELD, SecretFiles
from tidegate.workspace.states import Kind


class Search(msgspec.Struct, frozen=True):
    """The traversals of one root under ``limits``; ``git_view`` gives (lazily, pinned by
    the port) the git work tree whose ignore rules apply, or None."""

    handle: RootHandle
    limits: WorkspaceLimits
    git_view: Callable[[], GitView | None]
    secrets: SecretFiles = msgspec.field(default_factory=SecretFiles)
    """Secret-shaped files: never listed or searched, named in ``excluded`` as withheld."""

    def list_dir(
        self,
        path: str,
        *,
        depth: int,
        cursor: str | None,
        limit: int | None,
        include_ignored: bool,
        exclude_names: Sequence[str],
    ) -> Listing:
        if depth < 1:
            raise BadQuery(f"depth must be 1 or more, not {depth}")
        rel = relative(self.handle, path)
        depth = min(depth, self.limits.max_depth)
        page = _page_size(limit, self.limits.max_entries)
        query = ("list", str(rel), depth, include_ignored, sorted(exclude_names))
        after = cursor_parts(cursor, query)
        excluded = Excluded(self.limits.max_excluded_shown)
        skip = self._skipper(rel, include_ignored, excluded, frozenset(exclude_names))
        entries: list[ListEntry] = []
        with closing(self._walk(rel, path, depth, skip, after)) as walk:
            for item in walk:
                if len(entries) == page:
                    return Listing(
                        entries,
                        True,
                        encode_cursor(query, path_parts(entries[-1].path)),
                        excluded.shown(),
                        excluded.total,
                    )
                entries.append(_list_entry(item))
        return Listing(entries, False, None, excluded.shown(), excluded.total)

    def glob(
        self, pattern: str, *, cursor: str | None, limit: int | None, include_ignored: bool
    ) -> Listing:
        matcher, base, depth = compile_glob(self._glob_pattern(pattern), self.limits.max_depth)
        page = _page_size(limit, self.limits.max_entries)
        query = ("glob", pattern, include_ignored)
        after = cursor_parts(cursor, query)
        excluded = Excluded(self.limits.max_excluded_shown)
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
                        encode_cursor(query, previous),
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
                        encode_cursor(query, path_parts(entries[-1].path)),
                        excluded.shown(),
                        excluded.total,
                    )
                entries.append(_list_entry(item))
        return Listing(entries, False, None, excluded.shown(), excluded.total)

    def grep(
        self,
        pattern: str,
        *,
        path: str,
        glob: str | None,
        regex: bool,
        case_sensitive: bool,
        cursor: str | None,
        limit: int | None,
        include_ignored: bool,
    ) -> GrepResult:
        search = compile_search(pattern, regex, case_sensitive)
        wanted = file_filter(glob, self.limits.max_depth)
        rel = relative(self.handle, path)
        page = _page_size(limit, self.limits.max_matches)
        query = ("grep", pattern, str(rel), glob, regex, case_sensitive, include_ignored)
        resume = decode_cursor(cursor, query)
        excluded = Excluded(self.limits.max_excluded_shown)
        scan = GrepScan(self.handle, self.limits, search, page, excluded, regex)

        target, is_dir = self._grep_target(rel, path)
        if not is_dir:
            done = scan.scan_file(str(target), start_after=resume[1] if resume else 0)
            return scan.result(None if done else encode_cursor(query, *scan.position))

        if resume is not None and resume[1] > 0:
            resumed = "/".join(resume[0])
            if not scan.scan_file(resumed, start_after=resume[1]):
                return scan.result(encode_cursor(query, *scan.position))
        after = resume[0] if resume is not None else None
        skip = self._skipper(rel, include_ignored, excluded)
        return self._grep_tree(scan, query, rel, path, skip, after, wanted)

    def _grep_target(self, rel: PurePosixPath, path: str) -> tuple[PurePosixPath, bool]:
        """Where a grep looks, resolved, and whether it is a directory; ``.git`` and a
        withheld (secret-shaped) file are refused."""
        target = resolve_existing(self.handle, rel, path, follow_final=True)
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
        if not is_dir and self.secrets.withheld(target.rel):
            raise SecretWithheld(path)
        return target.rel, is_dir

    def _grep_tree(
        self,
        scan: GrepScan,
        query: tuple[object, ...],
        rel: PurePosixPath,
        path: str,
        skip: Callable[[str, bool], bool],
        after: tuple[str, ...] | None,
        wanted: Callable[[str], bool],
    ) -> GrepResult:
        """Scan the files below a directory in walk order until the page or one call's
        entry or byte budget is full."""
        excluded = scan.excluded
        visited = 0
        previous: tuple[str, ...] = after or ()
        with closing(self._walk(rel, path, self.limits.max_depth, skip, after)) as walk:
            for item in walk:
                visited += 1
                over_entries = visited > self.limits.max_scan_entries
                if over_entries or scan.bytes_read > self.limits.max_bytes_scanned:
                    what = "entries" if over_entries else "bytes"
                    excluded.add(f"(scan stopped: the {what} limit of one call)")
                    return scan.result(encode_cursor(query, previous, 0))
                previous = item.parts
                if item.is_dir:
                    if not item.descended:
                        excluded.add(f"{item.rel}/ (depth limit {self.limits.max_depth})")
                    continue
                if not stat.S_ISREG(item.st.st_mode) or not wanted(item.rel):
                    continue
                if not scan.scan_item(item):
                    return scan.result(encode_cursor(query, *scan.position))
        return scan.result(None)

    # -- internals --------------------------------------------------------------------------

    def _walk(
        self,
        rel: PurePosixPath,
        path: str,
        depth: int,
        skip: Callable[[str, bool], bool],
        after: tuple[str, ...] | None,
    ) -> Generator[WalkItem, None, None]:
        """The walk below ``rel``; a missing or non-directory start is reported now."""
        start = resolve_existing(self.handle, rel, path, follow_final=True)
        start.close()
        if ALWAYS_EXCLUDED in start.rel.parts:
            raise PathRefused(path, "git_dir")
        walk = self.handle.walk(start.rel, max_depth=depth, skip=skip, after=after)
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
        excluded: Excluded,
        names: frozenset[str] = frozenset(),
    ) -> Callable[[str, bool], bool]:
        ignores = IgnoreRules(git=False)
        view = None if include_ignored else self.git_view()
        if view is not None:
            ignores = load_ignores(self.handle.real_root, view, under=str(rel))

        def skip(entry: str, is_dir: bool) -> bool:
            name = entry.rpartition("/")[2]
            if name == ALWAYS_EXCLUDED:
                excluded.add(entry + "/" if is_dir else entry)
                return True
            if is_dir and name in names:
                excluded.add(entry + "/ (excluded by name)")
                return True
            if not is_dir and self.secrets.withheld(entry):
                excluded.add(f"{entry} ({WITHHELD})")
                return True
            if ignores.ignored(entry, is_dir):
                excluded.add(entry + "/ (ignored)" if is_dir else entry + " (ignored)")
                return True
            return False

        return skip

    def _glob_pattern(self, pattern: str) -> str:
        if "\0" in pattern:
            raise PathRefused(pattern, "nul")
        if pattern.startswith("/"):
            return str(self.handle.relative(pattern))
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
