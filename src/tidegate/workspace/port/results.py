"""What the workspace port takes and returns: preconditions, limits and result records.

Plain frozen dataclasses, so tools can turn them into their output schemas without
knowing how the port produced them.
"""

from __future__ import annotations

import msgspec

from tidegate.workspace.states import EntryState, Kind

Precondition = str
"""``"must_not_exist"`` or the ``"sha256:<hex>"`` the caller last saw."""
MUST_NOT_EXIST = "must_not_exist"

__all__ = [
    "MUST_NOT_EXIST",
    "GrepMatch",
    "GrepResult",
    "ListEntry",
    "Listing",
    "Mutation",
    "Precondition",
    "ReadResult",
    "WorkspaceLimits",
]


class Mutation(msgspec.Struct, frozen=True):
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


class ReadResult(msgspec.Struct, frozen=True):
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


class ListEntry(msgspec.Struct, frozen=True):
    path: str
    kind: Kind
    size: int | None


class Listing(msgspec.Struct, frozen=True):
    """Entries in depth-first order, children sorted. ``excluded`` names what the traversal
    skipped (``.git/``, ignored paths, directories past the depth limit); it is capped,
    ``excluded_total`` counts them all."""

    entries: list[ListEntry]
    truncated: bool
    next_cursor: str | None
    excluded: list[str]
    excluded_total: int = 0


class GrepMatch(msgspec.Struct, frozen=True):
    path: str
    line: int
    text: str


class GrepResult(msgspec.Struct, frozen=True):
    matches: list[GrepMatch]
    files_scanned: int
    truncated: bool
    next_cursor: str | None
    excluded: list[str]
    excluded_total: int = 0


class WorkspaceLimits(msgspec.Struct, frozen=True):
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
