"""From ``--model openai:MODEL`` (or ``anthropic:MODEL``, ``scripted:PATH``), a settings
mapping and the environment to a working ``ModelPort``.

Settings (all optional; unknown keys are refused)::

    base_url = "http://127.0.0.1:8080/v1"   # else OPENAI_BASE_URL / ANTHROPIC_BASE_URL
    api_key_env = "MY_KEY_VAR"              # else OPENAI_API_KEY / ANTHROPIC_API_KEY
    timeout_s = 600                         # per read; streams reset it on every chunk
    context_window = 32768                  # override the catalog
    max_output_tokens = 4096
    streaming = true
    prompt_caching = true                   # default: Anthropic and api.openai.com
    tool_calling = true
    retry = {max_attempts = 6, base_delay_s = 0.5, max_delay_s = 30, deadline_s = 120}
    price = {input = 3, output = 15, cached_input = 0.3, cache_write = 3.75}  # USD / 1M

A key itself is never read from settings — settings files get committed — only the name
of the variable that holds it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tidegate.models.catalog import DEFAULT_LIMITS, Limits, limits_for
from tidegate.models.errors import ModelConfigError
from tidegate.models.network import check_network_allowed, endpoint_of
from tidegate.models.ports import ModelIdentity, ModelPort
from tidegate.models.pricing import ModelPricing, Price, pricing_for
from tidegate.models.provider import ProviderConnection
from tidegate.models.retry import RetryPolicy

_DEFAULTS = {
    "openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL", "https://api.openai.com/v1"),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
}
_SPEC_HELP = "--model takes openai:MODEL, anthropic:MODEL or scripted:PATH"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RetrySettings(_Strict):
    max_attempts: int = Field(default=6, ge=1, le=50)
    base_delay_s: float = Field(default=0.5, ge=0)
    max_delay_s: float = Field(default=30.0, ge=0)
    deadline_s: float = Field(default=120.0, gt=0)
    jitter: float = Field(default=0.5, ge=0, le=1)

    def policy(self) -> RetryPolicy:
        return RetryPolicy(**self.model_dump())


class PriceSettings(_Strict):
    input: Decimal = Field(ge=0)
    output: Decimal = Field(ge=0)
    cached_input: Decimal | None = Field(default=None, ge=0)
    cache_write: Decimal | None = Field(default=None, ge=0)


class ModelSettings(_Strict):
    base_url: str | None = None
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    timeout_s: float = Field(default=600.0, gt=0)
    context_window: int | None = Field(default=None, ge=256)
    max_output_tokens: int | None = Field(default=None, ge=1)
    streaming: bool = True
    prompt_caching: bool | None = None
    tool_calling: bool = True
    retry: RetrySettings = RetrySettings()
    price: PriceSettings | None = None


def parse_settings(raw: Mapping[str, object] | None) -> ModelSettings:
    """Validate a settings mapping; one-line ``ModelConfigError`` on the first problem."""
    data = dict(raw or {})
    if "api_key" in data:
        raise ModelConfigError(
            "model settings must not contain an API key; name its variable in api_key_env"
        )
    try:
        return ModelSettings.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise ModelConfigError(f"model settings: {where}: {first['msg']}") from None


def resolve_model(
    spec: str,
    settings: Mapping[str, object] | None = None,
    env: Mapping[str, str] | None = None,
) -> ModelPort:
    """The model port for ``spec``. Raises ``ModelConfigError`` (a ``UsageError``) for a
    bad spec, bad settings, a missing key, or a forbidden non-loopback endpoint. Sends no
    request."""
    env = os.environ if env is None else env
    provider, sep, name = spec.partition(":")
    if not sep or not name or provider not in {"openai", "anthropic", "scripted"}:
        raise ModelConfigError(f"{_SPEC_HELP}, got {spec!r}")
    parsed = parse_settings(settings)
    if provider == "scripted":
        from tidegate.models.scripted import SCRIPT_RETRY, ScriptedModel

        retry = parsed.retry.policy() if "retry" in parsed.model_fields_set else SCRIPT_RETRY
        return ScriptedModel.load(Path(name), retry)
    connection = _connection(provider, name, parsed, env)
    if provider == "openai":
        from tidegate.models.openai_compat import OpenAICompatModel

        return OpenAICompatModel(connection, env)
    from tidegate.models.anthropic import AnthropicModel

    return AnthropicModel(connection, env)


def resolve_pricing(
    identity: ModelIdentity, settings: Mapping[str, object] | None = None
) -> ModelPricing:
    """The price in force for ``identity``: settings first, then the built-in table."""
    price = parse_settings(settings).price
    override = None if price is None else Price(**price.model_dump())
    return pricing_for(identity, override)


def _connection(
    provider: str, model: str, settings: ModelSettings, env: Mapping[str, str]
) -> ProviderConnection:
    key_var, url_var, default_url = _DEFAULTS[provider]
    base_url = settings.base_url or env.get(url_var) or default_url
    endpoint = endpoint_of(base_url)
    check_network_allowed(base_url, env)
    key_var = settings.api_key_env or key_var
    api_key = env.get(key_var, "")
    if not api_key:
        raise ModelConfigError(
            f"{provider}: set {key_var} to the API key (any value will do for a local "
            "server that does not check it)"
        )
    limits, source = _limits(provider, model, settings)
    official = endpoint in {"api.openai.com", "api.anthropic.com"}
    caching = settings.prompt_caching
    if caching is None:
        caching = provider == "anthropic" or official
    return ProviderConnection(
        model=model,
        base_url=base_url,
        api_key=api_key,
        limits=limits,
        capability_source=source,
        timeout_s=settings.timeout_s,
        retry=settings.retry.policy(),
        streaming=settings.streaming,
        prompt_caching=caching,
        tool_calling=settings.tool_calling,
    )


def _limits(provider: str, model: str, settings: ModelSettings) -> tuple[Limits, str]:
    known = limits_for(provider, model)
    base = known or DEFAULT_LIMITS
    source = "catalog" if known else "default"
    if settings.context_window is None and settings.max_output_tokens is None:
        return base, source
    return (
        Limits(
            settings.context_window or base.context_window,
            settings.max_output_tokens or base.max_output_tokens,
        ),
        "settings",
    )
