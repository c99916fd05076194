"""Live order entry for many instruments (issue 32 item 1), end to end against a ``caerus venue-sim`` process
emulating BTC, ETH and SOL: the session's instrument list comes from the emulator's own listings (as a session
reads them), the engine trades every instrument through the live transport of each venue, and

* each instrument's position in the engine equals the venue's, and the position watch compares them while
  trading goes on;
* when another client trades one instrument on the same account, the watch halts trading naming that
  instrument (and not the others);
* an order for an instrument outside the list is refused before it reaches the transport (and the transport
  itself refuses one before signing: the unit tests of each venue);
* on Hyperliquid, every fill of ours arrives on ``userFills`` and agrees with the reply that settled it."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import pytest

from caerus.execution.books import LatestBooks
from caerus.execution.config import RiskConfig
from caerus.execution.engine import Engine
from caerus.execution.reconcile import PositionWatch, reconcile_at_start
from caerus.execution.risk import RiskChecker
from caerus.instruments import parse_symbols
from caerus.runtime.supervisor import HaltCause, Supervisor
from caerus.session.instruments import fetch_listings, join
from caerus.wire import RiskReject
from tests.fixtures.pipeline import make_book
from tests.fixtures.transports_orders import next_reply
from tests.kit import records
from tests.kit.rings import order_ring
from tests.kit.sim_account import close_watch_rig, sim_mids, start_sim_account, until, venue_code

pytestmark = pytest.mark.integration

WAIT_S = 30.0
SYMBOLS = "BTC,ETH,SOL"


def _qty(inst: Any, mid: float) -> float:
    """A size both venues accept: a whole number of both steps, worth more than both minimums ($10 on
    Hyperliquid)."""
    step = max(inst.lot_size, 10.0 ** -inst.sz_decimals)
    return round(math.ceil(max(inst.min_notional, 10.0) * 1.5 / mid / step) * step, 8)


@pytest.mark.parametrize("venue", ["binance", "hyperliquid"])
def test_three_instruments_trade_reconcile_and_halt_by_name(venue_sim_factory: Any, shm_dir: Path,
                                                            tmp_path: Path, venue: str) -> None:
    acct = start_sim_account(venue_sim_factory, tmp_path, args=["--symbols", SYMBOLS])
    sim = acct.sim
    info, meta = fetch_listings(sim["binance_url"], sim["hyperliquid_url"], ca_file=sim["ca_file"])
    insts = join(parse_symbols(SYMBOLS), info, meta)  # the venues' own rules: asset index, szDecimals, filters
    assert insts.names == ("BTC", "ETH", "SOL") and len({i.hl_asset for i in insts}) == 3
    wire_venue = venue_code(venue)
    engine: Engine | None = None

    def on_reply(reply: Any) -> None:
        assert engine is not None
        engine.on_reply(reply)

    ours, other = acct.transport(venue, instruments=insts, on_reply=on_reply), acct.transport(venue, instruments=insts)
    mids = sim_mids(sim, venue, [(i.hl_coin, i.binance_symbol) for i in insts])
    qtys = [_qty(i, m) for i, m in zip(insts, mids, strict=True)]
    books = LatestBooks(instruments=len(insts))
    risk = RiskChecker(RiskConfig(price_band_bps=500.0, max_orders_per_s=100), books, instruments=insts)
    sup = Supervisor(on_halt=lambda cause: setattr(risk, "kill", True))
    consumer, producer = order_ring("mi.orders", 16)
    engine = Engine(consumer, ours, risk, books, reply_timeout_ms=5000.0)
    watch = PositionWatch(ours, engine, sup, interval_s=0.2, timeout_s=10.0, process="execution")
    seq = [0]

    def step() -> None:  # housekeeping, condensed
        engine.idle_work(time.time_ns())
        watch.tick()

    def push(k: int, px: float, qty: float) -> None:
        seq[0] += 1
        now = time.time_ns()
        books.put(make_book(wire_venue, px * 0.999, px * 1.001, now, symbol=k) if k < len(insts) else
                  make_book(wire_venue, px * 0.999, px * 1.001, now))
        assert producer.try_push(*records.order(seq[0], venue=wire_venue, px=px, qty=qty, t_decision=now,
                                                seq=seq[0], symbol=k))
        assert engine.step()

    try:
        ours.start()
        other.start()
        assert reconcile_at_start(ours, risk, 10.0, "execution") is not None
        assert risk.positions == [0.0, 0.0, 0.0]  # a fresh account
        for k in range(len(insts)):  # a buy through each instrument's ask: the IOC fills (maybe in part)
            push(k, mids[k] * 1.01, qtys[k])
            until(f"{insts[k].name}'s reply", lambda: not engine.pending, step)
        held = list(risk.positions)
        assert all(p > 0 for p in held), (held, ours.stats())
        # Each instrument's position is the venue's, and the watch compares them while trading goes on.
        state = ours.venue_state(10.0)
        assert state.positions == pytest.approx(held) and state.resting_by == (0.0, 0.0, 0.0)
        until("position checks", lambda: watch.checks >= 2, step)
        assert not sup.halted and watch.mismatch == "", watch.summary()
        if venue == "hyperliquid":  # every fill arrived on userFills and agrees with its reply
            until("userFills", lambda: ours.stats()["fills_confirmed"] + ours.stats()["fills_resolved"] >= 3,
                   step)
            assert ours.ledger.mismatches == 0 and ours.stats()["fills_mismatch"] == 0, ours.stats()
        # An instrument outside the list: refused before the transport, nothing sent.
        sent = ours.stats()["sent"]
        push(len(insts), mids[0], qtys[0])
        assert risk.rejects[RiskReject.UNKNOWN_INSTRUMENT] == 1 and ours.stats()["sent"] == sent
        # Another client on the same account buys ETH: that instrument's venue position moves, the engine's
        # does not; the next check halts trading naming ETH.
        assert other.send_msg(records.order(900, venue=wire_venue, px=mids[1] * 1.01, qty=qtys[1], symbol=1,
                                            t_decision=time.time_ns(), seq=1)).outcome.name == "SENT"
        assert next_reply(other, timeout=WAIT_S).fill_qty > 0
        until("the halt", lambda: sup.halted, step)
        assert sup.halt_cause == HaltCause.VENUE_MISMATCH
        assert f"position mismatch with {venue} on ETH" in watch.mismatch, watch.mismatch
        assert f"the engine's position from confirmed fills is {held[1]:+g} ETH" in watch.mismatch
        assert "BTC" not in watch.mismatch and "SOL" not in watch.mismatch
        # Every later order, whatever its instrument, is refused by the kill switch, never sent.
        sent = ours.stats()["sent"]
        push(2, mids[2] * 1.01, qtys[2])
        assert risk.rejects[RiskReject.KILL_SWITCH] == 1 and ours.stats()["sent"] == sent
        assert ours.stats()["stream_mismatch"] == 0  # the other client's order is not ours: unmatched, not wrong
    finally:
        close_watch_rig(watch, ours, other, producer, consumer)
