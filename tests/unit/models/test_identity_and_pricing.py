"""Model identity (stable hash, probe time excluded) and the price table behind the budget
guard."""

from __future__ import annotations

from decimal import Decimal

import pytest
from msgspec.structs import replace

from tidegate.models import ModelIdentity, Price, Usage
from tidegate.models.catalog import limits_for
from tidegate.models.pricing import pricing_for

IDENTITY = ModelIdentity(
    provider="anthropic",
    model="claude-sonnet-4-5-20250929",
    endpoint="api.anthropic.com",
    context_window=200_000,
    max_output_tokens=64_000,
    tool_calling=True,
    streaming=True,
    prompt_caching=True,
    token_counting="estimate:utf8-bytes/3",
    capability_source="catalog",
    probed_at="2026-11-30T10:00:00+00:00",
)


def test_a_fresh_probe_time_keeps_the_identity_hash() -> None:
    later = IDENTITY.probed("2026-11-30T11:00:00+00:00")
    assert later.identity_hash == IDENTITY.identity_hash
    assert later.to_json()["probed_at"] != IDENTITY.to_json()["probed_at"]
    assert later.to_json()["identity_hash"] == IDENTITY.identity_hash


@pytest.mark.parametrize(
    "change",
    [
        {"model": "claude-haiku-4-5"},
        {"endpoint": "127.0.0.1:8080"},
        {"context_window": 100_000},
        {"tool_calling": False},
        {"prompt_caching": False},
        {"token_counting": "tiktoken:o200k_base"},
    ],
)
def test_every_semantic_field_moves_the_hash(change: dict[str, object]) -> None:
    assert replace(IDENTITY, **change).identity_hash != IDENTITY.identity_hash  # type: ignore[arg-type]


def test_catalog_matches_dated_snapshots_by_longest_family() -> None:
    assert limits_for("openai", "gpt-4o-mini-2024-07-18") == limits_for("openai", "gpt-4o-mini")
    assert limits_for("anthropic", "claude-sonnet-4-5-20250929") == limits_for(
        "anthropic", "claude-sonnet-4-5"
    )
    assert limits_for("openai", "gpt-4oo") is None
    assert limits_for("vllm", "gpt-4o") is None


def test_cost_counts_cached_and_written_tokens_at_their_own_rates() -> None:
    pricing = pricing_for(IDENTITY)
    assert pricing.source.startswith("table:")
    usage = Usage(
        input_tokens=1_000_000 + 200_000 + 100_000,
        output_tokens=10_000,
        cached_input_tokens=200_000,
        cache_write_tokens=100_000,
    )
    # 1M plain * 3 + 0.2M * 0.30 + 0.1M * 3.75 + 0.01M * 15
    assert pricing.cost(usage) == Decimal("3") + Decimal("0.06") + Decimal("0.375") + Decimal(
        "0.15"
    )


def test_unknown_models_have_unknown_cost_not_zero() -> None:
    local = replace(IDENTITY, provider="openai", model="gemma-3-270m", endpoint="127.0.0.1:8080")
    pricing = pricing_for(local)
    assert pricing.cost(Usage(10, 10)) is None
    assert "unknown" in pricing.source and "openai:gemma-3-270m" in pricing.source


def test_a_settings_price_overrides_the_table() -> None:
    price = Price(Decimal("1"), Decimal("2"))
    pricing = pricing_for(IDENTITY, price)
    assert pricing.source == "settings"
    assert pricing.cost(Usage(500_000, 250_000, cached_input_tokens=100_000)) == Decimal("1")
