"""What both provider adapters share around one call: classifying failures, scrubbing
credentials out of messages, and the retry driver.

``classify_failure`` turns an HTTP status and error body into a typed ``ModelError``;
``drive`` runs attempts under the retry policy and the caller's cancel event. A transient
failure is retried only while nothing has been yielded yet: once events have reached the
caller a retry would repeat them, so the failure is raised (``mid_stream``) instead.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Generator, Iterator
from contextlib import closing
from typing import Any

from tidegate.models.errors import (
    ContextOverflow,
    MalformedModelOutput,
    ModelAuthError,
    ModelCancelled,
    ModelError,
    ModelRequestRejected,
    ModelUnavailable,
)
from tidegate.models.events import ModelEvent
from tidegate.models.network import InflightCall
from tidegate.models.retry import RetryClock, RetryPolicy, retry_after_seconds

_OVERFLOW_MARKERS = (
    "context_length_exceeded",
    "context length",
    "context window",
    "context_window",
    "context size",
    "exceed_context",
    "prompt is too long",
    "prompt_too_long",
    "maximum context",
    "too many tokens",
    "input is too long",
    "request_too_large",
)
_TRANSIENT_TYPES = {
    "overloaded_error",
    "api_error",
    "server_error",
    "rate_limit_error",
    "timeout_error",
    "service_unavailable",
}
_QUOTA_MARKERS = ("insufficient_quota", "spend_limit", "billing")
_MESSAGE_LIMIT = 300


class Scrubber:
    """Removes known credentials (and anything secret-shaped) from text meant for errors."""

    def __init__(self, *secrets: str) -> None:
        self._secrets = tuple(s for s in secrets if s)

    def __call__(self, text: str) -> str:
        # Imported here: only error paths need it, and tidegate.store is heavy to load.
        from tidegate.text.sanitize import redact

        for secret in self._secrets:
            text = text.replace(secret, "[REDACTED]")
        return redact(text)


def error_fields(body: object) -> tuple[str, str, str]:
    """(type, code, message) from a provider error body, whichever shape it has."""
    error = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, dict):
        return (
            str(error.get("type") or ""),
            str(error.get("code") or ""),
            str(error.get("message") or ""),
        )
    return "", "", str(error or "")


def classify_failure(
    provider: str,
    status: int | None,
    body: object,
    *,
    retry_after: float | None,
    scrub: Scrubber,
) -> ModelError:
    """The typed error for a provider's refusal. ``status`` is None or 200 for an error
    reported inside a stream."""
    err_type, code, message = error_fields(body)
    summary = scrub(" ".join(x for x in (err_type or code, message) if x))[:_MESSAGE_LIMIT]
    where = f"HTTP {status}" if status and status != 200 else "in-stream error"
    text = f"{provider}: {where}: {summary or 'no details'}"
    haystack = f"{err_type} {code} {message}".lower()
    if status in (401, 403) or err_type in {"authentication_error", "permission_error"}:
        return ModelAuthError(f"{text} (check the API key; it is never shown)")
    if status == 413 or any(m in haystack for m in _OVERFLOW_MARKERS):
        return ContextOverflow(text)
    if status == 429 or err_type == "rate_limit_error":
        if any(m in haystack for m in _QUOTA_MARKERS):
            return ModelRequestRejected(text, status)
        return ModelUnavailable(text, status=status, retry_after=retry_after)
    if status is None or status == 200:
        if err_type in _TRANSIENT_TYPES:
            return ModelUnavailable(text, status=status, retry_after=retry_after)
        return ModelRequestRejected(text, status)
    if status >= 500 or status in (408, 409, 425):
        return ModelUnavailable(text, status=status, retry_after=retry_after)
    return ModelRequestRejected(text, status)


def classify_transport(provider: str, exc: BaseException, scrub: Scrubber) -> ModelError | None:
    """Errors below HTTP (connection, timeout, unparseable stream), or None if not one."""
    httpx2 = sys.modules.get("httpx2")  # loaded by the adapter that raised, if any
    if httpx2 is not None and isinstance(exc, httpx2.TimeoutException):
        return ModelUnavailable(f"{provider}: the request timed out")
    if httpx2 is not None and isinstance(exc, httpx2.TransportError):
        return ModelUnavailable(f"{provider}: connection failed: {scrub(type(exc).__name__)}")
    if isinstance(exc, json.JSONDecodeError):
        return MalformedModelOutput(
            f"{provider}: the stream carried data that is not JSON", scrub(exc.doc)
        )
    return None


Attempt = Callable[[float], Generator[ModelEvent, None, None]]


def drive(
    attempt: Attempt,
    *,
    inflight: InflightCall,
    policy: RetryPolicy,
    translate: Callable[[Exception], ModelError],
) -> Iterator[ModelEvent]:
    """Run ``attempt(remaining_deadline_s)`` until it completes, retrying transient failures
    that happen before the first event."""
    clock = RetryClock(policy)
    while True:
        inflight.check()
        emitted = False
        try:
            with closing(attempt(clock.remaining())) as events:
                for event in events:
                    inflight.check()
                    emitted = True
                    yield event
            return
        except ModelCancelled:
            raise
        except Exception as exc:
            failure = exc if isinstance(exc, ModelError) else translate(exc)
        # Raised outside the handler so no SDK exception (which holds the request and its
        # credential header) is chained to what the caller sees.
        if inflight.cancelled:
            raise ModelCancelled("the model request was cancelled")
        if not isinstance(failure, ModelUnavailable):
            raise failure
        if emitted:
            raise ModelUnavailable(
                f"{failure.message} (the stream broke after output had started)",
                status=failure.status,
                attempts=clock.attempts,
                mid_stream=True,
            )
        inflight.sleep(clock.next_delay(failure))


def translate_sdk_error(
    provider: str, sdk: Any, exc: Exception, scrub: Scrubber, *, stream_errors: bool = False
) -> ModelError:
    """An exception of the official ``openai`` or ``anthropic`` SDK (``sdk`` is the module;
    both have the same exception hierarchy) as a typed, credential-free model error.
    ``stream_errors``: a bare ``APIError`` is an error object sent inside the stream."""
    if isinstance(exc, sdk.APIStatusError):
        return classify_failure(
            provider,
            exc.status_code,
            exc.body,
            retry_after=retry_after_seconds(exc.response.headers),
            scrub=scrub,
        )
    if isinstance(exc, sdk.APITimeoutError):
        return ModelUnavailable(f"{provider}: the request timed out")
    if isinstance(exc, sdk.APIConnectionError):
        return ModelUnavailable(f"{provider}: connection failed")
    if stream_errors and isinstance(exc, sdk.APIError):
        return classify_failure(provider, None, exc.body, retry_after=None, scrub=scrub)
    known = classify_transport(provider, exc, scrub)
    if known is not None:
        return known
    return ModelError(f"{provider}: unexpected {type(exc).__name__}: {scrub(str(exc))[:300]}")
