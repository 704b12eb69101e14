"""JSON text from a file, a client or a model, parsed with a bound on nesting.

``json.loads`` recurses once per level of nesting, so ``[[[[...]]]]`` 100,000 deep raises
``RecursionError`` (not the ``ValueError`` every caller handles), and a document just
under the interpreter's limit parses, then breaks whatever walks it next (the sanitiser,
``json.dumps``, a migration). :func:`parse_json` refuses anything nested deeper than
:data:`MAX_DEPTH` (pydantic's own limit for JSON) before parsing, with
:class:`JSONTooDeep`: a ``json.JSONDecodeError``, so every caller that handles malformed
JSON handles this too, in the same one line.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 200
"""Levels of arrays and objects; far beyond any record, report, script or tool call."""

_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
"""A string (skipped whole, brackets in it and all) or a bracket."""


class JSONTooDeep(json.JSONDecodeError):
    """JSON nested deeper than :data:`MAX_DEPTH`; ``pos`` is where it went too deep."""

    def __init__(self, doc: str, pos: int) -> None:
        super().__init__(f"nested deeper than {MAX_DEPTH} levels", doc, pos)


def parse_json(text: str | bytes | bytearray, **options: Any) -> Any:
    """``json.loads(text, **options)``, refusing nesting deeper than :data:`MAX_DEPTH`.

    Raises ``ValueError`` for anything that is not such JSON: ``json.JSONDecodeError``
    (:class:`JSONTooDeep` among them) or ``UnicodeDecodeError`` for bytes.
    """
    if not isinstance(text, str):
        text = bytes(text).decode(json.detect_encoding(text), "surrogatepass")
    deep = _too_deep_at(text)
    if deep is not None:
        raise JSONTooDeep(text, deep)
    try:
        return json.loads(text, **options)
    except RecursionError:  # a deep hook's own recursion; the text itself was bounded
        raise JSONTooDeep(text, 0) from None


def _too_deep_at(text: str) -> int | None:
    """Where the brackets outside strings first nest deeper than the bound, if they do."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return None  # the common case, at C speed
    depth = 0
    for token in _TOKEN.finditer(text):
        char = token.group()
        if char == "[" or char == "{":
            depth += 1
            if depth > MAX_DEPTH:
                return token.start()
        elif char == "]" or char == "}":
            depth -= 1
    return None
