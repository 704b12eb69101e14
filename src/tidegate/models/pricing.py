"""What a response cost, for the budget guard.

Prices are USD per million tokens. The built-in table covers a few OpenAI and Anthropic
models at list prices as of ``TABLE_DATE``; settings override it (``price`` in the model
settings), which is also how local or scripted models get a price. A model with no price
has an unknown cost — ``cost()`` returns None and ``source`` says why — never zero.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

import msgspec

from tidegate.models.catalog import lookup
from tidegate.models.events import Usage
from tidegate.models.ports import ModelIdentity

TABLE_DATE = "2025-08"
_MILLION = Decimal(1_000_000)


class Price(msgspec.Struct, frozen=True):
    """USD per million tokens. Cached reads and cache writes default to the input price."""

    input: Decimal
    output: Decimal
    cached_input: Decimal | None = None
    cache_write: Decimal | None = None

    def cost(self, usage: Usage) -> Decimal:
        cached = usage.cached_input_tokens
        written = usage.cache_write_tokens
        plain = max(0, usage.input_tokens - cached - written)
        cached_rate = self.input if self.cached_input is None else self.cached_input
        write_rate = self.input if self.cache_write is None else self.cache_write
        total = (
            plain * self.input
            + cached * cached_rate
            + written * write_rate
            + usage.output_tokens * self.output
        )
        return total / _MILLION


def _p(inp: str, out: str, cached: str, write: str | None = None) -> Price:
    return Price(Decimal(inp), Decimal(out), Decimal(cached), Decimal(write) if write else None)


PRICES: dict[str, dict[str, Price]] = {
    "openai": {
        "gpt-4o": _p("2.50", "10.00", "1.25"),
        "gpt-4o-mini": _p("0.15", "0.60", "0.075"),
        "gpt-4.1": _p("2.00", "8.00", "0.50"),
        "gpt-4.1-mini": _p("0.40", "1.60", "0.10"),
        "gpt-4.1-nano": _p("0.10", "0.40", "0.025"),
        "o3": _p("2.00", "8.00", "0.50"),
        "o4-mini": _p("1.10", "4.40", "0.275"),
        "gpt-5": _p("1.25", "10.00", "0.125"),
        "gpt-5-mini": _p("0.25", "2.00", "0.025"),
        "gpt-5-nano": _p("0.05", "0.40", "0.005"),
    },
    "anthropic": {
        "claude-opus-4": _p("15", "75", "1.50", "18.75"),
        "claude-opus-4-1": _p("15", "75", "1.50", "18.75"),
        "claude-sonnet-4": _p("3", "15", "0.30", "3.75"),
        "claude-sonnet-4-5": _p("3", "15", "0.30", "3.75"),
        "claude-haiku-4-5": _p("1", "5", "0.10", "1.25"),
        "claude-3-5-haiku": _p("0.80", "4", "0.08", "1.00"),
    },
}


class ModelPricing(msgspec.Struct, frozen=True):
    """The price in force for one model and where it came from."""

    price: Price | None
    source: str

    def cost(self, usage: Usage) -> Decimal | None:
        """USD for ``usage``, or None when the price is unknown."""
        return None if self.price is None else self.price.cost(usage)


def price_from_settings(raw: Mapping[str, object]) -> Price:
    def dec(key: str) -> Decimal | None:
        value = raw.get(key)
        return None if value is None else Decimal(str(value))

    inp, out = dec("input"), dec("output")
    if inp is None or out is None:
        raise ValueError("a price needs both 'input' and 'output' (USD per million tokens)")
    return Price(inp, out, dec("cached_input"), dec("cache_write"))


def pricing_for(identity: ModelIdentity, override: Price | None = None) -> ModelPricing:
    if override is not None:
        return ModelPricing(override, "settings")
    price = lookup(PRICES.get(identity.provider, {}), identity.model)
    if price is not None:
        return ModelPricing(price, f"table:{TABLE_DATE}")
    return ModelPricing(None, f"unknown: no price for {identity.label}; set one in settings")
