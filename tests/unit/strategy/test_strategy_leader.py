"""Which venue leads is a per-instrument parameter (issue 32 item 5): with ``[instruments.ETH] leader =
"hyperliquid"`` the ETH decision state takes entries on Hyperliquid books (the basis is Hyperliquid's mid over
Binance's), while BTC keeps the default Binance lead; a move of the lagging venue alone fires nothing."""

from __future__ import annotations

import pytest

from caerus.config import ConfigError, load_config
from caerus.instruments import BTC, Instrument, InstrumentSet
from caerus.strategy.config import InstrumentParams, StrategyConfig
from caerus.strategy.instrument_desk import Desk
from caerus.wire import OrderReason, Side, Venue
from tests.fixtures.pipeline import make_book

T0 = 1_700_000_000_000_000_000
MS = 1_000_000
HL, BN = int(Venue.HYPERLIQUID), int(Venue.BINANCE)
ETH = Instrument(id=1, name="ETH", binance_symbol="ETHUSDT", hl_coin="ETH", tick_size=0.01, lot_size=0.001,
                 min_qty=0.001, min_notional=20.0, hl_asset=1, sz_decimals=4)


def _book(desk: Desk, sym: int, venue: int, mid: float, t: int) -> tuple | None:
    return desk.arbs[sym].on_book(make_book(venue, mid * 0.99995, mid * 1.00005, t, symbol=sym), t)


def test_hyperliquid_leading_one_instrument_fires_on_its_hyperliquid_books_only() -> None:
    desk = Desk(StrategyConfig(warmup_ms=0, cooldown_ms=0,
                               instruments={"ETH": InstrumentParams(leader="hyperliquid")}),
                InstrumentSet([BTC, ETH]))
    for sym, mid in ((0, 95_000.0), (1, 3_500.0)):  # both venues flat: no basis yet
        assert _book(desk, sym, HL, mid, T0) is None
        assert _book(desk, sym, BN, mid, T0) is None
    # Hyperliquid moves 20 bps up on both instruments. ETH (Hyperliquid leads): an entry on that book, long.
    # BTC (Binance leads): a Hyperliquid move alone is no lead.
    eth = _book(desk, 1, HL, 3_507.0, T0 + 10 * MS)
    btc = _book(desk, 0, HL, 95_190.0, T0 + 10 * MS)
    assert eth is not None and (eth[0], eth[1]) == (int(Side.BUY), int(OrderReason.ENTRY))
    assert btc is None
    assert desk.arbs[1].basis == pytest.approx((3_507.0 - 3_500.0) / 3_500.0 * 1e4)
    # Binance alone moves on both (a fresh desk): BTC (Binance leads) fires on its Binance book; ETH takes no
    # entry on a Binance book, whatever the basis does.
    desk2 = Desk(StrategyConfig(warmup_ms=0, cooldown_ms=0,
                                instruments={"ETH": InstrumentParams(leader="hyperliquid")}),
                 InstrumentSet([BTC, ETH]))
    for sym, mid in ((0, 95_000.0), (1, 3_500.0)):
        _book(desk2, sym, HL, mid, T0)
        _book(desk2, sym, BN, mid, T0)
    eth_bn = _book(desk2, 1, BN, 3_493.0, T0 + 10 * MS)  # Binance alone moves on ETH: the lagger, no entry
    btc_bn = _book(desk2, 0, BN, 95_190.0, T0 + 10 * MS)  # Binance leads BTC: an entry on its Binance book
    assert eth_bn is None
    assert btc_bn is not None and (btc_bn[0], btc_bn[1]) == (int(Side.BUY), int(OrderReason.ENTRY))


def test_the_leader_is_named_as_a_venue(tmp_path) -> None:
    f = tmp_path / "strategy.toml"
    f.write_text('[instruments.ETH]\nleader = "okx"\n')
    with pytest.raises(ConfigError, match="leader"):
        load_config(StrategyConfig, f, "strategy")
