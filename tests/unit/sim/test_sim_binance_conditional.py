"""Binance conditional and GTD orders in the emulator (issue 51 item 2), as the venue takes them since its
2025-12-09 Algo Service migration: ``order.place`` refuses the conditional types (-4120), ``algoOrder.place`` takes
STOP_MARKET / TAKE_PROFIT_MARKET / STOP / TAKE_PROFIT with ``triggerPrice`` and ``workingType``; they trigger on the
watched price (last trade or mark) and GTD orders expire on the emulator's clock, with the venue's refusals."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from caerus.sim import orders
from tests.kit.sim_desk import API_KEY, SECRET, binance_call, now_ms


@pytest.fixture(autouse=True)
def desk() -> Iterator[None]:
    orders.reset()
    orders.configure_test_credentials(binance_api_key=API_KEY, binance_hmac_secret=SECRET)
    orders.update_book("binance", 99_990.0, 5.0, 100_000.0, 5.0, mark=99_995.0)
    yield
    orders.reset()


def _algo(**overrides: Any) -> dict[str, Any]:
    params = {"algoType": "CONDITIONAL", "side": "SELL", "type": "STOP_MARKET", "triggerPrice": "99000.0",
              "quantity": "0.010", **overrides}
    return binance_call("algoOrder.place", **{k: v for k, v in params.items() if v is not None})


def _events() -> list[dict[str, Any]]:
    return orders.drain_events("binance")


def _long(qty: str = "0.010") -> None:
    assert binance_call("order.place", side="BUY", type="MARKET", quantity=qty)["result"]["status"] == "FILLED"


@pytest.mark.parametrize("otype", ["STOP", "STOP_MARKET", "TAKE_PROFIT", "TAKE_PROFIT_MARKET",
                                   "TRAILING_STOP_MARKET"])
def test_order_place_refuses_conditional_types_as_the_venue_does_since_the_algo_migration(otype: str) -> None:
    reply = binance_call("order.place", side="SELL", type=otype, quantity="0.010", stopPrice="99000.0")
    assert reply["error"] == {"code": -4120, "msg": "Order type not supported for this endpoint. Please use the "
                                                    "Algo Order API endpoints instead."}


def test_a_stop_market_exit_triggers_on_the_last_trade_and_closes_the_position_paying_the_taker_fee() -> None:
    _long()
    placed = _algo(reduceOnly="true")["result"]
    assert (placed["algoStatus"], placed["orderType"], placed["triggerPrice"]) == ("NEW", "STOP_MARKET", "99000.0")
    assert placed["workingType"] == "CONTRACT_PRICE"
    _events()
    orders.update_book("binance", 99_500.0, 5.0, 99_510.0, 5.0)  # a trade at 99990: above the trigger
    assert orders.DESK.binance_algos[placed["algoId"]]["algoStatus"] == "NEW"
    orders.update_book("binance", 98_900.0, 5.0, 98_910.0, 5.0)  # a trade at 99500: not yet
    orders.update_book("binance", 98_800.0, 5.0, 98_810.0, 5.0)  # a trade at 98900 <= 99000: triggered
    events = _events()
    algo = [e["o"]["X"] for e in events if e["e"] == "ALGO_UPDATE"]
    assert algo == ["TRIGGERING", "TRIGGERED", "FINISHED"], events
    sold = [e["o"] for e in events if e["e"] == "ORDER_TRADE_UPDATE" and e["o"]["x"] == "TRADE"]
    assert len(sold) == 1 and sold[0]["o"] == "MARKET" and sold[0]["ot"] == "STOP_MARKET"
    assert sold[0]["sp"] == "99000.00" and sold[0]["R"] is True and sold[0]["L"] == "98800.00"
    assert sold[0]["n"] == f"{98_800.0 * 0.01 * 5e-4:.8f}"  # a taker fill at the regular tier
    assert orders.position("binance")[0] == 0.0
    done = orders.DESK.binance_algos[placed["algoId"]]
    assert done["algoStatus"] == "FINISHED" and done["actualOrderId"] == sold[0]["i"]


def test_mark_price_working_type_watches_the_mark_not_the_last_trade() -> None:
    _long()
    placed = _algo(workingType="MARK_PRICE", triggerPrice="99500.0")["result"]
    orders.update_book("binance", 98_000.0, 5.0, 98_010.0, 5.0, mark=99_900.0)  # trades far below, mark above
    assert orders.DESK.binance_algos[placed["algoId"]]["algoStatus"] == "NEW"
    orders.update_book("binance", 98_000.0, 5.0, 98_010.0, 5.0, mark=99_400.0)
    assert orders.DESK.binance_algos[placed["algoId"]]["algoStatus"] == "FINISHED"


def test_take_profit_limit_rests_at_its_price_once_triggered() -> None:
    _long()
    placed = _algo(type="TAKE_PROFIT", triggerPrice="101000.0", price="101100.0", timeInForce="GTC")["result"]
    orders.update_book("binance", 101_010.0, 5.0, 101_020.0, 5.0)
    orders.update_book("binance", 101_050.0, 5.0, 101_060.0, 5.0)  # the ask rose: a trade at 101020
    algo = orders.DESK.binance_algos[placed["algoId"]]
    assert algo["algoStatus"] == "TRIGGERED"
    order = orders.DESK.binance_orders[algo["actualOrderId"]]
    assert (order["type"], order["origType"], order["price"], order["status"]) == ("LIMIT", "TAKE_PROFIT",
                                                                                  "101100.0", "NEW")
    orders.update_book("binance", 101_100.0, 5.0, 101_110.0, 5.0)  # reached: a maker fill, then FINISHED
    assert order["status"] == "FILLED" and algo["algoStatus"] == "FINISHED"


@pytest.mark.parametrize(
    ("overrides", "code", "text"),
    [
        ({"triggerPrice": "100500.0"}, -2021, "Order would immediately trigger."),  # a sell stop above the market
        ({"side": "BUY", "triggerPrice": "99500.0"}, -2021, "Order would immediately trigger."),
        ({"type": "TAKE_PROFIT_MARKET"}, -2021, "Order would immediately trigger."),  # a sell TP below the market
        ({"triggerPrice": None}, -1102, "Mandatory parameter 'triggerPrice'"),
        ({"triggerPrice": "99000.05"}, -4014, "Price not increased by tick size."),
        ({"workingType": "LAST_PRICE"}, -4031, "Invalid parameter working type"),
        ({"algoType": "VP"}, -1130, "algoType"),
        ({"type": "LIMIT"}, -1116, "Invalid orderType."),
        ({"type": "TRAILING_STOP_MARKET"}, -1000, "TRAILING_STOP_MARKET is not modelled"),
        ({"price": "98000.0"}, -1106, "Parameter 'price' sent when not required."),
        ({"type": "STOP"}, -1102, "Mandatory parameter 'price'"),
        ({"closePosition": "true"}, -4137, "Quantity must be zero with closePosition equals true"),
        ({"closePosition": "true", "quantity": None, "reduceOnly": "true"}, -1106, "reduceOnly"),
        ({"type": "STOP", "price": "98900.0", "closePosition": "true", "quantity": None}, -4136,
         "Target strategy invalid for orderType STOP,closePosition true"),
        ({"quantity": "0.001"}, -4164, "notional must be no smaller than 100"),
        ({"timeInForce": "GTD"}, -1102, "goodTillDate"),
    ],
)
def test_algo_order_refusals_are_the_venues(overrides: dict[str, Any], code: int, text: str) -> None:
    reply = _algo(**overrides)
    assert reply["error"]["code"] == code and text in reply["error"]["msg"], reply


def test_close_position_closes_whatever_is_open_and_expires_when_nothing_is() -> None:
    nothing = _algo(closePosition="true", quantity=None)["result"]
    _long("0.020")
    orders.update_book("binance", 98_900.0, 5.0, 98_910.0, 5.0)
    orders.update_book("binance", 98_800.0, 5.0, 98_810.0, 5.0)  # triggers the one algo order (placed flat)
    assert orders.position("binance")[0] == 0.0  # closePosition reads the position at the trigger: all 0.020
    assert orders.DESK.binance_algos[nothing["algoId"]]["algoStatus"] == "FINISHED"
    flat = _algo(closePosition="true", quantity=None, triggerPrice="98000.0")["result"]
    orders.update_book("binance", 97_900.0, 5.0, 97_910.0, 5.0)
    orders.update_book("binance", 97_800.0, 5.0, 97_810.0, 5.0)
    algo = orders.DESK.binance_algos[flat["algoId"]]
    assert algo["algoStatus"] == "EXPIRED" and algo["actualOrderId"] == 0


def test_a_reduce_only_stop_with_no_position_is_rejected_at_its_trigger() -> None:
    placed = _algo(reduceOnly="true")["result"]
    orders.update_book("binance", 98_900.0, 5.0, 98_910.0, 5.0)
    orders.update_book("binance", 98_800.0, 5.0, 98_810.0, 5.0)
    rejected = [e["o"] for e in _events() if e["e"] == "ALGO_UPDATE" and e["o"]["X"] == "REJECTED"]
    assert rejected[0]["aid"] == placed["algoId"] and rejected[0]["rm"] == "Reduce Only reject"
    assert orders.position("binance")[0] == 0.0


def test_cancel_an_algo_order_once() -> None:
    placed = _algo(clientAlgoId="my-stop")["result"]
    assert _algo(clientAlgoId="my-stop")["error"]["code"] == -4116  # its client id is taken while it waits
    cancelled = binance_call("algoOrder.cancel", clientAlgoId="my-stop")["result"]
    assert cancelled == {"algoId": placed["algoId"], "clientAlgoId": "my-stop", "code": "200", "msg": "success"}
    assert binance_call("algoOrder.cancel", algoId=placed["algoId"])["error"]["code"] == -2011
    assert [e["o"]["X"] for e in _events() if e["e"] == "ALGO_UPDATE"] == ["NEW", "CANCELED"]
    assert orders.binance_algo_listing("BTCUSDT", open_only=True) == []


def test_gtd_rules_and_expiry_on_the_emulator_clock() -> None:
    now = now_ms()
    soon = binance_call("order.place", side="BUY", type="LIMIT", timeInForce="GTD", price="97000.0", quantity="0.010",
              goodTillDate=now + 60_000)
    assert soon["error"] == {"code": -5040, "msg": "The goodTillDate timestamp must be greater than the current "
                                                   "time plus 600 seconds and smaller than 253402300799000"}
    far = binance_call("order.place", side="BUY", type="LIMIT", timeInForce="GTD", price="97000.0", quantity="0.010",
             goodTillDate=253_402_300_799_000)
    assert far["error"]["code"] == -5040
    assert binance_call("order.place", side="BUY", type="LIMIT", timeInForce="GTD", price="97000.0",
              quantity="0.010")["error"]["code"] == -1102
    gtd = now + 601_234
    placed = binance_call("order.place", side="BUY", type="LIMIT", timeInForce="GTD", price="97000.0", quantity="0.010",
                goodTillDate=gtd)["result"]
    assert (placed["status"], placed["timeInForce"], placed["goodTillDate"]) == ("NEW", "GTD", gtd - gtd % 1000)
    algo = _algo(timeInForce="GTD", goodTillDate=gtd)["result"]
    _events()
    orders.DESK.binance_clock_offset_ms = 602_000  # the venue's clock passes goodTillDate (no market move)
    orders.on_clock()
    assert orders.DESK.binance_orders[placed["orderId"]]["status"] == "EXPIRED"
    assert orders.DESK.binance_algos[algo["algoId"]]["algoStatus"] == "EXPIRED"
    events = _events()
    assert [e["o"]["x"] for e in events if e["e"] == "ORDER_TRADE_UPDATE"] == ["EXPIRED"]
    assert events[0]["o"]["gtd"] == gtd - gtd % 1000


def test_the_gtd_minimum_lead_is_the_emulators_setting() -> None:
    orders.configure_venue(binance_gtd_min_lead_s=2.0)
    placed = binance_call("order.place", side="BUY", type="LIMIT", timeInForce="GTD", price="97000.0", quantity="0.010",
                goodTillDate=now_ms() + 5_000)
    assert placed["result"]["status"] == "NEW"
    refused = binance_call("order.place", side="BUY", type="LIMIT", timeInForce="GTD", price="97000.0",
                           quantity="0.010", goodTillDate=now_ms() + 1_000)
    assert "plus 2 seconds" in refused["error"]["msg"]
