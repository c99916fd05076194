"""The emulated order desk's life cycle (issue 33): cancel, modify, market orders, resting orders the market fills,
scheduleCancel, leverage, the account ledger's PnL and direction labels, and the venues' own rejections."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from caerus.sim import orders
from caerus.sim.core import price_band
from caerus.sim.core.ledger import Ledger, hl_direction
from caerus.venues.binance.signing import BinanceHmacSigner, sign_params
from caerus.venues.hyperliquid.signing import order_action, order_wire, sign_l1_action_reference
from tests.kit.sim_desk import API_KEY, HL_KEY, SECRET, desk_open, now_ms


@pytest.fixture(autouse=True)
def desk() -> Iterator[None]:
    with desk_open():
        yield


_clock = iter(range(10**9))  # distinct nonces for actions signed within one millisecond


def _b(method: str, **params: Any) -> dict[str, Any]:
    now = now_ms()
    base = {"apiKey": API_KEY, "symbol": "BTCUSDT", "timestamp": now, **params}
    reply = orders.binance_ws_api_response(
        {"id": 1, "method": method, "params": sign_params(base, BinanceHmacSigner(SECRET))}, now_ms=now)
    return reply


def _place(**overrides: Any) -> dict[str, Any]:
    params = {"side": "BUY", "type": "LIMIT", "timeInForce": "GTC", "price": "97000.0", "quantity": "0.010",
              **overrides}
    return _b("order.place", **{k: v for k, v in params.items() if v is not None})


def _hl(action: dict[str, Any]) -> dict[str, Any]:
    nonce = now_ms() + next(_clock)
    sig = sign_l1_action_reference(HL_KEY, action, None, nonce, is_mainnet=False)
    reply = orders.hyperliquid_action({"action": action, "nonce": nonce, "signature": sig})
    assert isinstance(reply, dict), reply
    return reply


def _hl_order(is_buy: bool, px: float, sz: float, tif: str = "Gtc", reduce_only: bool = False) -> dict[str, Any]:
    return _hl(order_action([order_wire(0, is_buy, px, sz, tif=tif, reduce_only=reduce_only)]))


# -- Binance -----------------------------------------------------------------------------------------------------
def test_binance_cancel_ends_a_resting_order_once_and_tells_the_user_stream() -> None:
    placed = _place()["result"]
    assert placed["status"] == "NEW"
    orders.drain_events("binance")
    cancelled = _b("order.cancel", orderId=placed["orderId"])
    assert cancelled["result"]["status"] == "CANCELED"
    assert [e["o"]["x"] for e in orders.drain_events("binance")] == ["CANCELED"]
    assert _b("order.status", orderId=placed["orderId"])["result"]["status"] == "CANCELED"
    again = _b("order.cancel", orderId=placed["orderId"])
    assert again["error"]["code"] == -2011


def test_binance_cancel_by_client_id_and_unknown_order() -> None:
    _place(newClientOrderId="mine-1")
    assert _b("order.cancel", origClientOrderId="mine-1")["result"]["status"] == "CANCELED"
    assert _b("order.cancel", orderId=12345)["error"]["code"] == -2011


def test_binance_modify_keeps_the_order_id_and_a_crossing_modify_fills() -> None:
    placed = _place()["result"]
    moved = _b("order.modify", orderId=placed["orderId"], side="BUY", quantity="0.010", price="98000.0")
    assert moved["result"]["orderId"] == placed["orderId"] and moved["result"]["price"] == "98000.0"
    assert moved["result"]["status"] == "NEW"
    assert _b("order.modify", orderId=placed["orderId"], side="BUY", quantity="0.010",
              price="98000.0")["error"]["code"] == -5027
    crossed = _b("order.modify", orderId=placed["orderId"], side="BUY", quantity="0.010", price="100000.0")
    assert crossed["result"]["status"] == "FILLED"
    assert orders.position("binance") == (0.01, 100_000.0)


def test_binance_market_order_fills_at_the_touch_and_refuses_a_price() -> None:
    filled = _place(type="MARKET", timeInForce=None, price=None, side="SELL")["result"]
    assert filled["status"] == "FILLED" and float(filled["avgPrice"]) == 99_990.0
    assert orders.position("binance")[0] == -0.01
    assert _place(type="MARKET", timeInForce=None, price="90000.0")["error"]["code"] == -1106


@pytest.mark.parametrize(("overrides", "code"), [
    ({"quantity": "0.001", "price": "97000.0"}, -4164),  # 97 USDT < 100 minimum notional
    ({"recvWindow": 60001}, -1131),
    ({"timeInForce": "GTX", "price": "100000.0"}, -5022),  # post-only that would take liquidity
    ({"reduceOnly": "true"}, -2022),  # nothing to reduce
], ids=["minNotional", "recvWindow>60000", "crossing-GTX", "reduceOnly-without-position"])
def test_binance_refuses_what_the_venue_refuses(overrides: dict[str, Any], code: int) -> None:
    reply = _place(**overrides)
    assert reply["status"] == 400 and reply["error"]["code"] == code, reply


@pytest.mark.parametrize(("side", "price", "code", "msg"), [
    ("BUY", "104994.8", -4016, "Limit price can't be higher than 104994.7."),  # mark 99995 x 1.05 = 104994.75
    ("SELL", "104994.8", -4016, "Limit price can't be higher than 104994.7."),
    ("BUY", "94995.2", -4024, "Limit price can't be lower than 94995.3."),  # mark 99995 x 0.95 = 94995.25
    ("SELL", "94995.2", -4024, "Limit price can't be lower than 94995.3."),
])
def test_binance_percent_price_band_around_the_mark(side: str, price: str, code: int, msg: str) -> None:
    """PERCENT_PRICE from exchangeInfo (1.05 / 0.95 of the mark, the desk's mid 99995): a LIMIT price past either
    bound is refused with the venue's code, the message naming the bound on the tick; at the bound it is taken."""
    reply = _place(side=side, price=price, timeInForce="GTC")
    assert reply["status"] == 400 and reply["error"] == {"code": code, "msg": msg}, reply
    inside = msg.rsplit(" ", 1)[1].rstrip(".")
    assert "result" in _place(side=side, price=inside, timeInForce="GTC")


def test_binance_percent_price_band_on_modify_and_not_on_market_orders() -> None:
    placed = _place()["result"]
    moved = _b("order.modify", orderId=placed["orderId"], side="BUY", quantity="0.010", price="90000.0")
    assert moved["error"]["code"] == -4024 and moved["error"]["msg"] == "Limit price can't be lower than 94995.3."
    assert _b("order.status", orderId=placed["orderId"])["result"]["price"] == "97000.0"  # unchanged
    assert _place(type="MARKET", timeInForce=None, price=None)["result"]["status"] == "FILLED"  # no price: no band


def test_binance_duplicate_client_order_id_is_refused_while_the_first_is_open() -> None:
    assert _place(newClientOrderId="dup")["result"]["status"] == "NEW"
    assert _place(newClientOrderId="dup")["error"]["code"] == -4116
    _b("order.cancel", origClientOrderId="dup")
    assert _place(newClientOrderId="dup")["result"]["status"] == "NEW"  # unique among open orders only


def test_binance_resting_order_fills_when_the_market_crosses_it_and_the_wallet_moves() -> None:
    _place(type="MARKET", timeInForce=None, price=None)  # long 0.01 at 100000
    sell = _place(side="SELL", price="101000.0")["result"]
    orders.drain_events("binance")
    orders.update_book("binance", 101_000.0, 5.0, 101_010.0, 5.0)  # the bid reaches the resting sell
    events = orders.drain_events("binance")
    trade = next(e for e in events if e["e"] == "ORDER_TRADE_UPDATE")["o"]
    assert trade["x"] == "TRADE" and trade["X"] == "FILLED" and trade["i"] == sell["orderId"] and trade["m"]
    assert float(trade["rp"]) == pytest.approx(10.0)  # (101000 - 100000) * 0.01, before the commission
    # regular tier: the market buy paid the taker rate (5 bps of 1000), the resting sell the maker rate (2 bps of 1010)
    assert (trade["n"], trade["N"]) == ("0.20200000", "USDT")
    account = next(e for e in events if e["e"] == "ACCOUNT_UPDATE")["a"]
    assert float(account["B"][0]["wb"]) == pytest.approx(orders.DESK.ledger.start_balance + 10.0 - 0.5 - 0.202)
    assert float(account["P"][0]["pa"]) == 0.0
    balance = _b("v2/account.balance")["result"][0]
    assert float(balance["balance"]) == pytest.approx(orders.DESK.ledger.start_balance + 10.0 - 0.702)


def test_binance_account_reports_equity_from_positions_and_marks() -> None:
    _place(type="MARKET", timeInForce=None, price=None)  # long 0.01 at 100000
    orders.update_book("binance", 100_990.0, 5.0, 101_010.0, 5.0)  # mark 101000
    acct = _b("v2/account.status")["result"]
    assert float(acct["totalUnrealizedProfit"]) == pytest.approx(10.0)
    # equity = wallet (start less the market buy's 0.5 USDT taker commission) + unrealised PnL
    assert float(acct["totalMarginBalance"]) == pytest.approx(orders.DESK.ledger.start_balance - 0.5 + 10.0)
    assert float(acct["totalInitialMargin"]) == pytest.approx(101_000 * 0.01 / 20)
    assert acct["feeTier"] == 0


def test_bands_positions_and_pnl_measure_from_the_markets_mark_not_the_mid() -> None:
    """The driver passes each top's mark (caerus.sim.core.marks); the desk's band, position mark and unrealised PnL use
    it (here 101000 while the mid is 99995)."""
    _place(type="MARKET", timeInForce=None, price=None)  # long 0.01 at 100000
    orders.update_book("binance", 99_990.0, 5.0, 100_000.0, 5.0, mark=101_000.0)
    assert orders.mark("binance") == 101_000.0
    # 0.95 x 101000 = 95950: refused below it (from the mid it would have been 94995.3)
    assert _place(price="95000.0")["error"] == {"code": -4024, "msg": "Limit price can't be lower than 95950.0."}
    (pos,) = _b("v2/account.position")["result"]
    assert float(pos["markPrice"]) == 101_000.0 and float(pos["unRealizedProfit"]) == pytest.approx(10.0)
    assert float(_b("v2/account.status")["result"]["totalUnrealizedProfit"]) == pytest.approx(10.0)
    orders.update_book("hyperliquid", 99_990.0, 5.0, 100_000.0, 5.0, mark=30_000.0)
    (status,) = _hl_order(True, 55_000.0, 0.001)["response"]["data"]["statuses"]
    assert status == {"error": price_band.HL_BAND_ERROR}  # more than 80% above the mark 30000 (not from the mid)


# -- Hyperliquid -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("is_buy", "px", "refused"), [
    (True, 180_100.0, True), (False, 180_100.0, True), (True, 19_900.0, True), (False, 19_900.0, True),
    (False, 179_900.0, False), (True, 20_100.0, False),
])
def test_hyperliquid_price_more_than_80_percent_from_the_reference_is_refused(is_buy: bool, px: float,
                                                                             refused: bool) -> None:
    """The reference is the mark (here the desk's mid, 99995, as no mark was passed): more than 80% away either
    way is the venue's error; a price inside the band rests (it crosses nothing)."""
    (status,) = _hl_order(is_buy, px, 0.001)["response"]["data"]["statuses"]
    if refused:
        assert status == {"error": "Order price cannot be more than 80% away from the reference price"}
    else:
        assert "resting" in status, status


def test_hyperliquid_cancel_and_cancel_by_cloid() -> None:
    oid = _hl_order(True, 90_000.0, 0.001)["response"]["data"]["statuses"][0]["resting"]["oid"]
    ok = _hl({"type": "cancel", "cancels": [{"a": 0, "o": oid}]})
    assert ok == {"status": "ok", "response": {"type": "cancel", "data": {"statuses": ["success"]}}}
    again = _hl({"type": "cancel", "cancels": [{"a": 0, "o": oid}]})
    assert "never placed" in again["response"]["data"]["statuses"][0]["error"]
    assert orders.hyperliquid_open_orders() == []
    cloid = "0x" + "12" * 16
    action = order_action([order_wire(0, True, 90_000.0, 0.001, tif="Gtc", cloid=cloid)])
    assert "resting" in _hl(action)["response"]["data"]["statuses"][0]
    by_cloid = _hl({"type": "cancelByCloid", "cancels": [{"asset": 0, "cloid": cloid}]})
    assert by_cloid["response"]["data"]["statuses"] == ["success"]


def test_hyperliquid_modify_replaces_the_order() -> None:
    oid = _hl_order(True, 90_000.0, 0.001)["response"]["data"]["statuses"][0]["resting"]["oid"]
    wire = order_wire(0, True, 91_000.0, 0.002, tif="Gtc")
    assert _hl({"type": "modify", "oid": oid, "order": wire}) == {"status": "ok", "response": {"type": "default"}}
    (open_order,) = orders.hyperliquid_open_orders()
    assert open_order["limitPx"] == "91000" and float(open_order["sz"]) == 0.002
    assert orders.DESK.hl_orders[oid]["status"] == "canceled"
    refused = _hl({"type": "modify", "oid": oid, "order": wire})
    assert refused["status"] == "err"
    batch = _hl({"type": "batchModify", "modifies": [{"oid": open_order["oid"], "order": order_wire(
        0, True, 92_000.0, 0.002, tif="Gtc")}]})
    assert "resting" in batch["response"]["data"]["statuses"][0]


def test_hyperliquid_schedule_cancel_cancels_every_open_order_at_its_time() -> None:
    _hl_order(True, 90_000.0, 0.001)
    too_soon = _hl({"type": "scheduleCancel", "time": now_ms() + 1000})
    assert too_soon["status"] == "err"
    assert _hl({"type": "scheduleCancel", "time": now_ms() + 6000})["status"] == "ok"
    orders.DESK.hl_dead_man_ms = now_ms() - 1  # its time has come
    orders.update_book("hyperliquid", 99_990.0, 5.0, 100_000.0, 5.0)
    assert orders.hyperliquid_open_orders() == []
    assert any(e["data"][0]["status"] == "scheduledCancel" for e in orders.drain_events("hyperliquid")
               if e["channel"] == "orderUpdates")


def test_hyperliquid_closing_fill_has_its_direction_and_pnl_and_reaches_user_fills() -> None:
    _hl_order(True, 100_000.0, 0.001, tif="Ioc")  # long 0.001 at 100000
    orders.update_book("hyperliquid", 101_000.0, 5.0, 101_010.0, 5.0)
    close = _hl_order(False, 100_000.0, 0.001, tif="Ioc", reduce_only=True)
    assert "filled" in close["response"]["data"]["statuses"][0], close
    newest, first = orders.hyperliquid_user_fills()
    assert first["dir"] == "Open Long" and newest["dir"] == "Close Long"
    assert float(newest["closedPnl"]) == pytest.approx(1.0)  # (101000 - 100000) * 0.001
    state = orders.hyperliquid_clearinghouse_state(now_ms())
    assert state["assetPositions"] == []
    assert float(state["marginSummary"]["accountValue"]) == pytest.approx(orders.DESK.ledger.start_balance + 1.0)
    more = _hl_order(False, 100_000.0, 0.001, tif="Ioc", reduce_only=True)  # nothing left to reduce
    assert "Reduce only" in more["response"]["data"]["statuses"][0]["error"]


def test_hyperliquid_update_leverage_shows_in_the_position() -> None:
    assert _hl({"type": "updateLeverage", "asset": 0, "isCross": False, "leverage": 5})["status"] == "ok"
    assert _hl({"type": "updateLeverage", "asset": 0, "isCross": True, "leverage": 500})["status"] == "err"
    _hl_order(True, 100_000.0, 0.001, tif="Ioc")
    (pos,) = orders.hyperliquid_clearinghouse_state(now_ms())["assetPositions"]
    assert pos["position"]["leverage"]["type"] == "isolated" and pos["position"]["leverage"]["value"] == 5
    assert float(pos["position"]["marginUsed"]) == pytest.approx(0.001 * 99_995.0 / 5)


def test_hyperliquid_resting_order_fills_when_the_market_reaches_it() -> None:
    oid = _hl_order(True, 99_000.0, 0.001)["response"]["data"]["statuses"][0]["resting"]["oid"]
    orders.drain_events("hyperliquid")
    orders.update_book("hyperliquid", 98_900.0, 5.0, 98_990.0, 5.0)
    fills = [e for e in orders.drain_events("hyperliquid") if e["channel"] == "userFills"]
    (fill,) = fills[0]["data"]["fills"]
    assert fill["oid"] == oid and float(fill["px"]) == 99_000.0 and fill["crossed"] is False
    assert orders.DESK.hl_orders[oid]["status"] == "filled"


# -- the ledger --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("start", "fills", "direction", "pnl"), [
    (0.0, [(True, 100.0, 1.0)], "Open Long", 0.0),
    (0.0, [(False, 100.0, 1.0)], "Open Short", 0.0),
    (1.0, [(False, 110.0, 0.5)], "Close Long", 5.0),
    (1.0, [(False, 90.0, 2.0)], "Long > Short", -10.0),
    (-1.0, [(True, 90.0, 1.0)], "Close Short", 10.0),
    (-1.0, [(True, 90.0, 3.0)], "Short > Long", 10.0),
])
def test_ledger_direction_and_realised_pnl(start: float, fills: list[tuple[bool, float, float]], direction: str,
                                           pnl: float) -> None:
    ledger = Ledger(start_balance=1000.0)
    if start:
        ledger.book_fill("hyperliquid", "k", start > 0, 100.0, abs(start))
    for is_buy, px, qty in fills:
        booked = ledger.book_fill("hyperliquid", "k", is_buy, px, qty)
    assert hl_direction(booked) == direction
    assert booked.closed_pnl == pytest.approx(pnl)
    assert ledger.wallet("hyperliquid") == pytest.approx(1000.0 + pnl)
