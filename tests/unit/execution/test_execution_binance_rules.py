"""The Binance transport's per-instrument order rules (issue 32): each order's symbol, tick and lot come from the
session's instrument list, and an order below the symbol's minimum quantity or notional, or for an instrument
outside the list, is refused before it is signed."""

from __future__ import annotations

import secrets

import pytest

from caerus.instruments import Instrument, InstrumentSet
from caerus.venuekit.credentials import Secret
from caerus.venues.binance.credentials import BinanceCredentials
from caerus.venues.binance.execution import BinanceTransport
from caerus.wire import Outcome, Venue
from tests.kit import records

BTC = Instrument(id=0, name="BTC", binance_symbol="BTCUSDT", hl_coin="BTC", tick_size=0.1, lot_size=0.001,
                 min_qty=0.001, min_notional=100.0, hl_asset=0, sz_decimals=5)
DOGE = Instrument(id=1, name="DOGE", binance_symbol="DOGEUSDT", hl_coin="DOGE", tick_size=0.00002, lot_size=1.0,
                  min_qty=1.0, min_notional=5.0, hl_asset=2, sz_decimals=0)


def _transport() -> BinanceTransport:
    creds = BinanceCredentials(Secret(secrets.token_hex(32)), Secret(secrets.token_hex(32)))
    return BinanceTransport(network="testnet", enable_live=True, url="wss://127.0.0.1:9/ws-fapi/v1",
                            credentials=creds, instruments=InstrumentSet([BTC, DOGE]))


def _order(sym: int, px: float, qty: float) -> tuple:
    return records.order(5, venue=int(Venue.BINANCE), px=px, qty=qty, symbol=sym)


def test_each_order_carries_its_instruments_symbol_tick_and_lot() -> None:
    t = _transport()
    btc = t.build_request(_order(0, 95_000.04, 0.0029), 1, 1)["params"]
    doge = t.build_request(_order(1, 0.123457, 41.7), 2, 1)["params"]
    assert (btc["symbol"], btc["price"], btc["quantity"]) == ("BTCUSDT", "95000.0", "0.002")  # lot: rounded down
    assert (doge["symbol"], doge["price"], doge["quantity"]) == ("DOGEUSDT", "0.12346", "41")  # tick 0.00002


@pytest.mark.parametrize(("sym", "px", "qty", "why"), [
    (0, 95_000.0, 0.0009, "below_minimum"),  # under the lot: nothing left
    (0, 40_000.0, 0.002, "below_minimum"),  # $80 < the $100 minimum notional
    (1, 0.12, 30.0, "below_minimum"),  # $3.6 < $5
    (2, 1.0, 1.0, "unknown_instrument"),
], ids=["qty", "btc-notional", "doge-notional", "unlisted"])
def test_an_order_the_venue_would_refuse_is_refused_before_it_is_signed(sym: int, px: float, qty: float,
                                                                       why: str) -> None:
    t = _transport()
    assert t.send_msg(_order(sym, px, qty)).outcome == Outcome.SEND_FAILED
    assert t.reply_counts[why] == 1 and t.send_failed == 1 and not t._pending and not t.ledger._awaiting
