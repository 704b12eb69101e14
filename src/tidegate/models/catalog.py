"""Published limits of a few well-known models, so the identity can state them.

A model not listed here gets conservative defaults labelled ``default`` in the identity's
``capability_source``; operators override either through settings (``context_window``,
``max_output_tokens``). Dated snapshots (``gpt-4o-2024-08-06``,
``claude-sonnet-4-5-20250929``) match their family by the longest hyphen-bounded prefix.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

import msgspec

T = TypeVar("T")


class Limits(msgspec.Struct, frozen=True):
    context_window: int
    max_output_tokens: int


DEFAULT_LIMITS = Limits(context_window=8192, max_output_tokens=4096)

LIMITS: dict[str, dict[str, Limits]] = {
    "openai": {
        "gpt-4o": Limits(128_000, 16_384),
        "gpt-4o-mini": Limits(128_000, 16_384),
        "gpt-4.1": Limits(1_047_576, 32_768),
        "gpt-4.1-mini": Limits(1_047_576, 32_768),
        "gpt-4.1-nano": Limits(1_047_576, 32_768),
        "o3": Limits(200_000, 100_000),
        "o4-mini": Limits(200_000, 100_000),
        "gpt-5": Limits(400_000, 128_000),
        "gpt-5-mini": Limits(400_000, 128_000),
        "gpt-5-nano": Limits(400_000, 128_000),
    },
    "anthropic": {
        "claude-opus-4": Limits(200_000, 32_000),
        "claude-opus-4-1": Limits(200_000, 32_000),
        "claude-sonnet-4": Limits(200_000, 64_000),
        "claude-sonnet-4-5": Limits(200_000, 64_000),
        "claude-haiku-4-5": Limits(200_000, 64_000),
        "claude-3-5-haiku": Limits(200_000, 8_192),
    },
}


def lookup(table: Mapping[str, T], model: str) -> T | None:
    """Exact name, else the longest key that prefixes ``model`` up to a hyphen."""
    if model in table:
        return table[model]
    best: str | None = None
    for key in table:
        if model.startswith(key + "-") and (best is None or len(key) > len(best)):
            best = key
    return table[best] if best is not None else None


def limits_for(provider: str, model: str) -> Limits | None:
    return lookup(LIMITS.get(provider, {}), model)
