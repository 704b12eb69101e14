"""Matrix 5 (model half): a cancelled model request stops promptly and cuts the wire.

Against real OpenAI- and Anthropic-protocol servers on 127.0.0.1, through the official
SDKs: setting the caller's cancel event while the adapter is blocked — mid-stream, before
the response headers, or in a retry backoff — raises ``ModelCancelled`` within a fraction
of a second, the server sees the client hang up, and nothing is retried. The scripted
double obeys the same contract.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.integration.models.conftest import FAST_RETRY, KEY, MODELS, env_for
from tests.integration.models.servers import (
    LoopbackServer,
    Reply,
    an_error,
    an_stream,
    oa_error,
    oa_text_stream,
)
from tidegate.models import (
    ModelCancelled,
    ModelPort,
    ModelRequest,
    TextDelta,
    UserMessage,
    resolve_model,
)

PROMPT = ModelRequest(system=("sys",), messages=(UserMessage("write a long essay"),))
PROMPT_LIMIT_S = 0.5


def stalling_stream(protocol: str) -> Reply:
    events = (
        oa_text_stream("first", "never") if protocol == "openai" else an_stream(["first", "never"])
    )
    first_delta = 2 if protocol == "openai" else 4  # role chunk + delta / start, ping, block, delta
    return Reply(sse=events, stall_after=first_delta)


@contextmanager
def model_at(
    protocol: str, *replies: Reply, retry: dict[str, float] | None = None, streaming: bool = True
) -> Iterator[tuple[LoopbackServer, ModelPort]]:
    with LoopbackServer(replies, key=KEY, key_header="authorization") as server:
        # A short read timeout turns a cut that never happens into a failure, not a hang.
        settings: dict[str, object] = {
            "retry": retry or FAST_RETRY,
            "timeout_s": 5.0,
            "streaming": streaming,
        }
        model = resolve_model(f"{protocol}:{MODELS[protocol]}", settings, env_for(protocol, server))
        try:
            yield server, model
        finally:
            model.close()


def cancel_after(
    event: threading.Event, delay: float, after: Callable[[], bool] | None = None
) -> list[float]:
    """Set ``event`` ``delay`` seconds after ``after()`` first holds (at once: after start)."""
    fired: list[float] = []

    def fire() -> None:
        give_up = time.monotonic() + 30
        while after is not None and not after() and time.monotonic() < give_up:
            time.sleep(0.01)
        time.sleep(delay)
        fired.append(time.monotonic())
        event.set()

    threading.Thread(target=fire, daemon=True).start()
    return fired


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_cancel_mid_stream_cuts_the_connection(protocol: str) -> None:
    with model_at(protocol, stalling_stream(protocol)) as (server, model):
        cancel = threading.Event()
        seen: list[str] = []
        fired: list[float] = []
        with pytest.raises(ModelCancelled):
            for event in model.stream(PROMPT, cancel):
                if isinstance(event, TextDelta):
                    seen.append(event.text)
                    fired = cancel_after(cancel, 0.1)  # the consumer blocks in the next read
        raised = time.monotonic()
        assert seen == ["first"]
        assert raised - fired[0] < PROMPT_LIMIT_S
        assert server.client_gone.wait(PROMPT_LIMIT_S)
        assert (
            server.client_gone_at is not None and server.client_gone_at - fired[0] < PROMPT_LIMIT_S
        )
        assert len(server.received) == 1


@pytest.mark.parametrize("streaming", [True, False], ids=["streaming", "whole"])
@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_cancel_before_the_response_starts_cuts_the_connection(
    protocol: str, streaming: bool
) -> None:
    """A non-streamed call waits for its headers during the whole generation: the cut
    must work there too."""
    with model_at(protocol, Reply(stall_before_headers=True), streaming=streaming) as (
        server,
        model,
    ):
        cancel = threading.Event()
        fired = cancel_after(cancel, 0.15)
        with pytest.raises(ModelCancelled):
            list(model.stream(PROMPT, cancel))
        assert time.monotonic() - fired[0] < PROMPT_LIMIT_S
        assert server.client_gone.wait(PROMPT_LIMIT_S)
        assert len(server.received) == 1


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_cancel_during_backoff_stops_retrying(protocol: str) -> None:
    busy = (
        oa_error(429, "busy", "rate_limit_error", headers={"retry-after": "20"})
        if protocol == "openai"
        else an_error(429, "rate_limit_error", "busy", headers={"retry-after": "20"})
    )
    slow_retry = {"max_attempts": 3, "base_delay_s": 0.01, "max_delay_s": 0.05, "deadline_s": 60.0}
    with model_at(protocol, busy, retry=slow_retry) as (server, model):
        cancel = threading.Event()
        # cancelled once the first request was answered (429), so during the backoff
        # whatever the machine's load
        fired = cancel_after(cancel, 0.2, after=lambda: len(server.received) >= 1)
        with pytest.raises(ModelCancelled, match="backing off"):
            list(model.stream(PROMPT, cancel))
        assert time.monotonic() - fired[0] < PROMPT_LIMIT_S
        assert len(server.received) == 1


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_an_already_cancelled_request_is_never_sent(protocol: str) -> None:
    with model_at(protocol, stalling_stream(protocol)) as (server, model):
        cancel = threading.Event()
        cancel.set()
        with pytest.raises(ModelCancelled):
            list(model.stream(PROMPT, cancel))
        assert server.received == []


def test_the_scripted_double_honours_cancel(tmp_path: Path) -> None:
    script = tmp_path / "turns.json"
    script.write_text('{"turns": [{"text": ["first", "never"], "stall_s": 30}]}')
    model = resolve_model(f"scripted:{script}", None, {})
    cancel = threading.Event()
    fired = cancel_after(cancel, 0.1)
    seen: list[str] = []
    with pytest.raises(ModelCancelled):
        for event in model.stream(PROMPT, cancel):
            if isinstance(event, TextDelta):
                seen.append(event.text)
    assert seen == ["first"] and time.monotonic() - fired[0] < PROMPT_LIMIT_S
