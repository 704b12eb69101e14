"""tidegate's one retry policy for model calls (the SDKs' own retries are switched off).

Transient failures — 429, 5xx, a reset connection, a timeout — are retried with
exponential backoff and jitter, waiting at least what the server's Retry-After asks for,
but never past an absolute deadline counted from the call's start: when the next attempt
could not start in time, the call fails at once instead of sleeping for nothing.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Mapping

import msgspec

from tidegate.models.errors import ModelUnavailable


class RetryPolicy(msgspec.Struct, frozen=True):
    max_attempts: int = 6
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0
    deadline_s: float = 120.0
    jitter: float = 0.5
    """The fraction of each backoff step that is randomised (0: none, 1: "full jitter")."""

    def backoff(self, retry_number: int, rng: random.Random) -> float:
        step = min(self.max_delay_s, self.base_delay_s * 2.0 ** (retry_number - 1))
        return step * (1.0 - self.jitter * rng.random())


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The wait the server asked for: ``retry-after-ms``, or ``retry-after`` in seconds or
    as an HTTP date. None when absent or unreadable."""
    lowered = {k.lower(): v for k, v in headers.items()}
    if "retry-after-ms" in lowered:
        try:
            return max(0.0, float(lowered["retry-after-ms"]) / 1000.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class RetryClock(msgspec.Struct):
    """Counts attempts of one call against a policy and its absolute deadline."""

    policy: RetryPolicy
    rng: random.Random = msgspec.field(default_factory=random.Random)
    started: float = msgspec.field(default_factory=time.monotonic)
    attempts: int = 1

    def remaining(self) -> float:
        return self.policy.deadline_s - (time.monotonic() - self.started)

    def next_delay(self, failure: ModelUnavailable) -> float:
        """How long to wait before the next attempt; raises ``ModelUnavailable`` (with the
        attempt count) when the attempts or the deadline are spent."""
        if self.attempts >= self.policy.max_attempts:
            raise self._give_up(failure, f"after {self.attempts} attempts")
        delay = self.policy.backoff(self.attempts, self.rng)
        if failure.retry_after is not None:
            delay = max(delay, failure.retry_after)
        if delay >= self.remaining():
            raise self._give_up(
                failure,
                f"after {self.attempts} attempts: the next one (in {delay:.2f}s) would start "
                f"after the {self.policy.deadline_s:g}s deadline",
            )
        self.attempts += 1
        return delay

    def _give_up(self, failure: ModelUnavailable, why: str) -> ModelUnavailable:
        return ModelUnavailable(
            f"{failure.message} — gave up {why}",
            status=failure.status,
            retry_after=failure.retry_after,
            attempts=self.attempts,
        )
