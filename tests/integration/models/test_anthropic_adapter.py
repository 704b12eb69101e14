"""The Anthropic adapter against a real messages-API server on 127.0.0.1, through the
official SDK: streaming, tool use with split JSON, prompt caching, retries, error paths."""

from __future__ import annotations

import time

import pytest

from tests.integration.models.conftest import KEY, Connect, Serve
from tests.integration.models.servers import (
    Reply,
    an_error,
    an_event,
    an_message,
    an_stream,
    an_usage,
)
from tidegate.models import (
    AssistantMessage,
    Attachment,
    ContextOverflow,
    MalformedModelOutput,
    ModelAuthError,
    ModelRequest,
    ModelUnavailable,
    StopReason,
    TextDelta,
    ToolCall,
    ToolCallCompleted,
    ToolCallDelta,
    ToolResult,
    ToolSpec,
    UserMessage,
    check_order,
    complete,
)

READ = ToolSpec(
    "workspace.read",
    "Read a file.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


def ask(text: str = "Fix the parser.", **kwargs: object) -> ModelRequest:
    return ModelRequest(
        system=("You are tidegate's coder.", "Never touch the index."),
        messages=(UserMessage(text),),
        **kwargs,  # type: ignore[arg-type]
    )


def test_streamed_text_with_cached_prefix_and_normalised_usage(
    serve: Serve, connect: Connect
) -> None:
    usage = an_usage(inp=12, out=5, read=1000, write=200)
    server = serve("anthropic", Reply(sse=an_stream(["Hel", "lo"], usage=usage)))
    model = connect("anthropic", server)
    request = ask(
        attachments=(
            Attachment("repo-map", "calc.py", cache_safe=True),
            Attachment("dirty", "M calc.py"),
        )
    )
    events = list(check_order(model.stream(request)))
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hel", "lo"]
    response = events[-1].response  # type: ignore[union-attr]
    assert response.usage.input_tokens == 12 + 1000 + 200
    assert (response.usage.cached_input_tokens, response.usage.cache_write_tokens) == (1000, 200)
    assert response.usage.output_tokens == 5 and response.model == "claude-test"
    received = server.received[0]
    assert received.path == "/v1/messages"
    assert received.headers["anthropic-version"]
    body = received.json()
    system = body["system"]
    assert [b["text"] for b in system[:2]] == [
        "You are tidegate's coder.",
        "Never touch the index.",
    ]
    assert "repo-map" in system[2]["text"]
    assert [("cache_control" in b) for b in system] == [False, False, True]
    assert body["messages"][-1]["content"][0]["text"].startswith('<attachment name="dirty">')
    assert body["messages"][-1]["content"][-1] == {"type": "text", "text": "Fix the parser."}
    assert body["stream"] is True and body["max_tokens"] == 4096


def test_prompt_caching_can_be_switched_off(serve: Serve, connect: Connect) -> None:
    server = serve("anthropic", Reply(sse=an_stream(["ok"])))
    model = connect("anthropic", server, {"prompt_caching": False})
    complete(model, ask())
    assert all("cache_control" not in b for b in server.received[0].json()["system"])
    assert model.identity.prompt_caching is False


def test_tool_use_with_json_split_across_deltas(serve: Serve, connect: Connect) -> None:
    server = serve(
        "anthropic",
        Reply(
            sse=an_stream(
                ["Let me look."],
                tools=[
                    ("toolu_1", "workspace_read", ['{"pa', 'th": "calc', '.py"}']),
                    ("toolu_2", "workspace_read", []),
                ],
                stop="tool_use",
            )
        ),
    )
    events = list(check_order(connect("anthropic", server).stream(ask(tools=(READ,)))))
    deltas = [e.fragment for e in events if isinstance(e, ToolCallDelta)]
    assert deltas == ['{"pa', 'th": "calc', '.py"}']
    calls = [e.call for e in events if isinstance(e, ToolCallCompleted)]
    assert [(c.id, c.name, dict(c.arguments)) for c in calls] == [
        ("toolu_1", "workspace.read", {"path": "calc.py"}),
        ("toolu_2", "workspace.read", {}),
    ]
    assert events[-1].response.stop_reason is StopReason.TOOL_USE  # type: ignore[union-attr]
    assert server.received[0].json()["tools"][0]["name"] == "workspace_read"


def test_tool_results_share_one_user_turn(serve: Serve, connect: Connect) -> None:
    server = serve("anthropic", Reply(sse=an_stream(["done"])))
    calls = (
        ToolCall("t1", "workspace.read", {"path": "a"}),
        ToolCall("t2", "workspace.read", {"path": "b"}),
    )
    request = ModelRequest(
        system=("rules",),
        messages=(
            UserMessage("go"),
            AssistantMessage("", calls),
            ToolResult("t1", "A"),
            ToolResult("t2", "no such file", is_error=True),
        ),
        tools=(READ,),
    )
    complete(connect("anthropic", server), request)
    messages = server.received[0].json()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"][0] == {
        "type": "tool_use",
        "id": "t1",
        "name": "workspace_read",
        "input": {"path": "a"},
    }
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "A", "is_error": False},
        {"type": "tool_result", "tool_use_id": "t2", "content": "no such file", "is_error": True},
    ]


def test_non_streaming_yields_the_same_sequence(serve: Serve, connect: Connect) -> None:
    streamed_server = serve(
        "anthropic",
        Reply(
            sse=an_stream(
                ["Look."], tools=[("toolu_1", "workspace_read", ['{"path": "a"}'])], stop="tool_use"
            )
        ),
    )
    whole_server = serve(
        "anthropic",
        Reply(body=an_message("Look.", [("toolu_1", "workspace_read", {"path": "a"})], "tool_use")),
    )
    streamed = list(check_order(connect("anthropic", streamed_server).stream(ask(tools=(READ,)))))
    whole = list(
        check_order(
            connect("anthropic", whole_server, {"streaming": False}).stream(ask(tools=(READ,)))
        )
    )
    assert [e.kind for e in whole] == [e.kind for e in streamed]
    assert whole[-1] == streamed[-1]


def test_rate_limit_honours_retry_after(serve: Serve, connect: Connect) -> None:
    server = serve(
        "anthropic",
        an_error(429, "rate_limit_error", "slow down", headers={"retry-after": "0.25"}),
        Reply(sse=an_stream(["ok"])),
    )
    assert complete(connect("anthropic", server), ask()).text == "ok"
    first, second = server.received
    assert second.at - first.at >= 0.25


def test_overloaded_then_success(serve: Serve, connect: Connect) -> None:
    server = serve(
        "anthropic", an_error(529, "overloaded_error", "Overloaded"), Reply(sse=an_stream(["ok"]))
    )
    assert complete(connect("anthropic", server), ask()).text == "ok"
    assert len(server.received) == 2


def test_overloaded_error_event_before_output_is_retried(serve: Serve, connect: Connect) -> None:
    error = an_event("error", error={"type": "overloaded_error", "message": "Overloaded"})
    server = serve("anthropic", Reply(sse=[error]), Reply(sse=an_stream(["ok"])))
    assert complete(connect("anthropic", server), ask()).text == "ok"
    assert len(server.received) == 2


def test_persistent_server_errors_fail_within_the_deadline(serve: Serve, connect: Connect) -> None:
    server = serve("anthropic", *[an_error(500, "api_error", "internal") for _ in range(50)])
    retry = {"max_attempts": 50, "base_delay_s": 0.02, "max_delay_s": 0.1, "deadline_s": 0.5}
    started = time.monotonic()
    with pytest.raises(ModelUnavailable) as caught:
        complete(connect("anthropic", server, {"retry": retry}), ask())
    # Without the deadline 50 attempts take over 4 s (delays up to 0.1 s each); the margin
    # is for a loaded machine, not a performance figure.
    assert time.monotonic() - started < 0.5 + 1.5
    assert caught.value.status == 500 and len(server.received) > 2


def test_prompt_too_long_is_context_overflow(serve: Serve, connect: Connect) -> None:
    server = serve(
        "anthropic",
        an_error(
            400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"
        ),
    )
    with pytest.raises(ContextOverflow, match="prompt is too long"):
        complete(connect("anthropic", server), ask())
    assert len(server.received) == 1


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        (
            an_stream(tools=[("toolu_1", "workspace_read", ['{"path": "a"'])], stop="tool_use"),
            "not valid JSON",
        ),
        (an_stream(["hi"], stop="sleepy"), "unknown reason"),
        (["event: content_block_delta\ndata: {oops\n\n"], "not JSON"),
        (an_stream(["hi"])[:-1], "before message_stop"),
    ],
    ids=["bad-tool-json", "unknown-stop", "garbage-sse", "no-message-stop"],
)
def test_malformed_output_is_typed(
    serve: Serve, connect: Connect, events: list[str], expected: str
) -> None:
    server = serve("anthropic", Reply(sse=events))
    with pytest.raises(MalformedModelOutput, match=expected):
        complete(connect("anthropic", server), ask(tools=(READ,)))
    assert len(server.received) == 1


def test_the_key_travels_only_in_the_authorization_header(serve: Serve, connect: Connect) -> None:
    server = serve("anthropic", Reply(sse=an_stream(["ok"])))
    model = connect("anthropic", server)
    events = list(model.stream(ask()))
    assert server.credential_problems() == []
    assert KEY not in repr(model) and KEY not in str(model.identity.to_json())
    assert all(KEY not in repr(e) for e in events)


def test_a_refused_key_is_not_retried_and_never_shown(serve: Serve, connect: Connect) -> None:
    server = serve("anthropic", Reply(sse=an_stream(["never"])), key="the-right-key-000000000000")
    with pytest.raises(ModelAuthError) as caught:
        complete(connect("anthropic", server), ask())
    assert len(server.received) == 1
    text = (
        f"{caught.value} {caught.value!r} {caught.value.__cause__!r} {caught.value.__context__!r}"
    )
    assert KEY not in text and "[REDACTED]" in str(caught.value)
