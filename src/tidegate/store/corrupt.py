"""Stored records that are not what the store writes.

SQLite keeps any value in any column, so a store edited by hand (or by an attacker, or
damaged) can hold a report that is not JSON, a status tidegate never writes, or a number
where text belongs. Readers name such a record in one line (``CorruptRecord``, exit 1)
instead of failing somewhere deeper with a traceback or guessing around it.
"""

from __future__ import annotations

from typing import Any

from tidegate.errors import TidegateError
from tidegate.text.jsonparse import parse_json


class CorruptRecord(TidegateError):
    """A stored record is not what the store writes (malformed JSON, a field of the wrong
    type, a status it never writes). Named in one line, exit 1; never guessed around."""

    exit_code = 1


def stored_json(value: object, what: str) -> Any:
    """Stored JSON text parsed, or ``CorruptRecord`` naming ``what`` holds it."""
    if not isinstance(value, str | bytes):
        raise CorruptRecord(f"{what} is not JSON text (it holds a {type(value).__name__})")
    try:
        return parse_json(value)
    except ValueError as exc:
        raise CorruptRecord(f"{what} is not valid JSON ({exc})") from exc
