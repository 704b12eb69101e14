"""Fixtures: scripted loopback servers and model ports wired to them through
``resolve_model`` (the same path the CLI will use), with a fast retry policy."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.integration.models.servers import LoopbackServer, Reply
from tidegate.models import ModelPort, resolve_model

KEY = "sk-tidegate-test-0123456789abcdefSECRET"
FAST_RETRY = {"max_attempts": 4, "base_delay_s": 0.01, "max_delay_s": 0.05, "deadline_s": 3.0}
MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}

Serve = Callable[..., LoopbackServer]
Connect = Callable[..., ModelPort]


@pytest.fixture
def serve() -> Iterator[Serve]:
    started: list[LoopbackServer] = []

    def start(protocol: str, *replies: Reply, key: str = KEY) -> LoopbackServer:
        # Both SDKs send the key as "Authorization: Bearer" (anthropic 2.x does too).
        server = LoopbackServer(replies, key=key, key_header="authorization").__enter__()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def env_for(protocol: str, server: LoopbackServer, key: str = KEY) -> dict[str, str]:
    if protocol == "openai":
        return {"OPENAI_API_KEY": key, "OPENAI_BASE_URL": server.url + "/v1"}
    return {"ANTHROPIC_API_KEY": key, "ANTHROPIC_BASE_URL": server.url}


@pytest.fixture
def connect() -> Iterator[Connect]:
    made: list[ModelPort] = []

    def make(
        protocol: str,
        server: LoopbackServer,
        settings: dict[str, object] | None = None,
        key: str = KEY,
    ) -> ModelPort:
        merged: dict[str, object] = {"retry": dict(FAST_RETRY), **(settings or {})}
        model = resolve_model(
            f"{protocol}:{MODELS[protocol]}", merged, env_for(protocol, server, key)
        )
        made.append(model)
        return model

    yield make
    for model in made:
        model.close()
