"""The retry policy: backoff bounds, Retry-After parsing, and the absolute deadline."""

from __future__ import annotations

import email.utils
import random
import time

import pytest

from tidegate.models import ModelUnavailable, RetryPolicy
from tidegate.models.retry import RetryClock, retry_after_seconds


def test_backoff_doubles_up_to_the_cap_with_bounded_jitter() -> None:
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=5.0, jitter=0.5)
    rng = random.Random(7)
    for retry, step in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 5.0), (9, 5.0)]:
        delays = [policy.backoff(retry, rng) for _ in range(50)]
        assert all(step * 0.5 <= d <= step for d in delays)
        assert len(set(delays)) > 1
    assert RetryPolicy(base_delay_s=1.0, jitter=0.0).backoff(3, rng) == 4.0


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after-ms": "250"}, 0.25),
        ({"Retry-After": "3"}, 3.0),
        ({"retry-after": "1.5", "retry-after-ms": "100"}, 0.1),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_forms(headers: dict[str, str], expected: float | None) -> None:
    assert retry_after_seconds(headers) == expected


def test_retry_after_as_an_http_date() -> None:
    now = time.time()
    header = email.utils.formatdate(now + 30, usegmt=True)
    assert 28 <= (retry_after_seconds({"retry-after": header}, now=now) or 0) <= 31


def failure(retry_after: float | None = None) -> ModelUnavailable:
    return ModelUnavailable("x: HTTP 503: down", status=503, retry_after=retry_after)


def test_the_clock_gives_up_after_max_attempts() -> None:
    clock = RetryClock(RetryPolicy(max_attempts=3, base_delay_s=0.0, deadline_s=60))
    clock.next_delay(failure())
    clock.next_delay(failure())
    with pytest.raises(ModelUnavailable, match="after 3 attempts") as caught:
        clock.next_delay(failure())
    assert caught.value.attempts == 3 and caught.value.status == 503


def test_the_clock_honours_retry_after_but_not_past_the_deadline() -> None:
    clock = RetryClock(RetryPolicy(base_delay_s=0.01, jitter=0.0, deadline_s=10))
    assert clock.next_delay(failure(retry_after=2.0)) == 2.0
    with pytest.raises(ModelUnavailable, match="deadline"):
        clock.next_delay(failure(retry_after=11.0))
