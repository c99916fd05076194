"""The emulated venues charge fees by tier (issue 51 item 1), in every place the venue reports them: Binance
order updates (``n``, ``N``), userTrades ``commission``, ``commissionRate``, the account's ``feeTier`` and wallet;
Hyperliquid fills' ``fee`` / ``feeToken``, ``userFees``, and the account value. The rates are caerus.fees', the
schedule the paper transport and the backtest charge too."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from caerus import fees
from caerus.sim import orders
from caerus.sim.binance.trading import BinanceTradingRest
from caerus.sim.core.config import EmulatorConfig
from caerus.sim.hyperliquid.rest import user_fees
from caerus.venues.hyperliquid.signing import order_action, order_wire, sign_l1_action_reference
from tests.kit.sim_desk import binance_call, desk_open, now_ms

HL_KEY = "0x" + "22" * 32
_nonces = iter(range(10**9))


@pytest.fixture(autouse=True)
def desk() -> Iterator[None]:
    with desk_open(HL_KEY):
        yield


def _hl(is_buy: bool, px: float, sz: float, tif: str) -> dict[str, Any]:
    nonce = now_ms() + next(_nonces)
    action = order_action([order_wire(0, is_buy, px, sz, tif=tif)])
    sig = sign_l1_action_reference(HL_KEY, action, None, nonce, is_mainnet=False)
    reply = orders.hyperliquid_action({"action": action, "nonce": nonce, "signature": sig})
    assert isinstance(reply, dict) and reply["status"] == "ok", reply
    return reply["response"]["data"]["statuses"][0]


def test_binance_taker_and_maker_fills_pay_the_regular_tier_everywhere_it_is_reported() -> None:
    assert binance_call("order.place", side="BUY", type="MARKET", quantity="0.010")["result"]["status"] == "FILLED"
    resting = binance_call("order.place", side="SELL", type="LIMIT", timeInForce="GTC", price="101000.0",
                           quantity="0.010")
    orders.drain_events("binance")
    orders.update_book("binance", 101_000.0, 5.0, 101_010.0, 5.0)  # the resting sell is reached: a maker fill
    trade = next(e["o"] for e in orders.drain_events("binance") if e["e"] == "ORDER_TRADE_UPDATE")
    assert trade["i"] == resting["result"]["orderId"] and trade["m"] is True
    assert (trade["n"], trade["N"]) == ("0.20200000", "USDT")  # 2.0 bps of 1010 USDT
    taker, maker = reversed([t for t in orders.DESK.ledger.fills["binance"]])
    assert (taker["commission"], taker["commissionAsset"], taker["maker"]) == ("0.50000000", "USDT", False)
    assert (maker["commission"], maker["maker"]) == ("0.20200000", True)
    account = binance_call("v2/account.status")["result"]
    assert account["feeTier"] == 0
    assert float(account["totalWalletBalance"]) == pytest.approx(orders.DESK.ledger.start_balance + 10.0 - 0.702)
    rate = orders.binance_commission_rate("BTCUSDT")
    assert (rate["makerCommissionRate"], rate["takerCommissionRate"]) == ("0.0002", "0.0005")


def test_binance_vip_tier_is_what_every_fill_pays() -> None:
    orders.configure_venue(binance_fee_tier=3)
    binance_call("order.place", side="BUY", type="MARKET", quantity="0.010")
    (fill,) = orders.DESK.ledger.fills["binance"]
    assert fill["commission"] == f"{1000.0 * 3.2e-4:.8f}"  # VIP 3 taker: 3.2 bps
    assert binance_call("v2/account.status")["result"]["feeTier"] == 3
    assert orders.binance_commission_rate("BTCUSDT")["takerCommissionRate"] == "0.00032"


def test_binance_commission_rate_over_rest_names_a_bad_symbol() -> None:
    assert BinanceTradingRest._commission_rate({"symbol": "NOPEUSDT"}).status == 400


def test_hyperliquid_fills_pay_taker_when_crossing_maker_when_resting_and_user_fees_agrees() -> None:
    assert "filled" in _hl(True, 100_500, 0.01, "Ioc")  # crossed at 100000: 1000 USDC x 4.5 bps
    oid = _hl(False, 101_000, 0.01, "Gtc")["resting"]["oid"]
    orders.update_book("hyperliquid", 101_000.0, 5.0, 101_010.0, 5.0)  # reached: a maker fill
    maker, taker = list(orders.DESK.ledger.fills["hyperliquid"])[:2]
    assert (taker["fee"], taker["feeToken"], taker["crossed"]) == ("0.45", "USDC", True)
    assert (maker["fee"], maker["crossed"], maker["oid"]) == ("0.1515", False, oid)  # 1010 x 1.5 bps
    assert float(maker["closedPnl"]) == pytest.approx(10.0)  # before the fee, as the venue reports it
    state = orders.hyperliquid_clearinghouse_state(now_ms())
    assert float(state["marginSummary"]["accountValue"]) == pytest.approx(
        orders.DESK.ledger.start_balance + 10.0 - 0.45 - 0.1515)
    got = user_fees()
    assert (got["userCrossRate"], got["userAddRate"]) == ("0.00045", "0.00015")
    assert got["feeSchedule"]["tiers"]["vip"][0] == {"ntlCutoff": "5000000.0", "cross": "0.0004", "add": "0.00012"}


def test_hyperliquid_tier_configured_is_charged_and_reported() -> None:
    orders.configure_venue(hl_fee_tier=2)
    _hl(True, 100_500, 0.01, "Ioc")
    assert orders.DESK.ledger.fills["hyperliquid"][0]["fee"] == "0.35"  # 3.5 bps of 1000
    assert (user_fees()["userCrossRate"], user_fees()["userAddRate"]) == ("0.00035", "0.00008")


def test_a_tier_the_venue_does_not_have_is_refused_before_anything_starts(tmp_path: Any) -> None:
    with pytest.raises(ValueError, match=r"binance_fee_tier: binance fee tier must be an integer 0\.\.9"):
        EmulatorConfig(cert_dir=tmp_path, binance_fee_tier=10).validate()
    with pytest.raises(ValueError, match="hl_fee_tier"):
        EmulatorConfig(cert_dir=tmp_path, hl_fee_tier=-1).validate()
    assert fees.tier("hyperliquid", 0).taker_bps == 4.5
