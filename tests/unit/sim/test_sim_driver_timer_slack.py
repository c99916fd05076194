"""The market driver's thread sleeps with a 1 ns timer slack, so its precise sleep before each event is not fired
up to the kernel's default 50 us late."""

from __future__ import annotations

import asyncio
import contextlib
import threading

from caerus.ipc.wait import SLEEP_TIMER_SLACK_NS, set_timer_slack, timer_slack
from caerus.sim.core.driver import MarketDriver
from caerus.sim.core.hub import Topics
from caerus.sim.core.market import MarketConfig, MarketModel


def test_the_driver_runs_with_the_least_timer_slack() -> None:
    seen: list[tuple[int, int]] = []

    def run() -> None:
        set_timer_slack(50_000)
        before = timer_slack()
        drv = MarketDriver(MarketModel(MarketConfig(seed=2)), Topics())
        with contextlib.suppress(TimeoutError):
            asyncio.run(asyncio.wait_for(drv.run(), 0.2))
        seen.append((before, timer_slack()))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(20.0)
    assert not t.is_alive() and seen, "the driver's thread did not finish"
    assert seen[0] == (50_000, SLEEP_TIMER_SLACK_NS)
