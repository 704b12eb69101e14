"""Canonical JSON: one byte string per value, so hashes and signatures are reproducible.

Keys are sorted, there is no insignificant whitespace, and everything outside ASCII is
escaped (lone surrogates from undecodable file names included). Floats are refused: two
writers can print the same float differently, so durations and sizes are stored as
integers (milliseconds, microseconds, bytes) instead.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence


class NotCanonical(TypeError):
    """The value holds something canonical JSON does not allow (a float, a non-str key...)."""


def canonical_json(value: object) -> bytes:
    _check(value, "$")
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    ).encode("ascii")


def sha256_digest(data: bytes) -> str:
    """``sha256:<hex>`` of ``data``."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def value_digest(value: object) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``value``."""
    return sha256_digest(canonical_json(value))


def _check(value: object, where: str) -> None:
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return
    if kind is dict:  # the common case, without the generic checks below
        for key, item in value.items():  # type: ignore[attr-defined]
            if type(key) is not str:
                raise NotCanonical(f"{where}: key {key!r} is not a string")
            _check(item, where + "." + key)
        return
    if kind is list:
        for i, item in enumerate(value):  # type: ignore[arg-type]
            _check(item, f"{where}[{i}]")
        return
    if isinstance(value, bool | int | str):
        return
    if isinstance(value, float):
        raise NotCanonical(f"{where}: floats are not canonical; store an integer instead")
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise NotCanonical(f"{where}: key {key!r} is not a string")
            _check(item, f"{where}.{key}")
        return
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        for i, item in enumerate(value):
            _check(item, f"{where}[{i}]")
        return
    raise NotCanonical(f"{where}: {type(value).__name__} is not JSON")
