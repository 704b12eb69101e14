"""SEARCH/REPLACE edit blocks, the format models write most reliably::

    src/calc.py
    <<<<<<< SEARCH
    def add(a, b):
        return a - b
    =======
    def add(a, b):
        return a + b
    >>>>>>> REPLACE

The path is the last non-blank line before the ``SEARCH`` marker (Markdown fences and
emphasis around it are ignored). An empty SEARCH creates a new file. Errors name the line
of the proposal text and say what was expected.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import msgspec

from tidegate.validate.matching import MatchError, locate, reindent, split_lines

_SEARCH = re.compile(r"^\s*<{5,9} ?SEARCH\s*$")
_DIVIDER = re.compile(r"^\s*={5,9}\s*$")
_REPLACE = re.compile(r"^\s*>{5,9} ?REPLACE\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


class EditBlockError(ValueError):
    pass


class EditBlock(msgspec.Struct, frozen=True):
    path: str
    search: str
    replace: str
    line: int
    """1-based line of the SEARCH marker in the proposal text."""


def parse_edit_blocks(text: str) -> list[EditBlock]:
    lines = split_lines(text)
    blocks: list[EditBlock] = []
    i = 0
    while i < len(lines):
        raw = lines[i].rstrip("\r\n")
        if _DIVIDER.match(raw) or _REPLACE.match(raw):
            raise EditBlockError(
                f"line {i + 1}: {raw.strip()!r} without an opening '<<<<<<< SEARCH'"
            )
        if not _SEARCH.match(raw):
            i += 1
            continue
        path = _path_before(lines, i)
        search, j = _collect(lines, i + 1, _DIVIDER, "'======='", i)
        replace, k = _collect(lines, j + 1, _REPLACE, "'>>>>>>> REPLACE'", i)
        blocks.append(EditBlock(path, "".join(search), "".join(replace), i + 1))
        i = k + 1
    if not blocks:
        raise EditBlockError("no '<<<<<<< SEARCH' block found")
    return blocks


def _path_before(lines: list[str], marker: int) -> str:
    for back in range(marker - 1, -1, -1):
        candidate = lines[back].strip()
        if not candidate or _FENCE.match(candidate):
            continue
        path = candidate.strip("`*: ").removeprefix("File ").strip()
        if not path or (" " in path.strip() and "/" not in path):
            break
        return path
    raise EditBlockError(f"line {marker + 1}: SEARCH block with no file path on the line before it")


def _collect(
    lines: list[str], start: int, end: re.Pattern[str], name: str, opened: int
) -> tuple[list[str], int]:
    body: list[str] = []
    for j in range(start, len(lines)):
        raw = lines[j].rstrip("\r\n")
        if end.match(raw):
            return body, j
        if _SEARCH.match(raw):
            break
        body.append(lines[j])
    raise EditBlockError(f"line {opened + 1}: SEARCH block is not closed by {name}")


def apply_edit_blocks(
    blocks: list[EditBlock], read: Callable[[str], bytes | None]
) -> tuple[dict[str, bytes], list[str]]:
    """New contents per path, and notes on what matching had to relax."""
    contents: dict[str, str] = {}
    notes: list[str] = []
    for block in blocks:
        where = f"edit block at line {block.line} ({block.path})"
        if block.path not in contents:
            data = read(block.path)
            if data is None:
                if block.search.strip():
                    raise EditBlockError(f"{where}: {block.path} does not exist")
                contents[block.path] = block.replace
                continue
            contents[block.path] = data.decode("utf-8", "surrogateescape")
        current = split_lines(contents[block.path])
        if not block.search.strip():
            raise EditBlockError(f"{where}: empty SEARCH, but {block.path} already exists")
        try:
            match = locate(current, split_lines(block.search))
        except MatchError as exc:
            raise EditBlockError(f"{where}: {exc}") from exc
        if match.relaxed:
            notes.append(f"{where}: matched at line {match.start + 1} with {match.relaxed}")
        replacement = reindent(split_lines(block.replace), match)
        n = len(split_lines(block.search))
        new = current[: match.start] + replacement + current[match.start + n :]
        contents[block.path] = "".join(new)
    return {p: c.encode("utf-8", "surrogateescape") for p, c in contents.items()}, notes
