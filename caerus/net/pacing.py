"""Connection pacing: exponential back-off with full jitter and a token bucket on new connections per minute.

Two separate limits, because they protect against different things: back-off spaces out retries after failures
(one bad venue should not be hammered), and the bucket bounds new connections per minute whatever the reason
(failures, rotations, stale reconnects), so a fault that ends every connection at once can never turn into a
reconnect storm that gets our IP banned (Hyperliquid allows 30 new connections/min per IP).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Backoff:
    """Exponential back-off with full jitter: delay = uniform(0, min(cap, base * 2**attempt))."""

    base_s: float = 0.5
    cap_s: float = 30.0
    rng: random.Random | None = None
    attempt: int = 0

    def __post_init__(self) -> None:
        if not (self.base_s > 0 and self.cap_s >= self.base_s):
            raise ValueError(f"back-off needs 0 < base ({self.base_s}) <= cap ({self.cap_s})")
        self._rng = self.rng or random.Random()

    def ceiling(self) -> float:
        return min(self.cap_s, self.base_s * (2 ** min(self.attempt, 62)))

    def next_delay(self) -> float:
        """The delay before the next attempt; each call widens the window (up to the cap)."""
        delay = self._rng.uniform(0.0, self.ceiling())
        self.attempt += 1
        return delay

    def reset(self) -> None:
        """A connection worked (delivered data): the next failure starts from the base again."""
        self.attempt = 0


class TokenBucket:
    """At most ``per_minute`` acquisitions per minute on average, bursts up to ``burst``."""

    def __init__(self, per_minute: float, burst: int = 2, clock: Callable[[], float] = time.monotonic) -> None:
        if per_minute <= 0 or burst < 1:
            raise ValueError(f"token bucket needs per_minute > 0 and burst >= 1, got {per_minute}, {burst}")
        self.rate_per_s = per_minute / 60.0
        self.burst = float(burst)
        self._clock = clock
        self._tokens = float(burst)
        self._t = clock()
        self.taken = 0

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._t) * self.rate_per_s)
        self._t = now

    def wait_time(self) -> float:
        """Seconds until a token is available (0 when one is available now)."""
        self._refill()
        return 0.0 if self._tokens >= 1.0 else (1.0 - self._tokens) / self.rate_per_s

    def try_take(self) -> bool:
        self._refill()
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            self.taken += 1
            return True
        return False

    async def take(self) -> float:
        """Wait for a token and take it; returns how long it waited (seconds)."""
        waited = 0.0
        while not self.try_take():
            delay = self.wait_time()
            waited += delay
            await asyncio.sleep(delay)
        return waited
