"""The scripted model: a shipped, labelled contract double of ``ModelPort``.

It replays a JSON file of turns so the agent loop can be tested deterministically, and its
identity says what it is (provider ``scripted``, ``contract_double`` true, the script's
digest as ``revision``)::

    {
      "model": "demo",
      "turns": [
        {"text": "Reading calc.py.",
         "tool_calls": [{"id": "c1", "name": "workspace.read", "arguments": {"path": "calc.py"}}]},
        {"expect_tool_results": [{"id": "c1", "contains": "def add"}],
         "text": ["The bug ", "is in add()."]},
        {"error": "overflow"},
        {"error": "rate_limit", "retry_after_s": 0.01},
        {"text": "Done.", "usage": {"input_tokens": 900, "output_tokens": 12}}
      ]
    }

Each model request consumes the next turn. A turn gives ``text`` (one string, or a list
streamed as separate deltas) and/or ``tool_calls`` (``arguments`` as an object,
``arguments_fragments`` streamed piece by piece, or ``raw_arguments`` to inject invalid
JSON); an optional ``stop`` (default ``tool_use`` or ``end_turn``; an unknown value tests
the malformed-output path); optional ``usage`` (otherwise a labelled estimate); and
``stall_s`` to hang after the first text chunk (before any output when there is no text),
for cancellation tests.

``expect_tool_results`` and ``expect_user_contains`` assert things about the request the
turn answers; a mismatch raises ``ScriptMismatch``. ``error`` injects a failure:
``overflow`` raises ``ContextOverflow``, ``auth`` ``ModelAuthError``, ``rejected``
``ModelRequestRejected``; ``rate_limit`` and ``server_error`` are transient and go through
the same retry policy as the real adapters, so the *next* turn answers the retry.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tidegate.models.calls import drive
from tidegate.models.envelope import ModelRequest
from tidegate.models.errors import (
    ContextOverflow,
    ModelAuthError,
    ModelConfigError,
    ModelError,
    ModelRequestRejected,
    ModelUnavailable,
    ScriptMismatch,
)
from tidegate.models.events import ModelEvent, StopReason, StreamAssembler, Usage
from tidegate.models.messages import (
    AssistantMessage,
    ToolCall,
    ToolResult,
    UserMessage,
    canonical_json,
)
from tidegate.models.network import InflightCall
from tidegate.models.ports import ModelIdentity
from tidegate.models.retry import RetryPolicy
from tidegate.models.tokens import TokenCount, TokenCounter

SCRIPT_RETRY = RetryPolicy(max_attempts=6, base_delay_s=0.01, max_delay_s=0.1, deadline_s=30.0)
_STOPS = {reason.value: reason for reason in StopReason}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScriptToolCall(_Strict):
    id: str | None = None
    name: str
    arguments: dict[str, Any] | None = None
    arguments_fragments: list[str] | None = None
    raw_arguments: str | None = None

    @model_validator(mode="after")
    def _one_form(self) -> ScriptToolCall:
        given = [self.arguments, self.arguments_fragments, self.raw_arguments]
        if sum(x is not None for x in given) > 1:
            raise ValueError("give one of arguments, arguments_fragments, raw_arguments")
        return self

    def fragments(self) -> list[str]:
        if self.arguments_fragments is not None:
            return self.arguments_fragments
        if self.raw_arguments is not None:
            return [self.raw_arguments]
        return [canonical_json(self.arguments or {})]


class ExpectedToolResult(_Strict):
    id: str
    contains: str | None = None
    is_error: bool | None = None


class ScriptUsage(_Strict):
    input_tokens: int = Field(ge=0)
    output_tokens: int = Field(ge=0)
    cached_input_tokens: int = Field(default=0, ge=0)
    cache_write_tokens: int = Field(default=0, ge=0)


class ScriptTurn(_Strict):
    text: str | list[str] = ""
    tool_calls: list[ScriptToolCall] = []
    stop: str | None = None
    usage: ScriptUsage | None = None
    expect_tool_results: list[ExpectedToolResult] | None = None
    expect_user_contains: str | None = None
    error: Literal["overflow", "rate_limit", "server_error", "auth", "rejected"] | None = None
    retry_after_s: float | None = Field(default=None, ge=0)
    stall_s: float = Field(default=0.0, ge=0)


class Script(_Strict):
    model: str = "script"
    context_window: int = Field(default=32_768, ge=256)
    max_output_tokens: int = Field(default=4096, ge=1)
    turns: list[ScriptTurn] = Field(min_length=1)


class ScriptedModel:
    """Replays a ``Script``; one turn per request, thread-safe."""

    def __init__(self, script: Script, retry: RetryPolicy = SCRIPT_RETRY) -> None:
        self._script = script
        self._retry = retry
        self._counter = TokenCounter()
        self._lock = threading.Lock()
        self._next = 0
        digest = hashlib.sha256(canonical_json(script.model_dump(mode="json")).encode()).hexdigest()
        self._identity = ModelIdentity(
            provider="scripted",
            model=script.model,
            endpoint="",
            context_window=script.context_window,
            max_output_tokens=script.max_output_tokens,
            tool_calling=True,
            streaming=True,
            prompt_caching=False,
            token_counting=self._counter.method,
            capability_source="script",
            revision=digest[:16],
            contract_double=True,
        )

    @classmethod
    def load(cls, path: Path, retry: RetryPolicy = SCRIPT_RETRY) -> ScriptedModel:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ModelConfigError(f"scripted model: {path}: {exc.strerror}") from None
        try:
            return cls(Script.model_validate_json(text), retry)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(top level)"
            raise ModelConfigError(f"scripted model: {path}: {where}: {first['msg']}") from None

    def __repr__(self) -> str:
        return f"<ScriptedModel {self._identity.model} turn {self._next}/{len(self._script.turns)}>"

    @property
    def identity(self) -> ModelIdentity:
        return self._identity

    @property
    def turns_left(self) -> int:
        return len(self._script.turns) - self._next

    def count_tokens(self, text: str) -> TokenCount:
        return self._counter.count(text)

    def close(self) -> None:
        pass

    def stream(
        self, request: ModelRequest, cancel: threading.Event | None = None
    ) -> Iterator[ModelEvent]:
        return self._run(request, cancel)

    def _run(self, request: ModelRequest, cancel: threading.Event | None) -> Iterator[ModelEvent]:
        with InflightCall(cancel) as inflight:
            yield from drive(
                lambda _remaining: self._attempt(request, inflight),
                inflight=inflight,
                policy=self._retry,
                translate=lambda exc: ModelError(f"scripted model: {exc}"),
            )

    def _attempt(
        self, request: ModelRequest, inflight: InflightCall
    ) -> Generator[ModelEvent, None, None]:
        number, turn = self._take()
        _check_expectations(number, turn, request)
        if turn.error is not None:
            raise _injected(number, turn)
        assembler = StreamAssembler(
            stop_reasons=_STOPS,
            id_seed=request.fingerprint(),
            estimate_usage=lambda text, calls: self._estimate(request, text, calls),
        )
        assembler.model(self._script.model)
        chunks = [turn.text] if isinstance(turn.text, str) else list(turn.text)
        first = True
        for chunk in chunks:
            yield from assembler.text(chunk)
            if first and turn.stall_s:
                inflight.sleep(turn.stall_s)
            first = False
        for index, call in enumerate(turn.tool_calls):
            call_id = call.id or f"call_{number}_{index}"
            yield from assembler.tool_call(index, id=call_id, name=call.name)
            for fragment in call.fragments():
                yield from assembler.tool_call(index, fragment=fragment)
        if turn.usage is not None:
            assembler.usage(Usage(**turn.usage.model_dump()))
        assembler.stop(turn.stop or ("tool_use" if turn.tool_calls else "end_turn"))
        yield from assembler.finish()

    def _take(self) -> tuple[int, ScriptTurn]:
        with self._lock:
            if self._next >= len(self._script.turns):
                raise ScriptMismatch(
                    f"scripted model: the script has {len(self._script.turns)} turns and all "
                    "were used"
                )
            self._next += 1
            return self._next, self._script.turns[self._next - 1]

    def _estimate(self, request: ModelRequest, text: str, calls: tuple[ToolCall, ...]) -> Usage:
        produced = text + "".join(c.name + c.arguments_json() for c in calls)
        return Usage(
            input_tokens=self._counter.count_request(request).value,
            output_tokens=self._counter.count(produced).value,
            exact=False,
        )


def _injected(number: int, turn: ScriptTurn) -> ModelError:
    where = f"scripted model turn {number}"
    if turn.error == "overflow":
        return ContextOverflow(f"{where}: injected context overflow")
    if turn.error == "auth":
        return ModelAuthError(f"{where}: injected authentication failure")
    if turn.error == "rejected":
        return ModelRequestRejected(f"{where}: injected rejection", 400)
    status = 429 if turn.error == "rate_limit" else 500
    return ModelUnavailable(
        f"{where}: injected HTTP {status}", status=status, retry_after=turn.retry_after_s
    )


def _check_expectations(number: int, turn: ScriptTurn, request: ModelRequest) -> None:
    where = f"scripted model turn {number}"
    if turn.expect_user_contains is not None:
        users = [m for m in request.messages if isinstance(m, UserMessage)]
        if not users or turn.expect_user_contains not in users[-1].text:
            raise ScriptMismatch(
                f"{where}: expected the last user message to contain {turn.expect_user_contains!r}"
            )
    if turn.expect_tool_results is None:
        return
    results = _trailing_results(request)
    for expected in turn.expect_tool_results:
        got = results.get(expected.id)
        if got is None:
            raise ScriptMismatch(f"{where}: expected a result for tool call {expected.id!r}")
        if expected.contains is not None and expected.contains not in got.content:
            raise ScriptMismatch(
                f"{where}: the result of {expected.id!r} does not contain {expected.contains!r}"
            )
        if expected.is_error is not None and expected.is_error != got.is_error:
            raise ScriptMismatch(
                f"{where}: the result of {expected.id!r} has is_error={got.is_error}"
            )


def _trailing_results(request: ModelRequest) -> dict[str, ToolResult]:
    """Tool results after the last assistant turn: the answers this turn is given."""
    results: dict[str, ToolResult] = {}
    for message in reversed(request.messages):
        if isinstance(message, AssistantMessage):
            break
        if isinstance(message, ToolResult):
            results[message.tool_call_id] = message
    return results
