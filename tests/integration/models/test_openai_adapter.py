"""The OpenAI adapter against a real chat-completions server on 127.0.0.1, through the
official SDK: streaming, tool calls split across chunks, retries, and every error path."""

from __future__ import annotations

import time

import pytest

from tests.integration.models.conftest import KEY, Connect, Serve
from tests.integration.models.servers import (
    Reply,
    oa_chunk,
    oa_completion,
    oa_error,
    oa_text_stream,
    oa_tool_stream,
    oa_usage,
)
from tidegate.models import (
    Attachment,
    ContextOverflow,
    MalformedModelOutput,
    ModelAuthError,
    ModelRequest,
    ModelRequestRejected,
    ModelUnavailable,
    StopReason,
    TextDelta,
    ToolCallCompleted,
    ToolCallDelta,
    ToolCallStarted,
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
GREP = ToolSpec("workspace.grep", "Search files.", {"type": "object", "properties": {}})


def ask(text: str = "Fix the parser.", **kwargs: object) -> ModelRequest:
    return ModelRequest(
        system=("You are tidegate's coder.",),
        messages=(UserMessage(text),),
        **kwargs,  # type: ignore[arg-type]
    )


def test_streamed_text_arrives_in_order_with_usage(serve: Serve, connect: Connect) -> None:
    server = serve(
        "openai", Reply(sse=oa_text_stream("Hel", "lo", " there", usage=oa_usage(50, 3, 32)))
    )
    model = connect("openai", server)
    events = list(check_order(model.stream(ask())))
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hel", "lo", " there"]
    response = events[-1].response  # type: ignore[union-attr]
    assert response.text == "Hello there"
    assert response.stop_reason is StopReason.END_TURN
    assert (response.usage.input_tokens, response.usage.output_tokens) == (50, 3)
    assert response.usage.cached_input_tokens == 32 and response.usage.exact
    body = server.received[0].json()
    assert server.received[0].path == "/v1/chat/completions"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["messages"][0] == {"role": "system", "content": "You are tidegate's coder."}
    assert body["max_tokens"] == 4096  # not api.openai.com: the widely supported name
    assert "prompt_cache_key" not in body


def test_tool_arguments_split_across_chunks_are_reassembled(serve: Serve, connect: Connect) -> None:
    server = serve(
        "openai",
        Reply(
            sse=oa_tool_stream(
                [
                    ("call_a", "workspace_read", ['{"pa', 'th": "ca', 'lc.py"}']),
                    ("call_b", "workspace_grep", ["{", '"pattern": "add"', "}"]),
                ],
                interleave=True,
            )
        ),
    )
    model = connect("openai", server)
    events = list(check_order(model.stream(ask(tools=(READ, GREP)))))
    starts = [e for e in events if isinstance(e, ToolCallStarted)]
    assert [(s.index, s.id, s.name) for s in starts] == [
        (0, "call_a", "workspace.read"),
        (1, "call_b", "workspace.grep"),
    ]
    fragments = [e.fragment for e in events if isinstance(e, ToolCallDelta) and e.id == "call_a"]
    assert fragments == ['{"pa', 'th": "ca', 'lc.py"}']
    done = [e.call for e in events if isinstance(e, ToolCallCompleted)]
    assert [(c.id, c.name, dict(c.arguments)) for c in done] == [
        ("call_a", "workspace.read", {"path": "calc.py"}),
        ("call_b", "workspace.grep", {"pattern": "add"}),
    ]
    body = server.received[0].json()
    assert [t["function"]["name"] for t in body["tools"]] == ["workspace_read", "workspace_grep"]
    assert body["tools"][0]["function"]["parameters"] == dict(READ.input_schema)


def test_history_with_tool_results_and_late_attachments_on_the_wire(
    serve: Serve, connect: Connect
) -> None:
    server = serve("openai", Reply(sse=oa_text_stream("ok")))
    model = connect("openai", server)
    first = complete_first_turn()
    request = ModelRequest(
        system=("rules",),
        messages=(UserMessage("go"), first, ToolResult("c1", "def add(a, b): ...")),
        tools=(READ,),
        attachments=(
            Attachment("repo-map", "calc.py", cache_safe=True),
            Attachment("dirty-state", "M calc.py"),
        ),
    )
    complete(model, request)
    messages = server.received[0].json()["messages"]
    assert messages[0]["role"] == "system"
    assert messages[0]["content"].startswith('rules\n\n<attachment name="repo-map">')
    assert messages[2]["tool_calls"][0]["function"] == {
        "name": "workspace_read",
        "arguments": '{"path":"calc.py"}',
    }
    assert messages[3] == {"role": "tool", "tool_call_id": "c1", "content": "def add(a, b): ..."}
    assert messages[4]["role"] == "user" and "dirty-state" in messages[4]["content"]
    assert "dirty-state" not in messages[0]["content"]


def complete_first_turn():  # type: ignore[no-untyped-def]
    from tidegate.models import AssistantMessage, ToolCall

    return AssistantMessage("Reading.", (ToolCall("c1", "workspace.read", {"path": "calc.py"}),))


def test_non_streaming_yields_the_same_sequence(serve: Serve, connect: Connect) -> None:
    args = '{"path": "calc.py"}'
    streamed_server = serve(
        "openai", Reply(sse=oa_tool_stream([("call_a", "workspace_read", [args])], text="Look."))
    )
    whole_server = serve(
        "openai",
        Reply(body=oa_completion("Look.", [("call_a", "workspace_read", args)], "tool_calls")),
    )
    streamed = list(check_order(connect("openai", streamed_server).stream(ask(tools=(READ,)))))
    whole_model = connect("openai", whole_server, {"streaming": False})
    whole = list(check_order(whole_model.stream(ask(tools=(READ,)))))
    assert [e.kind for e in whole] == [e.kind for e in streamed]
    assert whole[-1] == streamed[-1]
    assert (
        "stream" not in whole_server.received[0].json()
        or not whole_server.received[0].json()["stream"]
    )
    assert whole_model.identity.streaming is False


def test_rate_limit_waits_for_retry_after_then_succeeds(serve: Serve, connect: Connect) -> None:
    server = serve(
        "openai",
        oa_error(429, "slow down", "rate_limit_error", headers={"retry-after-ms": "200"}),
        Reply(sse=oa_text_stream("fine")),
    )
    response = complete(connect("openai", server), ask())
    assert response.text == "fine"
    first, second = server.received
    assert second.at - first.at >= 0.2
    assert second.headers["x-stainless-retry-count"] == "0"  # the SDK's own retries are off


def test_server_error_then_success(serve: Serve, connect: Connect) -> None:
    server = serve("openai", oa_error(500, "boom", "server_error"), Reply(sse=oa_text_stream("ok")))
    assert complete(connect("openai", server), ask()).text == "ok"
    assert len(server.received) == 2


def test_connection_reset_then_success(serve: Serve, connect: Connect) -> None:
    server = serve("openai", Reply(reset=True), Reply(sse=oa_text_stream("ok")))
    assert complete(connect("openai", server), ask()).text == "ok"
    assert len(server.received) == 2


def test_persistent_server_errors_fail_within_the_deadline(serve: Serve, connect: Connect) -> None:
    server = serve("openai", *[oa_error(503, "down", "server_error") for _ in range(50)])
    retry = {"max_attempts": 50, "base_delay_s": 0.02, "max_delay_s": 0.1, "deadline_s": 0.6}
    model = connect("openai", server, {"retry": retry})
    started = time.monotonic()
    with pytest.raises(ModelUnavailable) as caught:
        complete(model, ask())
    elapsed = time.monotonic() - started
    assert elapsed < 0.6 + 0.3
    assert caught.value.status == 503 and caught.value.attempts == len(server.received) > 2
    assert "deadline" in str(caught.value)


def test_retry_after_beyond_the_deadline_fails_at_once(serve: Serve, connect: Connect) -> None:
    server = serve(
        "openai", oa_error(429, "later", "rate_limit_error", headers={"retry-after": "30"})
    )
    started = time.monotonic()
    with pytest.raises(ModelUnavailable) as caught:
        complete(connect("openai", server), ask())
    assert time.monotonic() - started < 1.0
    assert caught.value.retry_after == 30 and len(server.received) == 1


def test_exhausted_quota_is_not_retried(serve: Serve, connect: Connect) -> None:
    server = serve(
        "openai",
        oa_error(429, "You exceeded your quota", "insufficient_quota", "insufficient_quota"),
    )
    with pytest.raises(ModelRequestRejected):
        complete(connect("openai", server), ask())
    assert len(server.received) == 1


def test_context_overflow_is_typed_and_not_retried(serve: Serve, connect: Connect) -> None:
    server = serve(
        "openai",
        oa_error(
            400,
            "This model's maximum context length is 128000 tokens.",
            code="context_length_exceeded",
        ),
    )
    with pytest.raises(ContextOverflow) as caught:
        complete(connect("openai", server), ask())
    assert caught.value.retry_turn and caught.value.error_class.value == "CONTEXT_BUDGET"
    assert len(server.received) == 1


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        (
            oa_tool_stream([("call_a", "workspace_read", ['{"path": ', '"calc.py"'])]),
            "not valid JSON",
        ),
        (oa_text_stream("hi", finish="exploded"), "unknown reason"),
        (["data: {this is not json\n\n"], "not JSON"),
        ([oa_chunk({"content": "cut"}), "data: [DONE]\n\n"], "without a stop reason"),
    ],
    ids=["bad-tool-json", "unknown-stop", "garbage-sse", "no-stop"],
)
def test_malformed_output_is_typed(
    serve: Serve, connect: Connect, events: list[str], expected: str
) -> None:
    server = serve("openai", Reply(sse=events))
    with pytest.raises(MalformedModelOutput, match=expected):
        complete(connect("openai", server), ask(tools=(READ,)))
    assert len(server.received) == 1


def test_error_inside_the_stream_before_output_is_retried(serve: Serve, connect: Connect) -> None:
    error = 'data: {"error": {"message": "overloaded", "type": "server_error"}}\n\n'
    server = serve("openai", Reply(sse=[error]), Reply(sse=oa_text_stream("ok")))
    assert complete(connect("openai", server), ask()).text == "ok"
    assert len(server.received) == 2


def test_a_stream_cut_after_output_is_not_retried(serve: Serve, connect: Connect) -> None:
    server = serve("openai", Reply(sse=oa_text_stream("partial", "more"), drop_after=2))
    seen: list[str] = []
    with pytest.raises(ModelUnavailable) as caught:
        for event in connect("openai", server).stream(ask()):
            if isinstance(event, TextDelta):
                seen.append(event.text)
    assert caught.value.mid_stream and seen == ["partial"]
    assert len(server.received) == 1


def test_the_key_travels_only_in_the_authorization_header(serve: Serve, connect: Connect) -> None:
    server = serve("openai", Reply(sse=oa_text_stream("ok")), Reply(sse=oa_text_stream("ok")))
    model = connect("openai", server)
    events = list(model.stream(ask()))
    complete(model, ask(attachments=(Attachment("notes", "no secrets here"),)))
    assert server.credential_problems() == []
    assert KEY not in repr(model) and KEY not in str(model.identity.to_json())
    assert all(KEY not in repr(e) for e in events)


def test_a_refused_key_is_not_retried_and_never_shown(serve: Serve, connect: Connect) -> None:
    server = serve("openai", Reply(sse=oa_text_stream("never")), key="the-right-key-000000000000")
    model = connect("openai", server)  # sends KEY; the server echoes it in its 401 message
    with pytest.raises(ModelAuthError) as caught:
        complete(model, ask())
    assert len(server.received) == 1
    text = (
        f"{caught.value} {caught.value!r} {caught.value.__cause__!r} {caught.value.__context__!r}"
    )
    assert KEY not in text and "[REDACTED]" in str(caught.value)
