"""Glob patterns for the port: ``*``, ``?``, ``[...]``, ``{a,b}`` within one component and
``**`` across directories, compiled to regular expressions over root-relative paths."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import PurePosixPath

from tidegate.workspace.port.errors import BadQuery


def compile_glob(pattern: str, max_depth: int) -> tuple[Callable[[str], bool], PurePosixPath, int]:
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


def file_filter(glob: str | None, max_depth: int) -> Callable[[str], bool]:
    """Grep's file filter: by name when ``glob`` has no ``/``, else by root-relative path."""
    if not glob:
        return lambda _rel: True
    if "/" not in glob:
        compiled = re.compile(_translate_segment(glob))
        return lambda rel: compiled.fullmatch(rel.rpartition("/")[2]) is not None
    matcher, _, _ = compile_glob(glob.removeprefix("./"), max_depth)
    return matcher


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
