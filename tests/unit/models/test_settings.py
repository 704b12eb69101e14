"""``resolve_model``: spec and settings validation, credentials from the environment only,
capability sources, and the switch that forbids real model requests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tidegate.errors import UsageError
from tidegate.models import (
    FORBID_ENV,
    ModelConfigError,
    ModelNetworkForbidden,
    ModelRequest,
    UserMessage,
    resolve_model,
    resolve_pricing,
)
from tidegate.models.network import endpoint_of, is_loopback

KEY = "sk-unit-test-abcdefghijklmnop"
LOCAL = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}


def test_the_suite_runs_with_real_model_requests_forbidden() -> None:
    assert os.environ[FORBID_ENV] == "1"


@pytest.mark.parametrize(
    "spec",
    ["", "gpt-4o", "openai:", "mistral:large", "scripted"],
)
def test_bad_specs_are_usage_errors(spec: str) -> None:
    with pytest.raises(ModelConfigError, match="openai:MODEL") as caught:
        resolve_model(spec, None, LOCAL)
    assert isinstance(caught.value, UsageError)


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({"api_key": KEY}, "must not contain an API key"),
        ({"temprature": 0.2}, "temprature"),
        ({"retry": {"max_attempts": 0}}, "retry.max_attempts"),
        ({"api_key_env": "not a name"}, "api_key_env"),
        ({"price": {"input": 1}}, "price.output"),
    ],
)
def test_bad_settings_are_refused_in_one_line(settings: dict[str, object], expected: str) -> None:
    with pytest.raises(ModelConfigError, match=expected) as caught:
        resolve_model("openai:gpt-4o", settings, LOCAL)
    assert "\n" not in str(caught.value) and KEY not in str(caught.value)


def test_a_missing_key_names_the_variable() -> None:
    with pytest.raises(ModelConfigError, match="set OPENAI_API_KEY"):
        resolve_model("openai:gpt-4o", None, {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    with pytest.raises(ModelConfigError, match="set MY_KEY"):
        resolve_model(
            "anthropic:claude-haiku-4-5",
            {"api_key_env": "MY_KEY", "base_url": "http://localhost:9"},
            {},
        )


def test_the_switch_refuses_real_endpoints_and_allows_loopback() -> None:
    env = {"OPENAI_API_KEY": KEY, FORBID_ENV: "1"}
    with pytest.raises(ModelNetworkForbidden, match=r"api\.openai\.com"):
        resolve_model("openai:gpt-4o", None, env)
    with pytest.raises(ModelNetworkForbidden, match=r"10\.0\.0\.5"):
        resolve_model("openai:gpt-4o", {"base_url": "http://10.0.0.5:8000/v1"}, env)
    for url in ("http://127.0.0.1:8000/v1", "http://localhost:1/v1", "http://[::1]:8000/v1"):
        resolve_model("openai:gpt-4o", {"base_url": url}, env).close()


def test_the_switch_also_guards_each_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(FORBID_ENV)
    model = resolve_model("anthropic:claude-haiku-4-5", None, {"ANTHROPIC_API_KEY": KEY})
    try:
        assert model.identity.endpoint == "api.anthropic.com"  # built: no request yet
        monkeypatch.setenv(FORBID_ENV, "1")
        with pytest.raises(ModelNetworkForbidden):
            model.stream(ModelRequest(system=(), messages=(UserMessage("hi"),)))
    finally:
        model.close()


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://user:pw@127.0.0.1:8000/v1", "must not contain credentials"),
        ("http://127.0.0.1:8000/v1?key=abc", "query string"),
        ("ftp://127.0.0.1/v1", "http"),
    ],
)
def test_base_urls_cannot_carry_credentials(url: str, expected: str) -> None:
    with pytest.raises(ModelConfigError, match=expected) as caught:
        resolve_model("openai:gpt-4o", {"base_url": url}, {"OPENAI_API_KEY": KEY})
    assert "pw" not in str(caught.value) and "abc" not in str(caught.value)


def test_endpoints_and_loopback_detection() -> None:
    assert endpoint_of("https://api.openai.com/v1") == "api.openai.com"
    assert endpoint_of("http://[::1]:8080/v1") == "[::1]:8080"
    assert is_loopback("http://127.0.0.2:1") and is_loopback("http://LOCALHOST:1")
    assert not is_loopback("http://localhost.example.com") and not is_loopback("http://0.0.0.0:1")


def test_identity_states_where_limits_came_from() -> None:
    known = resolve_model("openai:gpt-4o-mini", None, LOCAL)
    unknown = resolve_model("openai:my-local-llama", None, LOCAL)
    tuned = resolve_model("openai:my-local-llama", {"context_window": 2048}, LOCAL)
    try:
        assert (known.identity.capability_source, known.identity.context_window) == (
            "catalog",
            128_000,
        )
        assert (unknown.identity.capability_source, unknown.identity.context_window) == (
            "default",
            8192,
        )
        assert (tuned.identity.capability_source, tuned.identity.context_window) == (
            "settings",
            2048,
        )
        assert known.identity.endpoint == "127.0.0.1:9" and known.identity.prompt_caching is False
        assert known.identity.contract_double is False and known.identity.probed_at
        assert KEY not in repr(known) and KEY not in str(known.identity.to_json())
    finally:
        for m in (known, unknown, tuned):
            m.close()


def test_anthropic_caches_prompts_by_default() -> None:
    model = resolve_model(
        "anthropic:claude-haiku-4-5",
        None,
        {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"},
    )
    try:
        assert model.identity.prompt_caching and model.identity.provider == "anthropic"
    finally:
        model.close()


def test_tools_are_refused_when_tool_calling_is_off() -> None:
    from tidegate.errors import CapabilityMismatch
    from tidegate.models import ToolSpec

    model = resolve_model("openai:my-llama", {"tool_calling": False}, LOCAL)
    try:
        request = ModelRequest(
            system=(), messages=(UserMessage("hi"),), tools=(ToolSpec("workspace.read", "Read."),)
        )
        with pytest.raises(CapabilityMismatch):
            model.stream(request)
    finally:
        model.close()


def test_scripted_specs_and_pricing_from_settings(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text('{"model": "demo", "turns": [{"text": "hi"}]}')
    model = resolve_model(f"scripted:{script}", None, {})
    assert model.identity.provider == "scripted" and model.identity.contract_double
    assert resolve_pricing(model.identity).cost is not None
    assert resolve_pricing(model.identity).price is None
    priced = resolve_pricing(model.identity, {"price": {"input": 2, "output": 4}})
    assert priced.source == "settings" and priced.price is not None
    with pytest.raises(ModelConfigError, match="No such file"):
        resolve_model(f"scripted:{tmp_path / 'missing.json'}", None, {})
