"""The model request: one self-contained envelope with an explicit cacheable surface.

A request is split in two:

- the **cache-safe surface** — tool definitions, system sections and attachments marked
  ``cache_safe`` — is stable for the run and forms the provider's cacheable prefix;
- the **late surface** — the conversation history, the current user turn and every other
  attachment — changes from turn to turn.

In the default ``cache_safe_only`` mode the cache key is derived from the cache-safe
fingerprint and the caller's ``context_hash`` only, so late content can never silently
change it. ``full_prompt`` mode, which a caller must ask for, keys on everything.

Tool definitions count as cache-safe surface: providers place them before the system
prompt in the cached prefix, so a key that ignored them would claim a cache hit that the
provider cannot give.
"""

from __future__ import annotations

import hashlib
from typing import Literal

import msgspec

from tidegate.models.errors import InvalidModelRequest
from tidegate.models.messages import (
    AssistantMessage,
    Attachment,
    Message,
    ToolResult,
    ToolSpec,
    UserMessage,
    canonical_json,
    message_json,
)

CacheMode = Literal["cache_safe_only", "full_prompt"]


def _sha256(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


class ModelRequest(msgspec.Struct, frozen=True):
    """Everything one model call needs; nothing is assumed to live on the provider.

    ``messages`` must end with the user's turn (a ``UserMessage`` or the ``ToolResult``s
    answering the previous assistant turn), and every tool result must answer a call of
    the assistant message right before it. Violations raise ``InvalidModelRequest``.
    """

    system: tuple[str, ...]
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    attachments: tuple[Attachment, ...] = ()
    max_output_tokens: int = 4096
    context_hash: str = ""
    cache_mode: CacheMode = "cache_safe_only"
    temperature: float | None = None

    def __post_init__(self) -> None:
        if self.max_output_tokens < 1:
            raise InvalidModelRequest("max_output_tokens must be at least 1")
        names = [t.name for t in self.tools]
        if len(set(names)) != len(names):
            raise InvalidModelRequest(f"duplicate tool names: {sorted(names)}")
        _check_conversation(self.messages)

    # -- the two surfaces ------------------------------------------------------------

    def cache_safe_blocks(self) -> list[str]:
        """System sections, then cache-safe attachments, in order: the cacheable prefix."""
        return [*self.system, *(a.render() for a in self.attachments if a.cache_safe)]

    def late_attachments(self) -> list[Attachment]:
        return [a for a in self.attachments if not a.cache_safe]

    def cache_safe_fingerprint(self) -> str:
        surface = {
            "tools": [
                {"name": t.name, "description": t.description, "schema": dict(t.input_schema)}
                for t in self.tools
            ],
            "system": list(self.system),
            "attachments": [
                {"name": a.name, "text": a.text} for a in self.attachments if a.cache_safe
            ],
        }
        return _sha256(canonical_json(surface))

    def fingerprint(self) -> str:
        """A hash of the whole request (both surfaces): identifies this exact request."""
        whole = {
            "cache_safe": self.cache_safe_fingerprint(),
            "late": [a.render() for a in self.late_attachments()],
            "messages": [message_json(m) for m in self.messages],
            "max_output_tokens": self.max_output_tokens,
            "temperature": self.temperature,
            "context_hash": self.context_hash,
        }
        return _sha256(canonical_json(whole))

    def cache_key(self) -> str:
        """The provider cache key. In ``cache_safe_only`` mode, late content cannot move it."""
        if self.cache_mode == "full_prompt":
            basis = self.fingerprint()
        else:
            basis = canonical_json([self.cache_safe_fingerprint(), self.context_hash])
        return "tg-" + hashlib.sha256(basis.encode("utf-8")).hexdigest()[:32]


def _check_conversation(messages: tuple[Message, ...]) -> None:
    if not messages:
        raise InvalidModelRequest("a model request needs at least one message")
    if isinstance(messages[-1], AssistantMessage):
        raise InvalidModelRequest("the last message must be the user's turn or tool results")
    if isinstance(messages[0], ToolResult):
        raise InvalidModelRequest("the conversation cannot start with a tool result")
    open_calls: set[str] = set()
    seen_ids: set[str] = set()
    for message in messages:
        if isinstance(message, AssistantMessage):
            if open_calls:
                raise InvalidModelRequest(f"tool calls without results: {sorted(open_calls)}")
            for call in message.tool_calls:
                if call.id in seen_ids:
                    raise InvalidModelRequest(f"tool call id {call.id!r} is used twice")
                seen_ids.add(call.id)
            open_calls = {c.id for c in message.tool_calls}
        elif isinstance(message, ToolResult):
            if message.tool_call_id not in open_calls:
                raise InvalidModelRequest(
                    f"tool result {message.tool_call_id!r} answers no open tool call"
                )
            open_calls.discard(message.tool_call_id)
        elif isinstance(message, UserMessage) and open_calls:
            raise InvalidModelRequest(f"tool calls without results: {sorted(open_calls)}")
    if open_calls:
        raise InvalidModelRequest(f"tool calls without results: {sorted(open_calls)}")
