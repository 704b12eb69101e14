"""Syntax errors of JSON, JSONC and TOML files as Python's own parsers find them."""

from __future__ import annotations

import json
import re

from tidegate.text.jsonparse import JSONTooDeep, parse_json
from tidegate.validate.syntax.issue import SyntaxIssue, line_text

# JSON: comments (which tree-sitter-json accepts too) are blanked before ``json`` parses;
# in JSONC files trailing commas are blanked as well. Blanking keeps every position.
_JSON_TOKENS = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*[\s\S]*?\*/')
JSON_COMMAS = re.compile(r'"(?:[^"\\\n]|\\.)*"|,(?=\s*[}\]])')
_TOML_POSITION = re.compile(r"^(.*?)\s*\(at line (\d+), column (\d+)\)$", re.DOTALL)


def blank(match: re.Match[str]) -> str:
    token = match.group(0)
    if token.startswith('"'):
        return token
    return "".join(c if c == "\n" else " " for c in token)


def json_issue(data: bytes, lines: list[bytes], jsonc: bool) -> SyntaxIssue | None:
    """The first error Python's ``json`` finds (after blanking what JSON files may have)."""
    text = data.decode("utf-8")
    if not text.strip():
        return None  # an empty file: tree-sitter accepts it, and so do most tools
    try:
        parse_json(text)
        return None
    except JSONTooDeep as exc:
        return _too_deep(exc.lineno, exc.colno, exc.msg, lines)
    except ValueError:
        pass
    text = _JSON_TOKENS.sub(blank, text)
    if jsonc:
        text = JSON_COMMAS.sub(blank, text)
    try:
        parse_json(text)
        return None
    except JSONTooDeep as exc:
        return _too_deep(exc.lineno, exc.colno, exc.msg, lines)
    except json.JSONDecodeError as exc:
        return SyntaxIssue(exc.lineno, exc.colno, exc.msg, line_text(lines, exc.lineno))
    except ValueError as exc:  # e.g. an integer too long to convert
        return SyntaxIssue(1, 1, str(exc), line_text(lines, 1))


def _too_deep(line: int, column: int, message: str, lines: list[bytes]) -> SyntaxIssue:
    """Nesting too deep for Python's parser: not counted, and tree-sitter (which has no
    such limit) judges the whole file instead."""
    doubt = "too deeply nested for Python's parser; tree-sitter's verdict stands"
    return SyntaxIssue(line, column, message, line_text(lines, line), doubt)


def toml_issue(data: bytes, lines: list[bytes]) -> SyntaxIssue | None:
    """The first error Python's ``tomllib`` finds."""
    import tomllib  # only for a TOML file

    try:
        tomllib.loads(data.decode("utf-8"))
        return None
    except RecursionError:  # tomllib recurses once per level of nesting, without a bound
        return _too_deep(1, 1, "nested too deeply for tomllib", lines)
    except tomllib.TOMLDecodeError as exc:
        found = _TOML_POSITION.match(str(exc))
        if found is None:  # "(at end of document)"
            line = max(len(lines) - (1 if lines and not lines[-1] else 0), 1)
            message = str(exc).split(" (at ", 1)[0]
            return SyntaxIssue(line, 1, message, line_text(lines, line))
        line, column = int(found.group(2)), int(found.group(3))
        return SyntaxIssue(line, column, found.group(1), line_text(lines, line))
