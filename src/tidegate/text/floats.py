"""Exact, canonical floats in JSON documents that are hashed (checkpoints, records).

JSON writers disagree on how to print a float, so a hashed document stores every float as
``{"$float": repr(value)}`` and turns it back on reading. This module imports nothing of
tidegate's, so both the engine and the store can use it without an import cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def encode_floats(value: Any) -> Any:
    """A copy of ``value`` with every float as ``{"$float": repr}`` (exact and canonical)."""
    if isinstance(value, float):
        return {"$float": repr(value)}
    if isinstance(value, Mapping):
        return {str(k): encode_floats(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [encode_floats(v) for v in value]
    return value


def decode_floats(value: Any) -> Any:
    """The inverse of ``encode_floats``."""
    if isinstance(value, Mapping):
        if set(value) == {"$float"}:
            return float(value["$float"])
        return {k: decode_floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_floats(v) for v in value]
    return value
