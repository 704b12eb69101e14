"""The conversation a model request carries: turns, tool calls, tool results, tool specs.

These are tidegate's own shapes. Each adapter translates them to its provider's wire format
on every request; nothing here assumes the provider remembers an earlier request.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import msgspec


def canonical_json(value: object) -> str:
    """Stable JSON (sorted keys, no spaces): the same value always gives the same bytes, so
    prompt prefixes stay cacheable and hashes stay reproducible."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class ToolSpec(msgspec.Struct, frozen=True):
    """A tool the model may call: tidegate's name (dots allowed), a description and a JSON
    schema for its arguments. Adapters map the name to what the provider accepts."""

    name: str
    description: str
    input_schema: Mapping[str, Any] = msgspec.field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )


class ToolCall(msgspec.Struct, frozen=True):
    """One tool call the model made. ``id`` correlates it with its ``ToolResult``."""

    id: str
    name: str
    arguments: Mapping[str, Any]

    def arguments_json(self) -> str:
        return canonical_json(dict(self.arguments))


class UserMessage(msgspec.Struct, frozen=True):
    text: str


class AssistantMessage(msgspec.Struct, frozen=True):
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()


class ToolResult(msgspec.Struct, frozen=True):
    """The host's answer to one tool call. ``is_error`` marks a failed call."""

    tool_call_id: str
    content: str
    is_error: bool = False


Message = UserMessage | AssistantMessage | ToolResult


class Attachment(msgspec.Struct, frozen=True):
    """A named text attachment, sent again with every request.

    ``cache_safe`` attachments are stable across the run (a repository map, a file read at
    T0) and join the cacheable prefix; the others are injected late, after the history.
    """

    name: str
    text: str
    cache_safe: bool = False

    def render(self) -> str:
        return f'<attachment name="{self.name}">\n{self.text}\n</attachment>'


def message_json(message: Message) -> dict[str, object]:
    """A provider-neutral JSON form of a message, for hashing and token estimates."""
    if isinstance(message, UserMessage):
        return {"role": "user", "text": message.text}
    if isinstance(message, AssistantMessage):
        return {
            "role": "assistant",
            "text": message.text,
            "tool_calls": [
                {"id": c.id, "name": c.name, "arguments": dict(c.arguments)}
                for c in message.tool_calls
            ],
        }
    return {
        "role": "tool",
        "tool_call_id": message.tool_call_id,
        "content": message.content,
        "is_error": message.is_error,
    }
