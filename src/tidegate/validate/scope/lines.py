"""What a change touched in a file, line by line."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

import msgspec


class LineDiff(msgspec.Struct, frozen=True):
    """Line-level difference between two versions of a file (1-based line numbers).

    ``changed`` are the lines of the new version that the change added or replaced;
    ``same`` maps every other new line to the identical old line it corresponds to;
    ``hunks`` pairs each replaced old range with the new range that replaced it.
    """

    changed: frozenset[int]
    same: dict[int, int]
    hunks: tuple[tuple[range, range], ...]

    @classmethod
    def of(cls, before: Sequence[bytes] | None, after: Sequence[bytes]) -> LineDiff:
        if before is None:
            everything = range(1, len(after) + 1)
            return cls(frozenset(everything), {}, ((range(1, 1), everything),))
        matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
        changed: set[int] = set()
        same: dict[int, int] = {}
        hunks: list[tuple[range, range]] = []
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                for k in range(j2 - j1):
                    same[j1 + k + 1] = i1 + k + 1
            else:
                changed.update(range(j1 + 1, j2 + 1))
                hunks.append((range(i1 + 1, i2 + 1), range(j1 + 1, j2 + 1)))
        return cls(frozenset(changed), same, tuple(hunks))

    def old_range_of(self, line: int) -> range:
        """The old lines that the hunk containing new ``line`` replaced (empty if none)."""
        for old, new in self.hunks:
            if line in new:
                return old
        return range(0)


def split_lines(data: bytes) -> list[bytes]:
    """Lines as tree-sitter numbers them (split at ``\\n``; a trailing ``\\r`` is kept)."""
    return data.split(b"\n")
