"""The paper transport and the backtest charge the venues' fees from the one schedule (caerus.fees) the emulator
charges too: Binance regular 5.0 bps taker, Hyperliquid tier 0 4.5 bps, other tiers when configured."""

from __future__ import annotations

import pytest

from caerus import config, fees
from caerus.config import ConfigError
from caerus.execution.books import LatestBooks
from caerus.execution.config import PaperConfig
from caerus.execution.transports.paper import PaperTransport
from caerus.records.exec import (
    EXEC_FILL_PX,
    EXEC_FILL_QTY,
    EXEC_ORDER_ID,
    EXEC_OUTCOME,
    EXEC_QTY,
    EXEC_SIDE,
    EXEC_VENUE,
)
from caerus.research.backtest.fills import TAKER_BPS, FillRules
from caerus.session.orders import ConfirmedOrders
from caerus.wire import EXEC, Outcome, Venue
from tests.fixtures.pipeline import make_book

T0 = 1_700_000_000_000_000_000
BN, HL = int(Venue.BINANCE), int(Venue.HYPERLIQUID)


def _order(venue: int, px: float, qty: float, oid: int = 1) -> tuple:
    return (oid, 1, venue, 1, 0, 1, BN, 0, px, qty, 7, T0 - 10_000, T0 - 5_000, T0 - 2_000, T0, oid + 1, 0, 0, 0)


def _books() -> LatestBooks:
    b = LatestBooks()
    b.put(make_book(BN, 99_999.0, 100_000.0, T0))
    b.put(make_book(HL, 99_999.0, 100_000.0, T0))
    return b


def test_the_schedule_has_the_venues_base_tiers_and_refuses_unknown_ones() -> None:
    assert (fees.maker_bps("binance"), fees.taker_bps("binance")) == (2.0, 5.0)
    assert (fees.maker_bps("hyperliquid"), fees.taker_bps("hyperliquid")) == (1.5, 4.5)
    assert fees.tier("binance", 9).taker_bps == 1.7 and fees.tier("hyperliquid", 6).taker_bps == 2.4
    assert fees.fee("binance", 0, 100_000.0 * 0.002, maker=False) == pytest.approx(0.1)  # 200 USDT x 5 bps
    with pytest.raises(ValueError, match=r"hyperliquid fee tier must be an integer 0\.\.6"):
        fees.tier("hyperliquid", 7)
    with pytest.raises(ValueError, match="no fee schedule for venue 'okx'"):
        fees.tier("okx")


def test_paper_fills_pay_each_venues_taker_rate() -> None:
    t = PaperTransport(PaperConfig(), _books())
    assert t.send_msg(_order(BN, 100_010.0, 0.002)).outcome == Outcome.FILLED
    assert t.send_msg(_order(HL, 100_010.0, 0.002, oid=2)).outcome == Outcome.FILLED
    assert t.accounts[BN].fees == pytest.approx(200.0 * 5.0e-4)  # 0.10 USDT: Binance regular taker
    assert t.accounts[HL].fees == pytest.approx(200.0 * 4.5e-4)  # 0.09 USDC: Hyperliquid tier 0 taker
    assert t.summary()["config"]["taker_fee_bps"] == {"binance": 5.0, "hyperliquid": 4.5}


def test_paper_tiers_and_a_fixed_rate_are_configurable() -> None:
    t = PaperTransport(PaperConfig(binance_fee_tier=1, hyperliquid_fee_tier=3), _books())
    assert (t.taker_bps[BN], t.taker_bps[HL]) == (4.0, 3.0)
    assert PaperTransport(PaperConfig(fee_bps=1.0), _books()).taker_bps == {BN: 1.0, HL: 1.0}
    with pytest.raises(ConfigError, match="hyperliquid_fee_tier"):
        config.convert({"hyperliquid_fee_tier": 7}, PaperConfig, "test")


def test_backtest_and_session_summary_charge_the_same_schedule() -> None:
    assert TAKER_BPS[BN] == fees.taker_bps_by_tier("binance") and TAKER_BPS[HL] == fees.taker_bps_by_tier(
        "hyperliquid")
    rules = FillRules()
    assert (rules.fee_bps_of(BN), rules.fee_bps_of(HL)) == (PaperConfig().taker_bps("binance"),
                                                             PaperConfig().taker_bps("hyperliquid"))
    confirmed = ConfirmedOrders()
    rec: list[object] = [0] * len(EXEC.names)
    rec[EXEC_ORDER_ID], rec[EXEC_VENUE], rec[EXEC_SIDE], rec[EXEC_QTY] = 5, BN, 1, 0.002
    rec[EXEC_OUTCOME], rec[EXEC_FILL_PX], rec[EXEC_FILL_QTY] = int(Outcome.FILLED), 100_000.0, 0.002
    confirmed.add(tuple(rec))
    assert confirmed.summary()["fees"] == pytest.approx(0.1)
