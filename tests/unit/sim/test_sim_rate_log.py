"""The Binance WebSocket API's request log (issue 44): pruned to the widest rate-limit window on every request,
whatever its flags, and never longer than ``REQUEST_LOG_MAX``, so a flood of unauthenticated ``time`` calls with
``returnRateLimits: false`` cannot grow the emulator's memory without bound."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from caerus.sim import orders
from caerus.sim.core.desk import REQUEST_LOG_MAX


@pytest.fixture(autouse=True)
def desk() -> Iterator[None]:
    orders.reset()
    yield
    orders.reset()


def _time(i: int, *, quiet: bool = True) -> dict:
    return {"id": i, "method": "time", "params": {"returnRateLimits": False} if quiet else {}}


def test_a_flood_without_rate_limits_keeps_only_the_last_minute() -> None:
    start, step, n = 1_700_000_000_000, 50, 5000  # one request every 50 ms for 250 s
    for i in range(n):
        reply = orders.binance_ws_api_response(_time(i), now_ms=start + i * step)
        assert "rateLimits" not in reply
    kept = list(orders.DESK.requests_ms)
    assert len(kept) == 60_000 // step  # 1200: the widest window's (ORDERS / REQUEST_WEIGHT per minute) requests
    assert kept[0][0] > start + (n - 1) * step - 60_000 and kept[-1][0] == start + (n - 1) * step
    loud = orders.binance_ws_api_response(_time(n, quiet=False), now_ms=start + n * step)
    weight = {(r["rateLimitType"], r["interval"]): r["count"] for r in loud["rateLimits"]}
    assert weight[("REQUEST_WEIGHT", "MINUTE")] == 60_000 // step  # the counts read the same pruned log


def test_a_burst_within_one_window_is_capped_at_the_log_maximum() -> None:
    now = 1_700_000_000_000
    for i in range(REQUEST_LOG_MAX + 5000):  # all in one millisecond: time alone prunes none of them
        orders.binance_ws_api_response(_time(i), now_ms=now)
    assert len(orders.DESK.requests_ms) == REQUEST_LOG_MAX
