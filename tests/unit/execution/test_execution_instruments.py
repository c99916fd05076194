"""Execution with many instruments: books, positions and size limits per instrument; notional and rate for all."""

from __future__ import annotations

import math

import pytest

from caerus.config import ConfigError
from caerus.execution.books import LatestBooks
from caerus.execution.config import ExecutionConfig, InstrumentLimits, PaperConfig, RiskConfig
from caerus.execution.risk import RiskChecker
from caerus.execution.transports.paper import PaperTransport
from caerus.instruments import BTC, Instrument, InstrumentSet
from caerus.records.book import BOOK_BID_PX
from caerus.wire import Outcome, RiskReject, Venue
from tests.fixtures.pipeline import make_book
from tests.unit.execution.test_execution_risk_paper import T0, order

HL = int(Venue.HYPERLIQUID)
ETH = Instrument(id=1, name="ETH", binance_symbol="ETHUSDT", hl_coin="ETH", tick_size=0.01, lot_size=0.001,
                 min_qty=0.001, min_notional=20.0, hl_asset=1, sz_decimals=4)
DOGE = Instrument(id=2, name="DOGE", binance_symbol="DOGEUSDT", hl_coin="DOGE", tick_size=0.00001, lot_size=1.0,
                  min_qty=1.0, min_notional=5.0, hl_asset=2, sz_decimals=0)
THREE = InstrumentSet([BTC, ETH, DOGE])
PX = {0: 95_000.0, 1: 3_500.0, 2: 0.3, 9: 1.0}


def books_for(n: int = 3) -> LatestBooks:
    b = LatestBooks(instruments=n)
    for sym in range(n):
        b.put(make_book(HL, PX[sym], PX[sym] * 1.0001, T0, symbol=sym))
    return b


def o(oid: int, sym: int, qty: float, side: int = 1) -> tuple:
    return order(oid=oid, symbol=sym, px=PX[sym], qty=qty, side=side)


def test_books_are_kept_per_venue_and_instrument() -> None:
    b = books_for()
    bid = BOOK_BID_PX
    assert [b.book(HL, k)[bid] for k in range(3)] == [PX[0], PX[1], PX[2]]  # type: ignore[index]
    assert b.latest[HL] is b.book(HL, 0)
    b.put(make_book(HL, 1.0, 2.0, T0, symbol=7))  # an instrument the session does not trade
    assert b.other == 1 and b.book(HL, 7) is None


def test_size_limits_are_per_instrument_and_others_are_bound_by_notional() -> None:
    cfg = RiskConfig(max_order_qty=0.01, max_position=0.01, max_order_notional=2_500.0,
                     max_position_notional=2_000.0, max_total_notional=5_000.0,
                     instruments={"ETH": InstrumentLimits(max_order_qty=0.5, max_position=0.5)})
    risk = RiskChecker(cfg, books_for(), instruments=THREE)
    assert risk.check(o(1, 0, 0.02), T0) == RiskReject.MAX_ORDER_SIZE  # BTC: the top-level size limit
    assert risk.check(o(2, 1, 0.6), T0) == RiskReject.MAX_ORDER_SIZE  # ETH: its own
    assert risk.check(o(3, 2, 5_000.0), T0) == RiskReject.NONE  # DOGE: no size limit, 1500 USD
    risk.accepted(o(3, 2, 5_000.0), T0)
    assert risk.check(o(4, 2, 3_000.0), T0) == RiskReject.MAX_POSITION_NOTIONAL  # 8000 DOGE = 2400 USD > 2000
    assert risk.positions == [0.0, 0.0, 5_000.0] and risk.position == 0.0
    risk.accepted(o(5, 1, 0.5), T0)  # ETH 1750 USD: total 3250
    risk.accepted(o(6, 0, 0.01), T0)  # BTC 950: total 4200
    assert math.isclose(risk.total_notional, 4_200.0)
    assert risk.check(o(7, 2, 1_000.0), T0) == RiskReject.NONE  # 6000 DOGE = 1800 USD: 4500 in all, inside 5000
    assert risk.check(o(8, 2, 1_000.0, side=-1), T0) == RiskReject.NONE  # reducing is always inside the caps


def test_the_total_notional_holds_across_instruments() -> None:
    cfg = RiskConfig(max_position_notional=2_000.0, max_total_notional=3_000.0, max_orders_per_s=20)
    risk = RiskChecker(cfg, books_for(), instruments=THREE)
    risk.accepted(o(1, 2, 6_000.0), T0)  # 1800 USD of DOGE
    assert risk.check(o(2, 1, 0.4), T0) == RiskReject.MAX_TOTAL_NOTIONAL  # + 1400 of ETH = 3200 > 3000
    assert risk.check(o(3, 1, 0.3), T0) == RiskReject.NONE  # + 1050 = 2850
    risk.accepted(o(3, 1, 0.3), T0)
    # a partial result gives notional back: the unfilled 4000 DOGE leave 600 USD of it
    risk.on_result(o(1, 2, 6_000.0), 2_000.0)
    assert math.isclose(risk.total_notional, 600.0 + 1_050.0)
    assert risk.check(o(4, 9, 1.0), T0) == RiskReject.UNKNOWN_INSTRUMENT


def test_the_order_rate_is_one_window_for_every_instrument() -> None:
    risk = RiskChecker(RiskConfig(max_orders_per_s=2), books_for(), instruments=THREE)
    for i, sym in enumerate((1, 2)):
        assert risk.check(o(i + 1, sym, 0.01 if sym == 1 else 10.0), T0) == RiskReject.NONE
        risk.accepted(o(i + 1, sym, 0.01 if sym == 1 else 10.0), T0)
    assert risk.check(o(3, 0, 0.001), T0 + 1) == RiskReject.MAX_ORDER_RATE


def test_paper_fills_each_instrument_against_its_own_book() -> None:
    b = books_for()
    paper = PaperTransport(PaperConfig(), b)
    res = paper.send_msg(order(oid=1, symbol=1, px=3_600.0, qty=0.5))
    assert res.outcome == Outcome.FILLED and res.fill_px == pytest.approx(3_500.35)
    assert paper.instrument_accounts[(HL, 1)].position == 0.5 and paper.accounts[HL].position == 0.0
    assert paper.summary()["instruments"]["1"]["hyperliquid"]["position"] == 0.5  # type: ignore[index]


def test_limits_for_instruments_the_session_does_not_trade_are_refused() -> None:
    cfg = ExecutionConfig(risk=RiskConfig(instruments={"XRP": InstrumentLimits(max_order_qty=1, max_position=2)}))
    with pytest.raises(ValueError, match="XRP"):
        RiskChecker(cfg.risk, books_for(), instruments=THREE)
    with pytest.raises(ConfigError, match=r"ETH\.max_order_qty"):
        limits = {"ETH": InstrumentLimits(max_order_qty=3, max_position=2)}
        ExecutionConfig(risk=RiskConfig(instruments=limits)).check()
