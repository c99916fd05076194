"""No order left in limbo, end to end (issue 14 item 4): the engine and a live transport against a
``caerus venue-sim`` process whose order entry executes the first order and never answers it (scenario
``lost-reply``). The order passes its reply deadline, becomes UNKNOWN (counted in full toward the position), the
engine asks the venue (Binance ``order.status`` by client order id, Hyperliquid ``orderStatus`` by cloid) and
settles it from the answer; the order itself is sent exactly once."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from caerus.execution.books import LatestBooks
from caerus.execution.config import RiskConfig
from caerus.execution.engine import EXEC_FLAG_REPLY, Engine
from caerus.execution.risk import RiskChecker
from caerus.records.exec import EXEC_FILL_QTY, EXEC_FLAGS, EXEC_OUTCOME
from caerus.wire import Outcome
from tests.fixtures.pipeline import make_book
from tests.kit import records
from tests.kit.rings import exec_ring, order_ring
from tests.kit.sim_account import sim_mid, start_sim_account, venue_code

pytestmark = pytest.mark.integration

WAIT_S = 30.0


@pytest.mark.parametrize("venue", ["binance", "hyperliquid"])
def test_a_lost_reply_is_resolved_by_a_status_query_without_a_second_order(venue_sim_factory, shm_dir: Path,
                                                                          tmp_path: Path, venue: str) -> None:
    acct = start_sim_account(venue_sim_factory, tmp_path, scenario="lost-reply")
    sim = acct.sim
    engine: Engine | None = None

    def on_reply(reply: Any) -> None:
        assert engine is not None
        engine.on_reply(reply)

    transport = acct.transport(venue, on_reply=on_reply)
    wire_venue = venue_code(venue)
    mid = sim_mid(sim, venue)
    books = LatestBooks()
    books.put(make_book(wire_venue, mid - 0.5, mid + 0.5, time.time_ns()))
    consumer, producer = order_ring("sq.orders", 8)
    exec_w, exec_r = exec_ring("sq.exec", 64)
    engine = Engine(consumer, transport, RiskChecker(RiskConfig(), books), books, exec_w, reply_timeout_ms=1000.0)
    try:
        transport.start()
        now = time.time_ns()
        px = round(mid * 1.002, 1 if venue == "binance" else 0)  # through the ask: the IOC fills
        assert producer.try_push(*records.order(7, venue=wire_venue, px=px, qty=0.002, t_decision=now, seq=1))
        assert engine.step()
        deadline = time.monotonic() + WAIT_S
        while engine.pending and time.monotonic() < deadline:
            engine.idle_work(time.time_ns())
            time.sleep(0.01)
        outcomes = []
        while (rec := exec_r.read_next()) is not None:
            outcomes.append((Outcome(rec[EXEC_OUTCOME]), bool(rec[EXEC_FLAGS] & EXEC_FLAG_REPLY),
                             rec[EXEC_FILL_QTY]))
        stats = transport.stats()
    finally:
        transport.close()
        exec_r.close()
        exec_w.close(unlink=True)
        producer.close()
        consumer.close(unlink=True)
    assert not engine.pending, f"the order was never resolved: {stats}"
    # Sent once, its reply lost, UNKNOWN at the deadline, then settled by the venue's own record of it.
    # (PARTIAL when the emulated touch was smaller than the order: the IOC rest expired.)
    assert [o for o, _, _ in outcomes[:2]] == [Outcome.SENT, Outcome.UNKNOWN], outcomes
    assert len(outcomes) == 3 and outcomes[-1][0] in (Outcome.FILLED, Outcome.PARTIAL), outcomes
    fill = outcomes[-1][2]
    assert outcomes[-1][1] and 0 < fill <= 0.002
    assert stats["sent"] == 1 and stats["queries"] >= 1 and stats["query_answers"] == 1, stats
    assert (engine.orders_timed_out, engine.resolved_by_query, engine.unknown) == (1, 1, set())
    assert engine.risk.position == pytest.approx(fill)  # the confirmed fill, not the worst case or zero
