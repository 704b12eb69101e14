"""The Anthropic adapter, through the official ``anthropic`` SDK's messages API.

Prompt caching: the cache-safe blocks (system sections, then cache-safe attachments) are
sent as system text blocks and the last one carries ``cache_control`` — tools and system
form the cached prefix. Late attachments ride on the final user turn, after the history,
so they never break the cache. Usage is normalised so that ``input_tokens`` includes cache
reads and writes, as on every other port.

Thinking blocks are never requested; if a server sends them they are dropped, so no raw
chain of thought reaches the trace.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any

import anthropic
import httpx2

from tidegate.models.calls import translate_sdk_error
from tidegate.models.envelope import ModelRequest
from tidegate.models.errors import (
    MalformedModelOutput,
    ModelConfigError,
    ModelError,
)
from tidegate.models.events import ModelEvent, StopReason, StreamAssembler, Usage
from tidegate.models.messages import AssistantMessage, ToolResult, UserMessage, canonical_json
from tidegate.models.network import InflightCall
from tidegate.models.provider import PreparedCall, ProviderConnection, ProviderModel
from tidegate.models.tokens import TokenCounter
from tidegate.models.tool_names import ToolNameMap

_STOPS = {
    "end_turn": StopReason.END_TURN,
    "tool_use": StopReason.TOOL_USE,
    "max_tokens": StopReason.MAX_TOKENS,
    "stop_sequence": StopReason.STOP_SEQUENCE,
    "pause_turn": StopReason.PAUSE,
    "refusal": StopReason.REFUSAL,
    "model_context_window_exceeded": StopReason.CONTEXT_WINDOW,
}
_EMPTY_TURN = "(no text)"  # the API refuses empty text blocks


class AnthropicModel(ProviderModel):
    provider = "anthropic"
    stop_reasons = _STOPS

    def __init__(
        self,
        connection: ProviderConnection,
        env: Mapping[str, str] | None = None,
        counter: TokenCounter | None = None,
    ) -> None:
        super().__init__(connection, counter or TokenCounter(), env)
        try:
            self._client = anthropic.Anthropic(
                api_key=connection.api_key,
                base_url=connection.base_url,
                max_retries=0,
                timeout=connection.timeout_s,
                http_client=self._http,
                open_telemetry=False,
            )
        except (anthropic.AnthropicError, ValueError) as exc:
            self._http.close()
            raise ModelConfigError(f"anthropic: {self._scrub(str(exc))}") from None

    def _params(self, request: ModelRequest, names: ToolNameMap) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self._connection.model,
            "max_tokens": self._max_tokens(request),
            "messages": wire_messages(request, names),
        }
        system: list[dict[str, Any]] = [
            {"type": "text", "text": b} for b in request.cache_safe_blocks()
        ]
        if system:
            if self._connection.prompt_caching:
                system[-1]["cache_control"] = {"type": "ephemeral"}
            params["system"] = system
        if request.tools:
            params["tools"] = [
                {
                    "name": names.to_wire(t.name),
                    "description": t.description,
                    "input_schema": dict(t.input_schema),
                }
                for t in request.tools
            ]
        if request.temperature is not None:
            params["temperature"] = request.temperature
        return params

    def _attempt(
        self, call: PreparedCall, inflight: InflightCall, remaining_s: float
    ) -> Generator[ModelEvent, None, None]:
        assembler = self._assembler(call)
        timeout = httpx2.Timeout(
            self._connection.timeout_s, connect=max(0.05, min(10.0, remaining_s))
        )
        messages = self._client.messages
        if not self._connection.streaming:
            with inflight.sending():
                message = messages.create(**call.params, stream=False, timeout=timeout)
            yield from message_events(assembler, message.to_dict(warnings=False))
            yield from assembler.finish()
            return
        with inflight.sending():
            stream = messages.create(**call.params, stream=True, timeout=timeout)
        reader = StreamReader(assembler)
        try:
            for event in stream:
                yield from reader.feed(event.to_dict(warnings=False))
        finally:
            stream.close()
        yield from reader.finish()

    def _translate(self, exc: Exception) -> ModelError:
        return translate_sdk_error("anthropic", anthropic, exc, self._scrub)


def wire_messages(request: ModelRequest, names: ToolNameMap) -> list[dict[str, Any]]:
    """The messages-API ``messages`` for ``request``: tool results and any user text that
    follows them share one user turn, as the API requires."""
    out: list[dict[str, Any]] = []

    def user_turn() -> list[dict[str, Any]]:
        if not out or out[-1]["role"] != "user":
            out.append({"role": "user", "content": []})
        content: list[dict[str, Any]] = out[-1]["content"]
        return content

    for message in request.messages:
        if isinstance(message, UserMessage):
            user_turn().append({"type": "text", "text": message.text or _EMPTY_TURN})
        elif isinstance(message, ToolResult):
            user_turn().append(
                {
                    "type": "tool_result",
                    "tool_use_id": message.tool_call_id,
                    "content": message.content,
                    "is_error": message.is_error,
                }
            )
        else:
            out.append({"role": "assistant", "content": _assistant_blocks(message, names)})
    late = "\n\n".join(a.render() for a in request.late_attachments())
    if late:
        content = out[-1]["content"]
        # Before the user's own text when the turn ends with it; after tool results.
        at = len(content) - 1 if isinstance(request.messages[-1], UserMessage) else len(content)
        content.insert(at, {"type": "text", "text": late})
    return out


def _assistant_blocks(message: AssistantMessage, names: ToolNameMap) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if message.text:
        blocks.append({"type": "text", "text": message.text})
    blocks += [
        {"type": "tool_use", "id": c.id, "name": names.to_wire(c.name), "input": dict(c.arguments)}
        for c in message.tool_calls
    ]
    return blocks or [{"type": "text", "text": _EMPTY_TURN}]


class StreamReader:
    """Feeds raw message-stream events to the assembler.

    Content blocks are numbered across text and tool use; tool calls are renumbered
    0, 1, ... in order. Usage arrives in two parts (``message_start`` and the cumulative
    ``message_delta``) and is combined at the end.
    """

    def __init__(self, assembler: StreamAssembler) -> None:
        self._assembler = assembler
        self._tool_index: dict[int, int] = {}
        self._usage: dict[str, int] = {}
        self._stopped = False

    def feed(self, event: dict[str, object]) -> list[ModelEvent]:
        kind = event.get("type")
        if kind == "message_start":
            message = _dict(event.get("message"), "message_start.message")
            if isinstance(message.get("model"), str):
                self._assembler.model(str(message["model"]))
            self._take_usage(message.get("usage"))
        elif kind == "content_block_start":
            return self._block_start(
                _index(event), _dict(event.get("content_block"), "content_block")
            )
        elif kind == "content_block_delta":
            return self._block_delta(_index(event), _dict(event.get("delta"), "delta"))
        elif kind == "message_delta":
            delta = _dict(event.get("delta"), "message_delta.delta")
            if isinstance(delta.get("stop_reason"), str):
                self._assembler.stop(str(delta["stop_reason"]))
            self._take_usage(event.get("usage"))
        elif kind == "message_stop":
            self._stopped = True
        # ping, content_block_stop and event types added later carry nothing we need
        return []

    def finish(self) -> list[ModelEvent]:
        if not self._stopped:
            raise MalformedModelOutput("the stream ended before message_stop")
        if "input_tokens" in self._usage and "output_tokens" in self._usage:
            self._assembler.usage(normalise_usage(self._usage))
        return self._assembler.finish()

    def _block_start(self, index: int, block: dict[str, object]) -> list[ModelEvent]:
        if block.get("type") == "text":
            return self._assembler.text(_text(block.get("text")))
        if block.get("type") != "tool_use":
            return []  # thinking and other blocks are dropped
        ordinal = self._tool_index.setdefault(index, len(self._tool_index))
        given = block.get("input")
        return self._assembler.tool_call(
            ordinal,
            id=_text(block.get("id")) or None,
            name=_text(block.get("name")) or None,
            fragment=canonical_json(given) if given else "",
        )

    def _block_delta(self, index: int, delta: dict[str, object]) -> list[ModelEvent]:
        if delta.get("type") == "text_delta":
            return self._assembler.text(_text(delta.get("text")))
        if delta.get("type") == "input_json_delta":
            if index not in self._tool_index:
                raise MalformedModelOutput(
                    f"tool arguments for block {index}, which is not a tool call"
                )
            return self._assembler.tool_call(
                self._tool_index[index], fragment=_text(delta.get("partial_json"))
            )
        return []

    def _take_usage(self, raw: object) -> None:
        if isinstance(raw, dict):
            for key, value in raw.items():
                if isinstance(value, int) and not isinstance(value, bool):
                    self._usage[key] = value


def normalise_usage(raw: Mapping[str, object]) -> Usage:
    def n(key: str) -> int:
        value = raw.get(key)
        return value if isinstance(value, int) and value >= 0 else 0

    read, written = n("cache_read_input_tokens"), n("cache_creation_input_tokens")
    return Usage(
        input_tokens=n("input_tokens") + read + written,
        output_tokens=n("output_tokens"),
        cached_input_tokens=read,
        cache_write_tokens=written,
    )


def message_events(assembler: StreamAssembler, message: dict[str, object]) -> list[ModelEvent]:
    """Feed a whole (non-streamed) message to the assembler."""
    if isinstance(message.get("model"), str):
        assembler.model(str(message["model"]))
    content = message.get("content")
    if not isinstance(content, list):
        raise MalformedModelOutput("the message content is not a list", repr(content)[:500])
    events: list[ModelEvent] = []
    tools = 0
    for block in content:
        block = _dict(block, "content block")
        if block.get("type") == "text":
            events += assembler.text(_text(block.get("text")))
        elif block.get("type") == "tool_use":
            events += assembler.tool_call(
                tools,
                id=_text(block.get("id")) or None,
                name=_text(block.get("name")) or None,
                fragment=canonical_json(block.get("input") or {}),
            )
            tools += 1
    usage = message.get("usage")
    if isinstance(usage, dict):
        assembler.usage(normalise_usage(usage))
    if isinstance(message.get("stop_reason"), str):
        assembler.stop(str(message["stop_reason"]))
    return events


def _dict(value: object, what: str) -> dict[str, object]:
    if isinstance(value, dict):
        return value
    raise MalformedModelOutput(f"{what} is not an object", repr(value)[:500])


def _index(event: dict[str, object]) -> int:
    index = event.get("index")
    if isinstance(index, int):
        return index
    raise MalformedModelOutput("a content block event without an integer index", repr(event)[:500])


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    raise MalformedModelOutput("a text field is not a string", repr(value)[:500])
