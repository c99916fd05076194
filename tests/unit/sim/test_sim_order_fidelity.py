"""The emulated order entry accepts what the venues accept (issue 13 items 1-3): Binance integers as JSON strings
and decimals as JSON numbers, Hyperliquid actions signed with ``expiresAfter``, and a post whose signature cannot
even be parsed is still answered on its own id."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from typing import Any

import pytest
from eth_account import Account

from caerus.sim import orders
from caerus.sim.core import order_entry
from caerus.venues.binance.signing import BinanceHmacSigner, sign_params
from caerus.venues.hyperliquid.signing import order_action, order_wire, sign_l1_action_reference
from tests.kit.sim_desk import API_KEY, HL_KEY, SECRET, binance_order, desk_open


@pytest.fixture(autouse=True)
def desk() -> Iterator[None]:
    with desk_open():
        before = order_entry.installed()
        order_entry.install(orders)  # what the emulator does: the servers' bridge answers with this order entry
        yield
        order_entry.install(before)


def _binance(now: int, **overrides: Any) -> dict[str, Any]:
    return binance_order(now, "BTCUSDT", "100000.0", "0.010", overrides)


@pytest.mark.parametrize("overrides", [
    {"recvWindow": "5000"},  # what the official SDK sends
    {"timestamp": "STRING_NOW"},
    {"price": 100000.0, "quantity": 0.01},  # JSON numbers
], ids=["recvWindow-string", "timestamp-string", "decimals-as-numbers"])
def test_binance_accepts_what_the_venue_accepts(overrides: dict[str, Any]) -> None:
    now = time.time_ns() // 1_000_000
    overrides = {k: (str(now) if v == "STRING_NOW" else v) for k, v in overrides.items()}
    reply = orders.binance_ws_api_response(_binance(now, **overrides), now_ms=now)
    assert reply["status"] == 200, reply
    assert reply["result"]["status"] == "FILLED"


def test_binance_still_refuses_a_malformed_timestamp() -> None:
    now = time.time_ns() // 1_000_000
    reply = orders.binance_ws_api_response(_binance(now, timestamp="yesterday"), now_ms=now)
    assert reply["status"] == 400 and reply["error"]["code"] == -1102


def _hl_post(nonce: int, expires_after: int | None, signature: Any = None) -> dict[str, Any]:
    action = order_action([order_wire(0, True, 100_000.0, 0.001, tif="Ioc")])
    sig = signature if signature is not None else sign_l1_action_reference(
        HL_KEY, action, None, nonce, is_mainnet=False, expires_after=expires_after)
    payload: dict[str, Any] = {"action": action, "nonce": nonce, "signature": sig, "vaultAddress": None}
    if expires_after is not None:
        payload["expiresAfter"] = expires_after
    return {"method": "post", "id": 42, "request": {"type": "action", "payload": payload}}


def test_hyperliquid_action_signed_with_expires_after_is_recognised() -> None:
    now = time.time_ns() // 1_000_000
    reply = orders.hyperliquid_post_response(_hl_post(now, now + 60_000), now_ms=now)
    status = reply["data"]["response"]["payload"]["response"]["data"]["statuses"][0]
    assert "filled" in status, reply  # before: "User or API Wallet ... does not exist"


@pytest.mark.parametrize("signature", [
    {"r": "0xzz", "s": "0x1", "v": 27},
    {"r": hex(secrets.randbits(256)), "s": hex(secrets.randbits(256)), "v": 99},
    {"r": None, "s": None, "v": None},
], ids=["not-hex", "v-out-of-range", "nulls"])
def test_a_malformed_hyperliquid_signature_is_answered_on_the_post_id(signature: dict[str, Any]) -> None:
    now = time.time_ns() // 1_000_000
    frame = json.loads(order_entry.hyperliquid_post_reply(_hl_post(now, None, signature)))
    assert frame["channel"] == "post" and frame["data"]["id"] == 42, frame
    response = frame["data"]["response"]
    assert response["type"] == "error" or response["payload"]["status"] == "err", frame  # refused, never placed


def test_hyperliquid_expires_after_in_the_past_is_refused_by_name() -> None:
    now = time.time_ns() // 1_000_000
    reply = orders.hyperliquid_post_response(_hl_post(now, now - 1), now_ms=now)
    payload = reply["data"]["response"]["payload"]
    assert payload["status"] == "err" and "expired" in payload["response"].lower(), reply


def _hl_vault_post(now: int, vault: str) -> dict[str, Any]:
    action = order_action([order_wire(0, True, 100_000.0, 0.001, tif="Ioc")])
    sig = sign_l1_action_reference(HL_KEY, action, vault, now, is_mainnet=False)
    return {"method": "post", "id": 43, "request": {"type": "action", "payload": {
        "action": action, "nonce": now, "signature": sig, "vaultAddress": vault}}}


def test_hyperliquid_vault_address_must_be_one_the_wallet_trades_for() -> None:
    now = time.time_ns() // 1_000_000
    vault = "0x" + "ab" * 20
    refused = orders.hyperliquid_post_response(_hl_vault_post(now, vault), now_ms=now)
    assert refused["data"]["response"]["payload"] == {"status": "err", "response": f"Vault not registered: {vault}"}
    orders.DESK.hyperliquid_vaults = {vault}
    accepted = orders.hyperliquid_post_response(_hl_vault_post(now + 1, vault), now_ms=now)
    assert "filled" in accepted["data"]["response"]["payload"]["response"]["data"]["statuses"][0], accepted
    garbage = _hl_vault_post(now + 2, vault)
    garbage["request"]["payload"]["vaultAddress"] = "0xnot-an-address"
    reply = orders.hyperliquid_post_response(garbage, now_ms=now)
    assert reply["data"]["response"]["type"] == "error", reply  # does not deserialize: never reaches the signer


def test_hyperliquid_orders_are_queryable_after_the_reply() -> None:
    now = time.time_ns() // 1_000_000
    action = order_action([order_wire(0, True, 90_000.0, 0.001, tif="Gtc")])  # below the bid: rests
    sig = sign_l1_action_reference(HL_KEY, action, None, now, is_mainnet=False)
    reply = orders.hyperliquid_action({"action": action, "nonce": now, "signature": sig}, now_ms=now)
    assert isinstance(reply, dict)
    oid = reply["response"]["data"]["statuses"][0]["resting"]["oid"]
    assert orders.DESK.hl_orders[oid]["status"] == "open"
    assert orders.DESK.hl_orders[oid]["order"]["side"] == "B"


def test_binance_rate_limits_count_this_desks_requests_and_can_be_turned_off() -> None:
    now = time.time_ns() // 1_000_000
    counts = []
    for i in range(3):
        reply = orders.binance_ws_api_response(_binance(now + i), now_ms=now + i)
        counts.append({(r["rateLimitType"], r["interval"]): r["count"] for r in reply["rateLimits"]})
    assert [c[("ORDERS", "MINUTE")] for c in counts] == [1, 2, 3]
    assert [c[("REQUEST_WEIGHT", "MINUTE")] for c in counts] == [1, 2, 3]
    refused = orders.binance_ws_api_response(_binance(now + 3, symbol="FOOUSDT"), now_ms=now + 3)  # not listed
    limits = {(r["rateLimitType"], r["interval"]): r["count"] for r in refused["rateLimits"]}
    assert limits[("ORDERS", "MINUTE")] == 3 and limits[("REQUEST_WEIGHT", "MINUTE")] == 4  # a refusal is no order
    quiet = orders.binance_ws_api_response(_binance(now + 4, returnRateLimits=False), now_ms=now + 4)
    assert quiet["status"] == 200 and "rateLimits" not in quiet
    later = orders.binance_ws_api_response(_binance(now + 61_000), now_ms=now + 61_000)
    assert {(r["rateLimitType"], r["interval"]): r["count"] for r in later["rateLimits"]}[("ORDERS", "MINUTE")] == 1


def _status(now: int, **ident: Any) -> dict[str, Any]:
    params = {"apiKey": API_KEY, "symbol": "BTCUSDT", "timestamp": now, **ident}
    return {"id": 9, "method": "order.status", "params": sign_params(params, BinanceHmacSigner(SECRET))}


def test_binance_order_status_answers_from_the_desks_record() -> None:
    now = time.time_ns() // 1_000_000
    placed = orders.binance_ws_api_response(_binance(now, newClientOrderId="caerus-7"), now_ms=now)
    assert placed["status"] == 200
    by_client = orders.binance_ws_api_response(_status(now, origClientOrderId="caerus-7"), now_ms=now)
    by_id = orders.binance_ws_api_response(_status(now, orderId=placed["result"]["orderId"]), now_ms=now)
    for reply in (by_client, by_id):
        assert reply["status"] == 200 and reply["result"]["status"] == placed["result"]["status"]
        assert reply["result"]["executedQty"] == placed["result"]["executedQty"]
    missing = orders.binance_ws_api_response(_status(now, origClientOrderId="caerus-8"), now_ms=now)
    assert missing["status"] == 400 and missing["error"]["code"] == -2013
    forged = _status(now, origClientOrderId="caerus-7")
    forged["params"]["signature"] = "0" * 64
    assert orders.binance_ws_api_response(forged, now_ms=now)["error"]["code"] == -1022


def test_hyperliquid_order_status_by_cloid_over_an_info_post() -> None:
    now = time.time_ns() // 1_000_000
    cloid = "0x" + "0" * 31 + "7"
    action = order_action([order_wire(0, True, 100_000.0, 0.001, tif="Ioc", cloid=cloid)])
    sig = sign_l1_action_reference(HL_KEY, action, None, now, is_mainnet=False)
    placed = orders.hyperliquid_action({"action": action, "nonce": now, "signature": sig}, now_ms=now)
    assert isinstance(placed, dict) and "filled" in placed["response"]["data"]["statuses"][0]
    post = {"method": "post", "id": 5, "request": {"type": "info", "payload": {
        "type": "orderStatus", "user": Account.from_key(HL_KEY).address, "oid": cloid}}}
    reply = orders.hyperliquid_post_response(post, now_ms=now)
    data = reply["data"]["response"]["payload"]["data"]
    assert reply["data"]["id"] == 5 and data["status"] == "order" and data["order"]["status"] == "filled"
    post["request"]["payload"]["oid"] = "0x" + "f" * 32
    unknown = orders.hyperliquid_post_response(post, now_ms=now)
    assert unknown["data"]["response"]["payload"]["data"] == {"status": "unknownOid"}


def test_every_answered_order_queues_the_account_events_the_venue_would_stream() -> None:
    now = time.time_ns() // 1_000_000
    orders.drain_events("binance")
    placed = orders.binance_ws_api_response(_binance(now, newClientOrderId="caerus-9"), now_ms=now)
    events = orders.drain_events("binance")
    updates = [e["o"] for e in events if e["e"] == "ORDER_TRADE_UPDATE"]
    assert [u["x"] for u in updates] == ["NEW", "TRADE"] and updates[-1]["X"] == placed["result"]["status"]
    assert updates[-1]["c"] == "caerus-9" and updates[-1]["z"] == placed["result"]["executedQty"]
    account = [e["a"]["P"][0] for e in events if e["e"] == "ACCOUNT_UPDATE"]
    assert account == [pytest.approx(account[0])] and float(account[0]["pa"]) == orders.position("binance")[0]
    assert orders.drain_events("binance") == []  # drained once
    start = orders.binance_ws_api_response({"id": 3, "method": "userDataStream.start",
                                            "params": {"apiKey": API_KEY}}, now_ms=now)
    assert start["result"]["listenKey"] == orders.listen_key(API_KEY)
    refused = orders.binance_ws_api_response({"id": 4, "method": "userDataStream.start",
                                              "params": {"apiKey": "nope"}}, now_ms=now)
    assert refused["error"]["code"] == -2015
