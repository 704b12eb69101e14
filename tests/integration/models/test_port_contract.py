"""The contract every ``ModelPort`` passes — both SDK adapters against loopback servers
and the scripted double: the same turn gives the same ordered events and response."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.models.conftest import Connect, Serve
from tests.integration.models.servers import Reply, an_stream, oa_tool_stream
from tidegate.models import (
    ModelPort,
    ModelRequest,
    StopReason,
    ToolCall,
    ToolCallDelta,
    ToolSpec,
    UserMessage,
    check_order,
    resolve_model,
)

READ = ToolSpec("workspace.read", "Read a file.", {"type": "object", "properties": {}})
FRAGMENTS = ['{"path"', ': "calc', '.py"}']
REQUEST = ModelRequest(system=("rules",), messages=(UserMessage("fix it"),), tools=(READ,))


@pytest.fixture(params=["openai", "anthropic", "scripted"])
def port(
    request: pytest.FixtureRequest, serve: Serve, connect: Connect, tmp_path: Path
) -> ModelPort:
    kind = request.param
    if kind == "openai":
        server = serve(
            "openai",
            Reply(sse=oa_tool_stream([("call_1", "workspace_read", FRAGMENTS)], text="Looking.")),
        )
        return connect("openai", server)
    if kind == "anthropic":
        server = serve(
            "anthropic",
            Reply(
                sse=an_stream(["Looking."], [("call_1", "workspace_read", FRAGMENTS)], "tool_use")
            ),
        )
        return connect("anthropic", server)
    script = tmp_path / "turn.json"
    turn = {
        "text": "Looking.",
        "tool_calls": [
            {"id": "call_1", "name": "workspace.read", "arguments_fragments": FRAGMENTS}
        ],
    }
    script.write_text(json.dumps({"turns": [turn]}))
    return resolve_model(f"scripted:{script}", None, {})


def test_one_turn_gives_the_same_events_and_response(port: ModelPort) -> None:
    events = list(check_order(port.stream(REQUEST)))
    assert [e.fragment for e in events if isinstance(e, ToolCallDelta)] == FRAGMENTS
    response = events[-1].response  # type: ignore[union-attr]
    assert response.text == "Looking."
    assert response.tool_calls == (ToolCall("call_1", "workspace.read", {"path": "calc.py"}),)
    assert response.stop_reason is StopReason.TOOL_USE
    assert response.usage.input_tokens > 0 and response.usage.output_tokens > 0


def test_identity_and_counting_are_declared(port: ModelPort) -> None:
    identity = port.identity
    assert identity.provider in {"openai", "anthropic", "scripted"}
    assert identity.context_window > identity.max_output_tokens > 0
    assert identity.identity_hash.startswith("sha256:")
    assert identity.contract_double is (identity.provider == "scripted")
    count = port.count_tokens("def add(a, b): return a + b")
    assert count.value > 0 and count.method == identity.token_counting
    assert count.exact is identity.token_counting.startswith("tiktoken:")
