"""Back-off with full jitter and the new-connection token bucket (pure logic, injected clock/rng)."""

from __future__ import annotations

import random

import pytest

from caerus.net.failures import Failure, classify, counter_name
from caerus.net.pacing import Backoff, TokenBucket
from caerus.wire import FailureClass


def test_backoff_windows_double_up_to_the_cap_and_reset() -> None:
    b = Backoff(base_s=0.5, cap_s=4.0, rng=random.Random(3))
    ceilings = []
    for _ in range(7):
        ceilings.append(b.ceiling())
        d = b.next_delay()
        assert 0.0 <= d <= ceilings[-1]
    assert ceilings == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0, 4.0]
    b.reset()
    assert b.ceiling() == 0.5


def test_backoff_is_jittered() -> None:
    b = Backoff(base_s=1.0, cap_s=1.0, rng=random.Random(1))
    delays = {round(b.next_delay(), 6) for _ in range(20)}
    assert len(delays) == 20


def test_backoff_rejects_bad_settings() -> None:
    with pytest.raises(ValueError, match="base"):
        Backoff(base_s=2.0, cap_s=1.0)


def test_token_bucket_bounds_connections_per_minute() -> None:
    now = [0.0]
    bucket = TokenBucket(per_minute=10, burst=2, clock=lambda: now[0])
    assert bucket.try_take() and bucket.try_take()
    assert not bucket.try_take()
    assert bucket.wait_time() == pytest.approx(6.0)
    taken = 0
    for _ in range(600):  # one simulated minute in 0.1 s steps, trying every step
        now[0] += 0.1
        taken += bucket.try_take()
    assert taken == 10
    assert bucket.taken == 12


def test_classify_maps_our_own_ends_and_unknowns() -> None:
    from caerus.net.failures import SessionEnded

    assert classify(SessionEnded(FailureClass.ROTATION, "x")) == Failure(FailureClass.ROTATION, 0, "x")
    assert not Failure(FailureClass.SHUTDOWN, 0, "").is_fault and Failure(FailureClass.STALE, 0, "").is_fault
    assert classify(RuntimeError("boom")).cls is FailureClass.OTHER
    assert classify(TimeoutError(), connecting=True).cls is FailureClass.CONNECT_TIMEOUT
    assert counter_name(FailureClass.HANDSHAKE_HTTP) == "fail.handshake_http"
