"""Unified diffs that ``git apply`` refuses: parse them with unidiff and apply each hunk
tolerantly (shifted line numbers, whitespace), saying what was relaxed.

Used only after ``git apply`` failed on the exact diff. A hunk whose context cannot be
found, or is found in more than one equally likely place, is an error that tells the
planner which hunk, what context it expected, and the closest lines the file has.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec

from tidegate.text.paths import git_unquoted
from tidegate.validate.matching import MatchError, locate, reindent, split_lines

if TYPE_CHECKING:
    from unidiff.patch import PatchedFile, PatchSet

_MODE = re.compile(r"^(?:new file mode|new mode) (\d{6})")


class HunkError(ValueError):
    pass


class TolerantResult(msgspec.Struct):
    contents: dict[str, bytes | None] = msgspec.field(default_factory=dict)
    """New content per path; None deletes the path."""
    executable: dict[str, bool] = msgspec.field(default_factory=dict)
    notes: list[str] = msgspec.field(default_factory=list)


def parse_diff(diff: str) -> PatchSet:
    from unidiff.errors import UnidiffParseError  # only a diff proposal needs the parser
    from unidiff.patch import PatchSet

    try:
        patch = PatchSet(diff)
    except UnidiffParseError as exc:
        raise HunkError(f"the diff is malformed: {exc}") from exc
    if not len(patch):
        raise HunkError("the diff names no file (expected '--- a/PATH' and '+++ b/PATH' lines)")
    return patch


def apply_tolerantly(
    diff: str, read: Callable[[str], bytes | None], is_executable: Callable[[str], bool]
) -> TolerantResult:
    result = TolerantResult()
    for pf in parse_diff(diff):
        source, target = _strip(pf.source_file), _strip(pf.target_file)
        if pf.is_binary_file:
            raise HunkError(f"{target or source}: a binary patch must apply exactly")
        header = list(pf.patch_info or [])
        mode = next((m.group(1) for line in header if (m := _MODE.match(line))), None)
        if pf.is_added_file:
            assert target is not None
            if read(target) is not None:
                raise HunkError(f"{target}: the diff creates it, but it already exists")
            result.contents[target] = _apply_hunks(pf, target, "", result.notes).encode(
                "utf-8", "surrogateescape"
            )
            result.executable[target] = mode == "100755"
            continue
        assert source is not None
        data = result.contents.get(source) if source in result.contents else read(source)
        if data is None:
            raise HunkError(f"{source}: the diff changes it, but there is no such file")
        if pf.is_removed_file:
            result.contents[source] = None
            continue
        text = _apply_hunks(pf, source, data.decode("utf-8", "surrogateescape"), result.notes)
        assert target is not None
        if target != source:
            result.contents[source] = None
        result.contents[target] = text.encode("utf-8", "surrogateescape")
        result.executable[target] = (mode == "100755") if mode else is_executable(source)
    return result


def _strip(name: str | None) -> str | None:
    """The path a ``---``/``+++`` name stands for: git C-quotes an unusual one."""
    if name is None or name == "/dev/null":
        return None
    name = git_unquoted(name)
    return name[2:] if name.startswith(("a/", "b/")) else name


def _apply_hunks(pf: PatchedFile, path: str, text: str, notes: list[str]) -> str:
    lines = split_lines(text)
    offset = 0
    for number, hunk in enumerate(pf, start=1):
        ops: list[tuple[str, str]] = []  # (" " | "-" | "+", line)
        for line in hunk:
            if line.line_type == "\\":
                # "\ No newline at end of file" belongs to the line before it.
                if ops:
                    kind, value = ops[-1]
                    ops[-1] = (kind, value.rstrip("\n"))
                continue
            if line.line_type in (" ", "-", "+"):
                # Only the marker above ends a line without its newline. The last line of
                # a diff text that merely stops without one (models send those) is still
                # a whole line; taken as written it would join the file's next line.
                value = line.value if line.value.endswith("\n") else line.value + "\n"
                ops.append((line.line_type, value))
        old = [value for kind, value in ops if kind != "+"]
        new = [value for kind, value in ops if kind != "-"]
        where = f"{path}: hunk {number} (@@ -{hunk.source_start},{hunk.source_length} @@)"
        if not old:
            start = max(0, min(len(lines), hunk.source_start + offset))
            lines[start:start] = new
            offset += len(new)
            continue
        hint = max(0, hunk.source_start - 1 + offset)
        try:
            match = locate(lines, old, hint)
        except MatchError as exc:
            expected = "".join(f"  | {s.rstrip()}\n" for s in old[:12])
            raise HunkError(f"{where}: expected these lines:\n{expected}{exc}") from exc
        if match.relaxed:
            notes.append(f"{where}: applied at line {match.start + 1}, {match.relaxed}")
        # Context lines keep the file's own text; added lines follow its indentation.
        replacement: list[str] = []
        k = match.start
        for kind, value in ops:
            if kind == " ":
                replacement.append(lines[k])
                k += 1
            elif kind == "-":
                k += 1
            else:
                replacement.extend(reindent([value], match))
        lines[match.start : match.start + len(old)] = replacement
        offset = match.start - (hunk.source_start - 1) + len(replacement) - len(old)
    _check_line_ends(path, lines)
    return "".join(lines)


def _check_line_ends(path: str, lines: list[str]) -> None:
    """Only the last line may lack its newline: one in the middle would join the next line
    to it, so a line the diff never touched would silently vanish."""
    for number, line in enumerate(lines[:-1], start=1):
        if not line.endswith("\n"):
            raise HunkError(
                f"{path}: line {number} would lose its newline and join line {number + 1}: "
                "the diff puts lines after one that ends the file without a newline"
            )
