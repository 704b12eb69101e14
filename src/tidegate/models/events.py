"""The ordered event stream every model port produces, and the assembler that enforces it.

One response is, in this order::

    (TextDelta | ToolCallStarted | ToolCallDelta)*   as the provider streams them
    ToolCallCompleted*                              one per call, by index, JSON checked
    UsageReported                                   exactly once
    Stopped                                         exactly once
    Finished                                        exactly once, always last

``ToolCallStarted`` precedes every ``ToolCallDelta`` of its call; ``index`` is the call's
position in the response and ``id`` correlates deltas, the completed call and, later, the
tool result. A non-streaming call yields the same sequence with coalesced deltas.

Adapters feed provider chunks to a ``StreamAssembler``; it alone creates the events, so all
adapters (and the scripted double) obey the same order and the same checks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

from tidegate.models.errors import MalformedModelOutput
from tidegate.models.messages import AssistantMessage, ToolCall
from tidegate.text.jsonparse import parse_json

if TYPE_CHECKING:
    pass


class StopReason(StrEnum):
    END_TURN = "end_turn"
    TOOL_USE = "tool_use"
    MAX_TOKENS = "max_tokens"
    STOP_SEQUENCE = "stop_sequence"
    CONTENT_FILTER = "content_filter"
    REFUSAL = "refusal"
    PAUSE = "pause_turn"
    CONTEXT_WINDOW = "context_window"


class Usage(msgspec.Struct, frozen=True):
    """Tokens of one response. ``input_tokens`` includes cached and cache-written tokens.

    ``exact`` is False when the provider reported nothing and the numbers are tidegate's
    own estimate (see ``tidegate.models.tokens``).
    """

    input_tokens: int
    output_tokens: int
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    exact: bool = True


class ModelResponse(msgspec.Struct, frozen=True):
    text: str
    tool_calls: tuple[ToolCall, ...]
    usage: Usage
    stop_reason: StopReason
    raw_stop_reason: str
    model: str = ""

    def as_message(self) -> AssistantMessage:
        """The assistant turn to append to the history for the next request."""
        return AssistantMessage(text=self.text, tool_calls=self.tool_calls)


class TextDelta(msgspec.Struct, frozen=True):
    kind: ClassVar[str] = "text_delta"
    text: str


class ToolCallStarted(msgspec.Struct, frozen=True):
    kind: ClassVar[str] = "tool_call_started"
    index: int
    id: str
    name: str


class ToolCallDelta(msgspec.Struct, frozen=True):
    kind: ClassVar[str] = "tool_call_delta"
    index: int
    id: str
    fragment: str


class ToolCallCompleted(msgspec.Struct, frozen=True):
    kind: ClassVar[str] = "tool_call_completed"
    index: int
    call: ToolCall


class UsageReported(msgspec.Struct, frozen=True):
    kind: ClassVar[str] = "usage"
    usage: Usage


class Stopped(msgspec.Struct, frozen=True):
    kind: ClassVar[str] = "stopped"
    reason: StopReason
    raw: str


class Finished(msgspec.Struct, frozen=True):
    kind: ClassVar[str] = "finished"
    response: ModelResponse


ModelEvent = (
    TextDelta
    | ToolCallStarted
    | ToolCallDelta
    | ToolCallCompleted
    | UsageReported
    | Stopped
    | Finished
)


class _PendingCall(msgspec.Struct):
    index: int
    id: str | None = None
    name: str | None = None
    fragments: list[str] = msgspec.field(default_factory=list)
    started: bool = False


class StreamAssembler:
    """Turns provider chunks into ordered ``ModelEvent``s and the final ``ModelResponse``.

    ``id_seed`` (the request fingerprint) makes synthesised tool-call ids — for providers
    that omit them — deterministic and distinct between requests. ``estimate_usage`` gives
    a labelled estimate when the provider reports no usage.
    """

    def __init__(
        self,
        *,
        stop_reasons: dict[str, StopReason],
        id_seed: str,
        estimate_usage: Callable[[str, tuple[ToolCall, ...]], Usage],
        map_tool_name: Callable[[str], str] = lambda name: name,
    ) -> None:
        self._stop_reasons = stop_reasons
        self._id_seed = id_seed
        self._estimate_usage = estimate_usage
        self._map_name = map_tool_name
        self._text: list[str] = []
        self._calls: dict[int, _PendingCall] = {}
        self._usage: Usage | None = None
        self._stop: tuple[StopReason, str] | None = None
        self._model = ""
        self._finished = False

    def text(self, text: str) -> list[ModelEvent]:
        self._open()
        if not text:
            return []
        self._text.append(text)
        return [TextDelta(text)]

    def tool_call(
        self, index: int, *, id: str | None = None, name: str | None = None, fragment: str = ""
    ) -> list[ModelEvent]:
        """One piece of tool call ``index``: any of its id, its name, an argument fragment."""
        self._open()
        call = self._calls.setdefault(index, _PendingCall(index))
        if id and call.id is None:
            call.id = id
        if name and call.name is None:
            call.name = self._map_name(name)
        events: list[ModelEvent] = []
        if fragment:
            call.fragments.append(fragment)
        if not call.started and call.name is not None:
            if call.id is None:
                call.id = self._synthetic_id(index)
            call.started = True
            events.append(ToolCallStarted(index, call.id, call.name))
            events.extend(ToolCallDelta(index, call.id, f) for f in call.fragments)
        elif call.started and fragment:
            assert call.id is not None
            events.append(ToolCallDelta(index, call.id, fragment))
        return events

    def usage(self, usage: Usage) -> None:
        self._usage = usage

    def model(self, name: str) -> None:
        self._model = name

    def stop(self, raw: str) -> None:
        reason = self._stop_reasons.get(raw)
        if reason is None:
            raise MalformedModelOutput(f"the model stopped for an unknown reason {raw!r}", raw)
        self._stop = (reason, raw)

    @property
    def has_stop(self) -> bool:
        return self._stop is not None

    def finish(self) -> list[ModelEvent]:
        """The closing events. Raises ``MalformedModelOutput`` for an unnamed tool call,
        arguments that are not a JSON object, or a response without a stop reason."""
        self._open()
        self._finished = True
        if self._stop is None:
            raise MalformedModelOutput("the response ended without a stop reason")
        events: list[ModelEvent] = []
        calls: list[ToolCall] = []
        for index in sorted(self._calls):
            call = self._complete(self._calls[index])
            calls.append(call)
            events.append(ToolCallCompleted(index, call))
        text = "".join(self._text)
        usage = self._usage or self._estimate_usage(text, tuple(calls))
        reason, raw = self._stop
        response = ModelResponse(text, tuple(calls), usage, reason, raw, self._model)
        events += [UsageReported(usage), Stopped(reason, raw), Finished(response)]
        return events

    def _open(self) -> None:
        if self._finished:
            raise MalformedModelOutput("the provider sent data after the response ended")

    def _complete(self, call: _PendingCall) -> ToolCall:
        raw = "".join(call.fragments)
        if call.name is None:
            raise MalformedModelOutput(f"tool call {call.index} has no name", raw)
        assert call.id is not None
        try:
            arguments: Any = parse_json(raw) if raw.strip() else {}
        except ValueError as exc:
            raise MalformedModelOutput(
                f"tool call {call.id} ({call.name}) has arguments that are not valid JSON: {exc}",
                raw,
            ) from None
        if not isinstance(arguments, dict):
            raise MalformedModelOutput(
                f"tool call {call.id} ({call.name}) has arguments that are not a JSON object",
                raw,
            )
        return ToolCall(call.id, call.name, arguments)

    def _synthetic_id(self, index: int) -> str:
        digest = hashlib.sha256(f"{self._id_seed}#{index}".encode()).hexdigest()
        return f"call_tg{digest[:24]}"


def final_response(events: Iterable[ModelEvent]) -> ModelResponse:
    for event in events:
        if isinstance(event, Finished):
            return event.response
    raise MalformedModelOutput("the event stream ended without a Finished event")


def check_order(events: Iterable[ModelEvent]) -> Iterator[ModelEvent]:
    """Pass events through, raising ``MalformedModelOutput`` at the first one out of order.

    The conformance tests run every adapter through this; the agent loop may too.
    """
    phase = 0  # 0 streaming deltas, 1 completions, 2 usage seen, 3 stop seen, 4 finished
    started: dict[int, str] = {}
    for event in events:
        if phase == 4:
            raise MalformedModelOutput(f"{event.kind} after Finished")
        if isinstance(event, TextDelta | ToolCallStarted | ToolCallDelta):
            ok = phase == 0
            if isinstance(event, ToolCallStarted):
                ok = ok and event.index not in started
                started[event.index] = event.id
            elif isinstance(event, ToolCallDelta):
                ok = ok and started.get(event.index) == event.id
        elif isinstance(event, ToolCallCompleted):
            ok = phase <= 1 and started.get(event.index) == event.call.id
            phase = 1
        elif isinstance(event, UsageReported):
            ok, phase = phase <= 1, 2
        elif isinstance(event, Stopped):
            ok, phase = phase == 2, 3
        else:
            ok, phase = phase == 3, 4
        if not ok:
            raise MalformedModelOutput(f"event {event.kind} is out of order")
        yield event
    if phase != 4:
        raise MalformedModelOutput("the event stream ended without a Finished event")
