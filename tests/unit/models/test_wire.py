"""Pure translation code: failure classification, credential scrubbing, tool names on the
wire, and where each part of a request lands in each provider's message format."""

from __future__ import annotations

import pytest

from tidegate.models import (
    AssistantMessage,
    Attachment,
    ContextOverflow,
    InvalidModelRequest,
    ModelAuthError,
    ModelRequest,
    ModelRequestRejected,
    ModelUnavailable,
    ToolCall,
    ToolResult,
    ToolSpec,
    UserMessage,
)
from tidegate.models import anthropic as anthropic_wire
from tidegate.models import openai_compat as openai_wire
from tidegate.models.calls import Scrubber, classify_failure
from tidegate.models.tool_names import ToolNameMap

SECRET = "sk-live-abcdefghijklmnopqrstuvwxyz"
scrub = Scrubber(SECRET)


def classify(status: int | None, body: object, retry_after: float | None = None) -> Exception:
    return classify_failure("p", status, body, retry_after=retry_after, scrub=scrub)


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (401, {"error": {"message": "bad key"}}, ModelAuthError),
        (
            403,
            {"type": "error", "error": {"type": "permission_error", "message": "no"}},
            ModelAuthError,
        ),
        (400, {"message": "too long", "code": "context_length_exceeded"}, ContextOverflow),
        (
            400,
            {
                "type": "error",
                "error": {"type": "invalid_request_error", "message": "prompt is too long: 9 > 8"},
            },
            ContextOverflow,
        ),
        (
            400,
            {
                "error": {
                    "message": "the request exceeds the available context size",
                    "type": "exceed_context_size_error",
                }
            },
            ContextOverflow,
        ),
        (413, {"error": {"type": "request_too_large", "message": "big"}}, ContextOverflow),
        (429, {"error": {"type": "rate_limit_error", "message": "slow"}}, ModelUnavailable),
        (429, {"error": {"code": "insufficient_quota", "message": "pay"}}, ModelRequestRejected),
        (500, {"error": {"message": "boom"}}, ModelUnavailable),
        (
            529,
            {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}},
            ModelUnavailable,
        ),
        (404, {"error": {"message": "no such model"}}, ModelRequestRejected),
        (None, {"type": "server_error", "message": "hiccup"}, ModelUnavailable),
        (
            200,
            {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}},
            ModelRequestRejected,
        ),
    ],
)
def test_failures_are_classified(status: int | None, body: object, kind: type[Exception]) -> None:
    assert type(classify(status, body)) is kind


def test_retry_after_travels_with_transient_failures() -> None:
    error = classify(429, {"error": {"message": "slow"}}, retry_after=1.5)
    assert isinstance(error, ModelUnavailable) and error.retry_after == 1.5 and error.status == 429


def test_the_key_is_scrubbed_from_provider_messages() -> None:
    error = classify(401, {"error": {"message": f"Incorrect API key provided: {SECRET}"}})
    assert SECRET not in str(error) and "[REDACTED]" in str(error)
    assert (
        scrub(f"Bearer {SECRET} and token=abc123456789") == "Bearer [REDACTED] and token=[REDACTED]"
    )


def test_tool_names_map_to_the_wire_and_back() -> None:
    names = ToolNameMap(["workspace.read", "git.exec", "user-ask"])
    assert names.to_wire("workspace.read") == "workspace_read"
    assert names.from_wire("workspace_read") == "workspace.read"
    assert names.from_wire("invented_tool") == "invented_tool"
    assert names.to_wire("x" * 80) == "x" * 64
    with pytest.raises(InvalidModelRequest, match="collide"):
        ToolNameMap(["a.b", "a_b"])


CALLS = (
    ToolCall("c1", "workspace.read", {"path": "a"}),
    ToolCall("c2", "git.exec", {"args": ["diff"]}),
)
HISTORY = (
    UserMessage("go"),
    AssistantMessage("", CALLS),
    ToolResult("c1", "A"),
    ToolResult("c2", "fatal", is_error=True),
)
NAMES = ToolNameMap(["workspace.read", "git.exec"])


def request(messages: tuple[object, ...], late: bool = True) -> ModelRequest:
    attachments = (Attachment("map", "tree", cache_safe=True),)
    if late:
        attachments += (Attachment("dirty", "M a"),)
    return ModelRequest(system=("rules",), messages=messages, attachments=attachments)  # type: ignore[arg-type]


def test_openai_messages_put_late_attachments_after_the_history() -> None:
    after_results = openai_wire.wire_messages(request(HISTORY), NAMES)
    assert [m["role"] for m in after_results] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "user",
    ]
    assert after_results[1] == {"role": "user", "content": "go"}
    assert after_results[2]["content"] == ""  # never null or missing: servers refuse both
    assert after_results[2]["tool_calls"]
    assert after_results[4]["content"] == "[tool error] fatal"
    assert after_results[-1]["content"].startswith('<attachment name="dirty">')
    on_prompt = openai_wire.wire_messages(request((UserMessage("go"),)), NAMES)
    assert on_prompt[-1]["content"].endswith("</attachment>\n\ngo")
    assert "map" in on_prompt[0]["content"] and "dirty" not in on_prompt[0]["content"]


def test_anthropic_messages_merge_results_and_place_late_attachments() -> None:
    follow = (*HISTORY, UserMessage("and now?"))
    messages = anthropic_wire.wire_messages(request(follow), NAMES)
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert [b["type"] for b in messages[2]["content"]] == [
        "tool_result",
        "tool_result",
        "text",
        "text",
    ]
    assert messages[2]["content"][2]["text"].startswith('<attachment name="dirty">')
    assert messages[2]["content"][3] == {"type": "text", "text": "and now?"}
    assert messages[1]["content"][1]["name"] == "git_exec"
    only_results = anthropic_wire.wire_messages(request(HISTORY), NAMES)
    assert only_results[-1]["content"][-1]["text"].startswith('<attachment name="dirty">')


def test_an_empty_assistant_turn_still_has_content_for_anthropic() -> None:
    messages = anthropic_wire.wire_messages(
        request((UserMessage("a"), AssistantMessage(""), UserMessage("b")), late=False), NAMES
    )
    assert messages[1]["content"] == [{"type": "text", "text": "(no text)"}]


def test_tools_spec_schema_is_passed_through() -> None:
    spec = ToolSpec(
        "workspace.read", "Read.", {"type": "object", "properties": {"path": {"type": "string"}}}
    )
    assert dict(spec.input_schema)["properties"]["path"] == {"type": "string"}
