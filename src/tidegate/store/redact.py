"""Redaction of secret-shaped values before anything is stored."""

from __future__ import annotations

import re

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


def redact(text: str) -> str:
    for shape in _SHAPES:
        text = shape.sub("[REDACTED]", text)
    for named in (_NAMED, _FLAG):
        text = named.sub(lambda m: f"{m.group(1)}{m.group(2)}[REDACTED]", text)
    return text
