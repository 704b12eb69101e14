"""Canonical JSON and SHA-256 digests: one spelling of every hash the prompt layer records.

Every hash is written ``sha256:<64 hex>`` so a digest can never be mistaken for another kind
of identifier. Canonical JSON sorts keys, uses no insignificant whitespace, keeps non-ASCII
text as is and refuses NaN/Infinity, so the same value always hashes the same way.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

SHA256_PREFIX = "sha256:"


def canonical_json(value: Any) -> str:
    """The one serialisation hashed anywhere in the prompt and agent layers."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def sha256_text(text: str) -> str:
    return SHA256_PREFIX + hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_json(value: Any) -> str:
    return sha256_text(canonical_json(value))


# Keys whose values describe *when* or *how fast* something was observed rather than *what*
# was observed. They are diagnostics: dropping them keeps a fresh capability probe from
# changing a hash that resume compares.
VOLATILE_KEYS = frozenset(
    {
        "probed_at",
        "probedAt",
        "checked_at",
        "checkedAt",
        "observed_at",
        "observedAt",
        "timestamp",
        "latency_ms",
        "latencyMs",
        "diagnostics",
    }
)


def semantic_projection(value: Any) -> Any:
    """``value`` without volatile diagnostic keys, recursively (mappings and lists)."""
    if isinstance(value, Mapping):
        return {
            str(key): semantic_projection(item)
            for key, item in value.items()
            if str(key) not in VOLATILE_KEYS
        }
    if isinstance(value, list | tuple):
        return [semantic_projection(item) for item in value]
    return value
