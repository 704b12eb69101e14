"""Finding a block of lines in a file, exactly or tolerantly, and never in the wrong place.

Tolerance comes in steps, each tried only when the stricter ones found nothing:

1. exact lines;
2. the same lines ignoring trailing whitespace;
3. the same lines ignoring all leading and trailing whitespace (the replacement is then
   re-indented by the difference).

A step that finds the block more than once fails unless a line-number hint picks a clear
winner (the nearest place, with every other at least twice as far); a block found nowhere
fails with the closest region for feedback.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable

import msgspec

Norm = Callable[[str], str]

_STEPS: tuple[tuple[str, Norm], ...] = (
    ("exact", lambda s: s),
    ("trailing whitespace ignored", lambda s: s.rstrip()),
    ("indentation and whitespace ignored", lambda s: s.strip()),
)


class Match(msgspec.Struct, frozen=True):
    start: int
    """0-based index of the first matched line."""
    relaxed: str | None
    """None for an exact match at the hinted place, else what was relaxed."""
    indent_delta: str = ""
    """Leading whitespace to add (when positive) to the replacement lines."""
    dedent: int = 0
    """Characters of leading whitespace to remove from the replacement lines."""


class MatchError(ValueError):
    pass


def split_lines(text: str) -> list[str]:
    """Lines keeping their ``\\n`` (and any ``\\r``): splitting at ``\\n`` only."""
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    return [*lines, parts[-1]] if parts[-1] else lines


def locate(haystack: list[str], needle: list[str], hint: int | None = None) -> Match:
    """Find ``needle`` in ``haystack`` (lists of lines). ``hint`` is the 0-based line where
    the block is expected (from a hunk header); with several candidates the nearest wins
    only if it is strictly nearest."""
    if not needle:
        raise MatchError("empty block")
    for label, norm in _STEPS:
        wanted = [norm(line.rstrip("\n")) for line in needle]
        have = [norm(line.rstrip("\n")) for line in haystack]
        n = len(wanted)
        starts = [i for i in range(len(have) - n + 1) if have[i : i + n] == wanted]
        if not starts:
            continue
        start = _pick(starts, hint)
        relaxed = None if label == "exact" else label
        if relaxed is None and hint is not None and start != hint:
            relaxed = f"found {abs(start - hint)} line(s) {'below' if start > hint else 'above'} where expected"
        delta, dedent = (
            _indent_delta(haystack[start], needle[0]) if label.startswith("indent") else ("", 0)
        )
        return Match(start, relaxed, delta, dedent)
    raise MatchError(_closest(haystack, needle))


def _pick(starts: list[int], hint: int | None) -> int:
    if len(starts) == 1:
        return starts[0]
    lines = ", ".join(str(s + 1) for s in starts[:8])
    if hint is None:
        raise MatchError(f"the block matches {len(starts)} places (lines {lines}); make it unique")
    ranked = sorted(starts, key=lambda s: abs(s - hint))
    nearest, runner_up = abs(ranked[0] - hint), abs(ranked[1] - hint)
    if nearest == runner_up:
        raise MatchError(f"the block matches {len(starts)} places (lines {lines}) equally near")
    if runner_up < 2 * nearest:
        # No clear winner: guessing could put the change in the wrong place.
        raise MatchError(
            f"the block matches {len(starts)} places (lines {lines}) and none is clearly "
            f"the one at line {hint + 1}"
        )
    return ranked[0]


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _indent_delta(found: str, wanted: str) -> tuple[str, int]:
    have, want = _indent(found), _indent(wanted)
    if have.startswith(want):
        return have[len(want) :], 0
    if want.startswith(have):
        return "", len(want) - len(have)
    return "", 0


def reindent(lines: list[str], match: Match) -> list[str]:
    out = []
    for line in lines:
        if not line.strip():
            out.append(line)
        elif match.dedent:
            cut = min(match.dedent, len(_indent(line)))
            out.append(line[cut:])
        else:
            out.append(match.indent_delta + line)
    return out


def _closest(haystack: list[str], needle: list[str]) -> str:
    """Describe the region of ``haystack`` most like ``needle``."""
    n = len(needle)
    best, best_ratio = 0, -1.0
    target = "".join(needle)
    for i in range(max(1, len(haystack) - n + 1)):
        ratio = difflib.SequenceMatcher(None, target, "".join(haystack[i : i + n])).quick_ratio()
        if ratio > best_ratio:
            best, best_ratio = i, ratio
    region = haystack[best : best + n]
    shown = "".join(
        f"  {best + k + 1:>5} | {line.rstrip()}\n" for k, line in enumerate(region[:12])
    )
    if not haystack:
        return "the block is not in the file (the file is empty)"
    return f"the block is not in the file; the closest lines are {best + 1}-{best + len(region)}:\n{shown}"
