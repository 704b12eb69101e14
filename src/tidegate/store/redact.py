"""Redaction of secret-shaped values, and omission of model reasoning, before anything is
stored. ``redact`` works on text; ``redact_value`` walks JSON-shaped data."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

REDACTED = "[REDACTED]"
OMITTED_REASONING = "[omitted: model reasoning is not stored]"

# Specific shapes first, then NAME=value / NAME: value for names that say "secret".
_SHAPES = (
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/-]{16,}=*"),
    re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}"),  # provider API keys
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),  # GitHub tokens
    re.compile(r"(?<=://)[^/\s:@]+:[^/\s@]+(?=@)"),  # user:password@ in URLs
)
_SECRET_NAME = r"[A-Z0-9_.-]*(?:api[_-]?key|token|secret|passw(?:or)?d|credential)[A-Z0-9_.-]*"
_VALUE = r"('[^']*'|\"[^\"]*\"|[^\s'\"]{4,})"
# NAME=value and NAME: value anywhere; "--name value" only for command-line flags, so that
# prose such as "the token expired" is left alone.
_NAMED = re.compile(rf"(?i)\b({_SECRET_NAME})(\s*[=:]\s*){_VALUE}")
_FLAG = re.compile(rf"(?i)(--{_SECRET_NAME})(\s+){_VALUE}")
# A key that names a secret: an identifier, not a file name such as "token.py".
_SECRET_KEY = re.compile(
    r"(?i)^[A-Z0-9_-]*(?:api[_-]?key|token|secret|passw(?:or)?d|credential)[A-Z0-9_-]*$"
)
# Keys under which a model's private reasoning would travel: never persisted.
_REASONING_KEYS = frozenset(
    {"reasoning", "reasoning_content", "thinking", "chain_of_thought", "thoughts"}
)


# Every pattern above needs one of these; most text has none, and one search is cheap.
_TRIGGER = re.compile(
    r"(?i)bearer|[spr]k-|gh[pousr]_|://|api[_-]?key|token|secret|passw|credential"
)


def redact(text: str) -> str:
    if not _TRIGGER.search(text):
        return text
    for shape in _SHAPES:
        text = shape.sub(REDACTED, text)
    for named in (_NAMED, _FLAG):
        text = named.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
    return text


def redact_value(value: object) -> object:
    """A redacted copy of JSON-shaped ``value``: every string is redacted, a string under a
    secret-named key (``api_key``, ``password``...) is replaced whole, and reasoning keys
    are emptied. Numbers under secret-looking names (``max_tokens``) are kept."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        out: dict[str, object] = {}
        for key, item in value.items():
            name = str(key)
            if name.lower() in _REASONING_KEYS:
                out[name] = OMITTED_REASONING
            elif isinstance(item, str) and _SECRET_KEY.match(name):
                out[name] = REDACTED
            else:
                out[name] = redact_value(item)
        return out
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        return [redact_value(item) for item in value]
    return value
