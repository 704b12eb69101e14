"""Opaque continuation cursors for paginated listings, globs and greps.

A cursor names the last path a page covered (as path components) and, for grep, the
line within it; it is bound to its query by a digest, so a cursor from another query is
refused rather than misread.
"""

from __future__ import annotations

import base64
import hashlib
import json

from tidegate.text.jsonparse import parse_json
from tidegate.workspace.port.errors import BadQuery


def path_parts(path: str) -> tuple[str, ...]:
    """The components of a root-relative path, as cursors and walks order them."""
    return tuple(path.split("/"))


def encode_cursor(query: tuple[object, ...], parts: tuple[str, ...], line: int = 0) -> str:
    body = {"v": 1, "q": _query_key(query), "p": list(parts), "l": line}
    return base64.urlsafe_b64encode(json.dumps(body).encode("utf-8", "surrogateescape")).decode()


def decode_cursor(
    cursor: str | None, query: tuple[object, ...]
) -> tuple[tuple[str, ...], int] | None:
    """``(path components, line)`` of ``cursor``; ``BadQuery`` when it is malformed or was
    made for a different query."""
    if cursor is None:
        return None
    try:
        body = parse_json(base64.urlsafe_b64decode(cursor.encode("ascii")))
        parts = tuple(str(p) for p in body["p"])
        line = int(body["l"])
        ok = body.get("v") == 1 and body.get("q") == _query_key(query) and line >= 0
    except (ValueError, KeyError, TypeError, UnicodeError):
        ok = False
    if not ok:
        raise BadQuery("the cursor is malformed or belongs to a different query")
    for part in parts:
        if part in ("..", ".") or "/" in part or "\0" in part:
            raise BadQuery("the cursor is malformed or belongs to a different query")
    return parts, line


def cursor_parts(cursor: str | None, query: tuple[object, ...]) -> tuple[str, ...] | None:
    decoded = decode_cursor(cursor, query)
    return None if decoded is None else decoded[0]


def _query_key(query: tuple[object, ...]) -> str:
    return hashlib.sha256(json.dumps(query).encode()).hexdigest()[:24]
