"""A scope problem the change introduced, and how its other uses are worded."""

from __future__ import annotations

import msgspec


class ScopeProblem(msgspec.Struct, frozen=True, order=True):
    line: int
    column: int
    message: str


def also_used(first: int, lines: list[int]) -> str:
    others = sorted(set(lines) - {first})
    if not others:
        return ""
    shown = ", ".join(str(n) for n in others[:5])
    more = f" and {len(others) - 5} more" if len(others) > 5 else ""
    return f" (also used at line{'s' if len(others) > 1 else ''} {shown}{more})"
