"""Mid-session reconciliation (issue 14 item 3), end to end: the engine and a live transport against a
``caerus venue-sim`` process. While the engine's position agrees with the venue's, the position watch compares
and lets trading go on; when another client trades on the same account (a second transport with the same keys),
the venue's position moves without the engine knowing, the next check halts trading with a message naming both
sides, and the next order is refused by the kill switch."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from caerus.execution.books import LatestBooks
from caerus.execution.config import RiskConfig
from caerus.execution.engine import Engine
from caerus.execution.reconcile import PositionWatch
from caerus.execution.risk import RiskChecker
from caerus.runtime.supervisor import HaltCause, Supervisor
from caerus.wire import RiskReject
from tests.fixtures.pipeline import make_book
from tests.fixtures.transports_orders import next_reply
from tests.kit import records
from tests.kit.rings import order_ring
from tests.kit.sim_account import close_watch_rig, sim_mid, start_sim_account, until, venue_code

pytestmark = pytest.mark.integration

WAIT_S = 30.0


@pytest.mark.parametrize("venue", ["binance", "hyperliquid"])
def test_a_position_the_engine_does_not_know_halts_trading(venue_sim_factory, shm_dir: Path, tmp_path: Path,
                                                           venue: str) -> None:
    acct = start_sim_account(venue_sim_factory, tmp_path)
    sim = acct.sim
    wire_venue = venue_code(venue)
    engine: Engine | None = None

    def on_reply(reply: Any) -> None:
        assert engine is not None
        engine.on_reply(reply)

    ours, other = acct.transport(venue, on_reply=on_reply), acct.transport(venue)
    mid = sim_mid(sim, venue)
    px = round(mid * 1.01, 1 if venue == "binance" else 0)  # through the ask: the IOC fills (maybe in part)
    books = LatestBooks()
    books.put(make_book(wire_venue, mid - 0.5, mid + 0.5, time.time_ns()))
    risk = RiskChecker(RiskConfig(price_band_bps=500.0), books)
    sup = Supervisor(on_halt=lambda cause: setattr(risk, "kill", True))
    consumer, producer = order_ring("pw.orders", 8)
    engine = Engine(consumer, ours, risk, books, reply_timeout_ms=5000.0)
    watch = PositionWatch(ours, engine, sup, interval_s=0.2, timeout_s=10.0, process="execution")
    step = lambda: (engine.idle_work(time.time_ns()), watch.tick())  # noqa: E731  (housekeeping, condensed)
    try:
        ours.start()
        other.start()
        assert producer.try_push(*records.order(1, venue=wire_venue, px=px, qty=0.002, t_decision=time.time_ns(),
                                                seq=1))
        assert engine.step()
        until("our fill", lambda: not engine.pending, step)
        held = engine.risk.position
        assert held > 0, ours.stats()
        # The watch compares while the engine is quiet: the venue agrees, trading goes on.
        until("a position check", lambda: watch.checks >= 2, step)
        assert not sup.halted and watch.mismatch == "", watch.summary()
        # Another client on the same account buys: the venue's position moves, the engine's does not.
        assert other.send_msg(records.order(500, venue=wire_venue, px=px, qty=0.002, t_decision=time.time_ns(),
                                            seq=1)).outcome.name == "SENT"
        assert next_reply(other, timeout=WAIT_S).fill_qty > 0
        until("the halt", lambda: sup.halted, step)
        assert sup.halt_cause == HaltCause.VENUE_MISMATCH
        assert f"position mismatch with {venue}" in watch.mismatch
        assert f"the engine's position from confirmed fills is {held:+g} BTC" in watch.mismatch
        assert "the venue holds +0.00" in watch.mismatch and f"holds {held:+g} BTC" not in watch.mismatch
        # Every later order is refused by the kill switch, never sent.
        sent = ours.stats()["sent"]
        assert producer.try_push(*records.order(2, venue=wire_venue, px=px, qty=0.002, t_decision=time.time_ns(),
                                                seq=2))
        assert engine.step()
        assert risk.rejects[RiskReject.KILL_SWITCH] == 1 and ours.stats()["sent"] == sent
        assert ours.stats()["stream_mismatch"] == 0  # the other client's order is not ours: unmatched, not wrong
    finally:
        close_watch_rig(watch, ours, other, producer, consumer)
