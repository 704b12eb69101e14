"""Redaction before anything is stored: a re-export of ``tidegate.text.sanitize``, the one
sanitiser of the project (kept so that the store's callers keep their import), and
``Redactor``, the same redaction remembered across the checkpoints of a session."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from tidegate.store.canonical import canonical_json
from tidegate.text.sanitize import OMITTED_REASONING, REDACTED, redact, redact_value

_PLAIN, _SECRET, _REASONING = 0, 1, 2


class Redactor:
    """``redact_value`` for states that repeat: each checkpoint of a session holds mostly
    the text the one before held, and the regular expressions of ``redact`` dominated a
    checkpoint write. Texts and key names are remembered (a bounded memo), so only new
    text is searched. The walk is ``redact_value``'s: per key, what a lone value under it
    becomes is asked of ``redact_value`` itself (reasoning omitted, secret text replaced),
    so the rules stay in ``tidegate.text.sanitize``; a test keeps the two equal."""

    def __init__(self, limit: int = 4096) -> None:
        self._limit = limit
        self._texts: dict[str, str] = {}
        self._keys: dict[str, int] = {}
        self._odd = False

    def __call__(self, value: object) -> object:
        shape = type(value)
        if shape is str:
            return self._text(value)  # type: ignore[arg-type]
        if shape is int or shape is bool or value is None:
            return value
        if shape is list:
            return [self(item) for item in value]  # type: ignore[attr-defined]
        if shape is dict or isinstance(value, Mapping):
            return self._mapping(value)  # type: ignore[arg-type]
        if isinstance(value, str):
            return self._text(value)
        if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
            return [self(item) for item in value]
        self._odd = True  # a float or another non-JSON value: see ``canonical``
        return value

    def canonical(self, value: object) -> bytes:
        """``canonical_json`` of the redacted ``value``, without its separate type walk
        when this walk met only JSON types (else through it, for its error)."""
        self._odd = False
        redacted = self(value)
        if self._odd:
            return canonical_json(redacted)
        return json.dumps(
            redacted, sort_keys=True, separators=(",", ":"), ensure_ascii=True
        ).encode("ascii")

    def _mapping(self, value: Mapping[object, object]) -> dict[str, object]:
        out: dict[str, object] = {}
        for key, item in value.items():
            name = key if type(key) is str else str(key)
            kind = self._keys.get(name)
            if kind is None:
                kind = self._key(name)
            if kind == _REASONING:
                out[name] = OMITTED_REASONING
            elif kind == _SECRET and isinstance(item, str) and item:
                out[name] = REDACTED
            else:
                out[name] = self(item)
        return out

    def _text(self, text: str) -> str:
        done = self._texts.get(text)
        if done is None:
            if len(self._texts) >= self._limit:
                self._texts.clear()
            done = self._texts[text] = redact(text)
        return done

    def _key(self, name: str) -> int:
        kind = self._keys.get(name)
        if kind is None:
            probe = redact_value({name: "x"})
            assert isinstance(probe, dict)
            seen = probe[name]
            kind = (
                _REASONING if seen == OMITTED_REASONING else _SECRET if seen == REDACTED else _PLAIN
            )
            if len(self._keys) >= self._limit:
                self._keys.clear()
            self._keys[name] = kind
        return kind
