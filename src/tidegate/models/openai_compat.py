"""The OpenAI adapter, through the official ``openai`` SDK's chat completions API.

Serves OpenAI itself and any OpenAI-compatible server (vLLM, llama.cpp, Ollama, ...) at
another base URL. Streaming uses ``stream_options.include_usage``; tool-call arguments
arrive split across chunks and are reassembled per ``index``. Against api.openai.com the
request also carries ``prompt_cache_key`` (the envelope's cache key) and
``max_completion_tokens``; other servers get the older, widely supported ``max_tokens``.

Layout of the wire request: one system message with the cache-safe blocks, then the
history; late attachments ride on the final user turn so they never disturb the prefix.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any, cast

import httpx2
import openai

from tidegate.models.calls import translate_sdk_error
from tidegate.models.envelope import ModelRequest
from tidegate.models.errors import (
    MalformedModelOutput,
    ModelConfigError,
    ModelError,
)
from tidegate.models.events import ModelEvent, StopReason, StreamAssembler, Usage
from tidegate.models.messages import AssistantMessage, ToolResult, UserMessage
from tidegate.models.network import InflightCall, endpoint_of
from tidegate.models.provider import PreparedCall, ProviderConnection, ProviderModel
from tidegate.models.tokens import TokenCounter
from tidegate.models.tool_names import ToolNameMap

OPENAI_HOST = "api.openai.com"
_STOPS = {
    "stop": StopReason.END_TURN,
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    "length": StopReason.MAX_TOKENS,
    "content_filter": StopReason.CONTENT_FILTER,
}


class OpenAICompatModel(ProviderModel):
    provider = "openai"
    stop_reasons = _STOPS

    def __init__(
        self,
        connection: ProviderConnection,
        env: Mapping[str, str] | None = None,
        counter: TokenCounter | None = None,
    ) -> None:
        self._official = endpoint_of(connection.base_url) == OPENAI_HOST
        if counter is None:
            counter = (
                TokenCounter.for_openai_model(connection.model)
                if self._official
                else TokenCounter()
            )
        super().__init__(connection, counter, env)
        try:
            self._client = openai.OpenAI(
                api_key=connection.api_key,
                base_url=connection.base_url,
                max_retries=0,
                timeout=connection.timeout_s,
                http_client=self._http,
            )
        except openai.OpenAIError as exc:
            self._http.close()
            raise ModelConfigError(f"openai: {self._scrub(str(exc))}") from None

    def _params(self, request: ModelRequest, names: ToolNameMap) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self._connection.model,
            "messages": wire_messages(request, names),
        }
        limit_key = "max_completion_tokens" if self._official else "max_tokens"
        params[limit_key] = self._max_tokens(request)
        if request.tools:
            params["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": names.to_wire(t.name),
                        "description": t.description,
                        "parameters": dict(t.input_schema),
                    },
                }
                for t in request.tools
            ]
        if self._official and self._connection.prompt_caching:
            params["prompt_cache_key"] = request.cache_key()
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
        completions = self._client.chat.completions
        if not self._connection.streaming:
            with inflight.sending():
                completion = completions.create(**call.params, stream=False, timeout=timeout)
            yield from completion_events(assembler, completion.to_dict(warnings=False))
            yield from assembler.finish()
            return
        with inflight.sending():
            stream = completions.create(
                **call.params,
                stream=True,
                stream_options={"include_usage": True},
                timeout=timeout,
            )
        try:
            for chunk in stream:
                yield from chunk_events(assembler, chunk.to_dict(warnings=False))
        finally:
            stream.close()
        yield from assembler.finish()

    def _translate(self, exc: Exception) -> ModelError:
        return translate_sdk_error("openai", openai, exc, self._scrub, stream_errors=True)


def wire_messages(request: ModelRequest, names: ToolNameMap) -> list[dict[str, Any]]:
    """The chat-completions ``messages`` for ``request``."""
    out: list[dict[str, Any]] = []
    system = "\n\n".join(request.cache_safe_blocks())
    if system:
        out.append({"role": "system", "content": system})
    for message in request.messages:
        if isinstance(message, UserMessage):
            out.append({"role": "user", "content": message.text})
        elif isinstance(message, AssistantMessage):
            # Content is always a string, "" beside tool calls: OpenAI accepts that, while
            # OpenAI-compatible servers such as llama-cpp-python refuse null and its chat
            # templates fail on a missing key (both found with a real local model).
            entry: dict[str, Any] = {"role": "assistant", "content": message.text}
            if message.tool_calls:
                entry["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {
                            "name": names.to_wire(c.name),
                            "arguments": c.arguments_json(),
                        },
                    }
                    for c in message.tool_calls
                ]
            out.append(entry)
        else:
            content = f"[tool error] {message.content}" if message.is_error else message.content
            out.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": content})
    late = "\n\n".join(a.render() for a in request.late_attachments())
    if late:
        if isinstance(request.messages[-1], ToolResult):
            out.append({"role": "user", "content": late})
        else:
            out[-1] = {**out[-1], "content": f"{late}\n\n{out[-1]['content']}"}
    return out


def _usage(raw: object) -> Usage | None:
    if not isinstance(raw, dict) or raw.get("prompt_tokens") is None:
        return None  # not reported: the assembler falls back to a labelled estimate
    details = raw.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return Usage(
        input_tokens=_int(raw.get("prompt_tokens"), "usage.prompt_tokens"),
        output_tokens=_int(raw.get("completion_tokens"), "usage.completion_tokens"),
        cached_input_tokens=_int(cached or 0, "usage.cached_tokens"),
    )


def chunk_events(assembler: StreamAssembler, chunk: dict[str, object]) -> list[ModelEvent]:
    """Feed one ``chat.completion.chunk`` to the assembler."""
    if isinstance(chunk.get("model"), str):
        assembler.model(cast(str, chunk["model"]))
    usage = _usage(chunk.get("usage"))
    if usage is not None:
        assembler.usage(usage)
    events: list[ModelEvent] = []
    for choice in _list(chunk.get("choices"), "choices"):
        if not isinstance(choice, dict):
            raise MalformedModelOutput("a stream choice is not an object", repr(choice))
        if choice.get("index", 0) != 0:
            continue
        delta = choice.get("delta") or {}
        if not isinstance(delta, dict):
            raise MalformedModelOutput("a stream delta is not an object", repr(delta))
        content = _str(delta.get("content"), "delta.content")
        if content:
            events += assembler.text(content)
        for piece in _list(delta.get("tool_calls"), "delta.tool_calls"):
            events += _tool_piece(assembler, piece)
        finish = _str(choice.get("finish_reason"), "finish_reason")
        if finish:
            assembler.stop(finish)
    return events


def completion_events(
    assembler: StreamAssembler, completion: dict[str, object]
) -> list[ModelEvent]:
    """Feed a whole (non-streamed) ``chat.completion`` to the assembler."""
    if isinstance(completion.get("model"), str):
        assembler.model(cast(str, completion["model"]))
    choices = _list(completion.get("choices"), "choices")
    if not choices or not isinstance(choices[0], dict):
        raise MalformedModelOutput("the completion has no choices", repr(completion)[:500])
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise MalformedModelOutput("the completion's message is not an object", repr(message))
    events: list[ModelEvent] = []
    content = _str(message.get("content"), "message.content")
    if content:
        events += assembler.text(content)
    for index, piece in enumerate(_list(message.get("tool_calls"), "message.tool_calls")):
        if isinstance(piece, dict):
            piece = {"index": index, **piece}
        events += _tool_piece(assembler, piece)
    usage = _usage(completion.get("usage"))
    if usage is not None:
        assembler.usage(usage)
    finish = _str(choice.get("finish_reason"), "finish_reason")
    if finish:
        assembler.stop(finish)
    return events


def _tool_piece(assembler: StreamAssembler, piece: object) -> list[ModelEvent]:
    if not isinstance(piece, dict) or not isinstance(piece.get("index"), int):
        raise MalformedModelOutput("a tool call without an integer index", repr(piece)[:500])
    function = piece.get("function") or {}
    if not isinstance(function, dict):
        raise MalformedModelOutput("a tool call's function is not an object", repr(piece)[:500])
    return assembler.tool_call(
        piece["index"],
        id=_str(piece.get("id"), "tool_call.id"),
        name=_str(function.get("name"), "tool_call.function.name"),
        fragment=_str(function.get("arguments"), "tool_call.function.arguments") or "",
    )


def _str(value: object, what: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise MalformedModelOutput(f"{what} is not a string", repr(value)[:500])


def _int(value: object, what: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise MalformedModelOutput(f"{what} is not a token count", repr(value)[:500])


def _list(value: object, what: str) -> list[object]:
    if value is None:
        return []
    if isinstance(value, list):
        return value
    raise MalformedModelOutput(f"{what} is not a list", repr(value)[:500])
