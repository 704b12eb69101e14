"""Scanning files for grep: the compiled search, and one call's scan of files into a page of
matches within its byte and line bounds."""

from __future__ import annotations

import os
import re
import stat

import msgspec

from tidegate.workspace.confine import RootHandle
from tidegate.workspace.confine.entries import FILE_READ_FLAGS
from tidegate.workspace.confine.refusal import check_relative
from tidegate.workspace.confine.walk import WalkItem
from tidegate.workspace.port.cursor import path_parts
from tidegate.workspace.port.errors import BadQuery
from tidegate.workspace.port.excluded import Excluded
from tidegate.workspace.port.results import GrepMatch, GrepResult, WorkspaceLimits


def compile_search(pattern: str, regex: bool, case_sensitive: bool) -> re.Pattern[str]:
    flags = 0 if case_sensitive else re.IGNORECASE
    try:
        return re.compile(pattern if regex else re.escape(pattern), flags)
    except re.error as exc:
        raise BadQuery(f"bad regular expression {pattern!r}: {exc}") from None


class GrepScan(msgspec.Struct):
    handle: RootHandle
    limits: WorkspaceLimits
    search: re.Pattern[str]
    page: int
    excluded: Excluded
    regex: bool
    matches: list[GrepMatch] = msgspec.field(default_factory=list)
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
        limits = self.limits
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
        try:
            where = self.handle.resolve(check_relative(rel), follow_final=True)
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
        largest = self.limits.max_file_bytes_scanned
        if not stat.S_ISREG(st.st_mode) or st.st_size > largest:
            os.close(fd)
            if stat.S_ISREG(st.st_mode):
                self.excluded.add(f"{rel} (larger than {largest} bytes)")
            return True
        return self._scan_fd(fd, rel, start_after)

    def _scan_fd(self, fd: int, rel: str, start_after: int) -> bool:
        limits = self.limits
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
                self.position = (path_parts(rel), number - 1)
                return False
            shown = line.rstrip("\r")[: limits.max_match_chars]
            self.matches.append(GrepMatch(rel, number, shown))
        if long_lines:
            self.excluded.add(
                f"{rel} ({long_lines} long lines searched only in their first "
                f"{limits.max_searched_line_chars} characters)"
            )
        self.position = (path_parts(rel), 0)
        return True
