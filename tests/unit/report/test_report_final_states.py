"""Orders by final state and the paper PnL of confirmed fills, from EXEC records, into the headline and report."""

from __future__ import annotations

import pytest

from caerus.report.tables import count_rows
from caerus.session.collect import headline_counts
from caerus.session.orders import ConfirmedOrders
from caerus.wire import Outcome, RiskReject
from tests.fixtures.pipeline import make_exec


def test_final_states_and_pnl_from_confirmed_fills_only() -> None:
    c = ConfirmedOrders(fee_bps=0.0)
    # 1: buy 0.001, SENT then FILLED at 100.
    c.add(make_exec(1, 1, 1, 0.001, Outcome.SENT))
    c.add(make_exec(1, 1, 1, 0.001, Outcome.FILLED, fill_qty=0.001, fill_px=100.0, reply=True))
    # 2: sell 0.001, PARTIAL 0.0004 at 110 (only what filled counts: realized 0.0004 * 10).
    c.add(make_exec(2, 2, -1, 0.001, Outcome.SENT))
    c.add(make_exec(2, 2, -1, 0.001, Outcome.PARTIAL, fill_qty=0.0004, fill_px=110.0, reply=True))
    # 3: IOC not filled; 4: refused by risk; 5: UNKNOWN then resolved NOT_FILLED; 6: still UNKNOWN; 7: SENT only.
    c.add(make_exec(3, 3, 1, 0.001, Outcome.SENT))
    c.add(make_exec(3, 3, 1, 0.001, Outcome.NOT_FILLED, reply=True))
    c.add(make_exec(4, 4, 1, 0.001, Outcome.RISK_REJECTED, risk=int(RiskReject.MAX_POSITION)))
    c.add(make_exec(5, 5, 1, 0.001, Outcome.SENT))
    c.add(make_exec(5, 5, 1, 0.001, Outcome.UNKNOWN, reply=True))
    c.add(make_exec(5, 5, 1, 0.001, Outcome.NOT_FILLED, reply=True))
    c.add(make_exec(6, 6, 1, 0.001, Outcome.SENT))
    c.add(make_exec(6, 6, 1, 0.001, Outcome.SEND_FAILED, reply=True))  # disconnect with the order out
    c.add(make_exec(7, 7, 1, 0.001, Outcome.SENT))
    s = c.summary()
    assert s["orders_by_final_state"] == {"filled": 1, "partial": 1, "not_filled": 1, "rejected": 1,
                                         "unknown_resolved": 1, "unknown": 1, "sent_no_result": 1}
    assert s["realized"] == pytest.approx(0.0004 * 10.0)
    assert s["open_position"] == {"hyperliquid": pytest.approx(0.0006)}

    exec_summary = {"attached": True, "orders": 7, "confirmed": s}
    hc = headline_counts({"execution": {"paper.pnl.total": 99.0}}, exec_summary)
    assert hc["paper_pnl"] == pytest.approx(0.004) and hc["paper_pnl_engine"] == 99.0
    assert hc["orders_by_final_state"]["unknown_resolved"] == 1
    rows = {r[0]: r[1] for r in count_rows({"headline_counts": hc})}
    assert rows["orders by final_state: partial"] == "1" and rows["paper_pnl"] == "0.00"
    assert rows["paper_pnl_engine"] == "99.00"


def test_untradeable_time_per_venue_reaches_the_headline_and_the_report() -> None:
    # Issue 12 item 4: the report counts the time each venue's book was not tradeable (STALE or REJECTED).
    hc = headline_counts({"feed-binance": {"untradeable_ns": 1_500_000_000, "reject.crossed": 3},
                          "feed-hyperliquid": {"untradeable_ns": 0}, "strategy": {"untradeable_ns": 7}}, None)
    assert hc["untradeable_s_by"] == {"binance": 1.5, "hyperliquid": 0.0}
    rows = {r[0]: r[1] for r in count_rows({"headline_counts": hc, "elapsed_s": 30.0})}
    assert rows["untradeable time: binance"] == "1.500 s (5.0% of the session)"
    assert rows["untradeable time: hyperliquid"].startswith("0.000 s")
    # a venue the plan split across feed processes: its worst share, under the venue's name
    split = headline_counts({"feed-binance-1": {"untradeable_ns": 500_000_000},
                             "feed-binance-2": {"untradeable_ns": 2_000_000_000},
                             "feed-hyperliquid": {"untradeable_ns": 0}}, None)
    assert split["untradeable_s_by"] == {"binance": 2.0, "hyperliquid": 0.0}
