"""The request envelope: what moves the cache key, what does not, and which conversations
are refused before anything is sent."""

from __future__ import annotations

import pytest

from tidegate.models import (
    AssistantMessage,
    Attachment,
    InvalidModelRequest,
    ModelRequest,
    ToolCall,
    ToolResult,
    ToolSpec,
    UserMessage,
)

READ = ToolSpec("workspace.read", "Read a file.")


def request(**changes: object) -> ModelRequest:
    fields: dict[str, object] = {
        "system": ("policy", "tools guide"),
        "messages": (UserMessage("fix it"),),
        "tools": (READ,),
        "attachments": (
            Attachment("map", "a.py b.py", cache_safe=True),
            Attachment("dirty", "M a.py"),
        ),
        "context_hash": "sha256:ctx",
    }
    fields.update(changes)
    return ModelRequest(**fields)  # type: ignore[arg-type]


BASE = request()


@pytest.mark.parametrize(
    "late",
    [
        {"messages": (UserMessage("a different prompt"),)},
        {
            "messages": (
                UserMessage("fix it"),
                AssistantMessage("ok", (ToolCall("c1", "workspace.read", {"path": "a.py"}),)),
                ToolResult("c1", "content"),
            )
        },
        {
            "attachments": (
                Attachment("map", "a.py b.py", cache_safe=True),
                Attachment("dirty", "M b.py"),
            )
        },
        {"max_output_tokens": 10},
    ],
    ids=["prompt", "history", "late-attachment", "max-tokens"],
)
def test_late_content_does_not_move_the_cache_key(late: dict[str, object]) -> None:
    changed = request(**late)
    assert changed.cache_key() == BASE.cache_key()
    assert changed.cache_safe_fingerprint() == BASE.cache_safe_fingerprint()
    assert changed.fingerprint() != BASE.fingerprint()


@pytest.mark.parametrize(
    "stable",
    [
        {"system": ("policy v2", "tools guide")},
        {"attachments": (Attachment("map", "a.py c.py", cache_safe=True),)},
        {"tools": (ToolSpec("workspace.read", "Read a file, now with ranges."),)},
        {"context_hash": "sha256:other"},
    ],
    ids=["system", "cache-safe-attachment", "tool-schema", "context-hash"],
)
def test_cache_safe_content_moves_the_cache_key(stable: dict[str, object]) -> None:
    assert request(**stable).cache_key() != BASE.cache_key()


def test_full_prompt_mode_keys_on_everything() -> None:
    a = request(cache_mode="full_prompt")
    b = request(cache_mode="full_prompt", messages=(UserMessage("a different prompt"),))
    assert a.cache_key() != b.cache_key()
    assert a.cache_key() != BASE.cache_key()


def test_the_cacheable_prefix_is_sections_then_cache_safe_attachments() -> None:
    blocks = BASE.cache_safe_blocks()
    assert blocks[:2] == ["policy", "tools guide"]
    assert blocks[2] == '<attachment name="map">\na.py b.py\n</attachment>'
    assert [a.name for a in BASE.late_attachments()] == ["dirty"]


def test_keys_are_deterministic_across_instances() -> None:
    assert request().cache_key() == BASE.cache_key()
    assert request().fingerprint() == BASE.fingerprint()


CALL = ToolCall("c1", "workspace.read", {"path": "a.py"})


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        ((), "at least one message"),
        ((UserMessage("hi"), AssistantMessage("hello")), "last message"),
        ((ToolResult("c1", "x"),), "cannot start"),
        (
            (UserMessage("hi"), AssistantMessage("", (CALL,)), ToolResult("c9", "x")),
            "answers no open",
        ),
        (
            (UserMessage("hi"), AssistantMessage("", (CALL,)), UserMessage("and?")),
            "without results",
        ),
        (
            (
                UserMessage("hi"),
                AssistantMessage("", (CALL,)),
                ToolResult("c1", "x"),
                AssistantMessage("", (CALL,)),
                ToolResult("c1", "x"),
            ),
            "used twice",
        ),
    ],
    ids=[
        "empty",
        "ends-with-assistant",
        "starts-with-result",
        "unknown-id",
        "unanswered",
        "reused-id",
    ],
)
def test_impossible_conversations_are_refused(messages: tuple[object, ...], expected: str) -> None:
    with pytest.raises(InvalidModelRequest, match=expected):
        request(messages=messages)


def test_duplicate_tool_names_are_refused() -> None:
    with pytest.raises(InvalidModelRequest, match="duplicate"):
        request(tools=(READ, READ))
