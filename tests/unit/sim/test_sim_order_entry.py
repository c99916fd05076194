"""The bridge to caerus.sim.orders: venue-shaped errors when it is missing or raises, its answer otherwise."""

from __future__ import annotations

import json
import sys
import types

import pytest

from caerus.sim.core import order_entry


def test_missing_orders_module_gives_error_frames(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "caerus.sim.orders", None)  # makes the import raise ImportError
    b = json.loads(order_entry.binance_order_reply('{"id":"x","method":"order.place","params":{}}'))
    assert b["id"] == "x" and b["status"] == 503 and "caerus.sim.orders" in b["error"]["msg"]
    h = json.loads(order_entry.hyperliquid_post_reply({"method": "post", "id": 1, "request": {}}))
    # answered on the post's own id (a client waits on it), never only on the error channel
    assert h["channel"] == "post" and h["data"]["id"] == 1 and "caerus.sim.orders" in h["data"]["response"]["payload"]
    h = json.loads(order_entry.hyperliquid_post_reply({"method": "post"}))  # no id to answer on
    assert h["channel"] == "error" and "caerus.sim.orders" in h["data"]
    assert order_entry.book_sink() is None
    assert order_entry.configure_credentials_from_env() is False


def test_raising_handler_gives_500_and_error_channel(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("caerus.sim.orders")

    def boom(msg: dict, **connection: object) -> dict:  # Binance's gets the connection's session and market
        raise RuntimeError("bug")

    fake.binance_ws_api_response = boom  # type: ignore[attr-defined]
    fake.hyperliquid_post_response = boom  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "caerus.sim.orders", fake)
    b = json.loads(order_entry.binance_order_reply('{"id":7,"method":"order.place"}'))
    assert b["id"] == 7 and b["status"] == 500 and "bug" in b["error"]["msg"]
    h = json.loads(order_entry.hyperliquid_post_reply({"method": "post", "id": 1}))
    assert h["channel"] == "post" and h["data"]["id"] == 1 and "bug" in h["data"]["response"]["payload"]


def test_answers_come_from_the_handler(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("caerus.sim.orders")
    fake.binance_ws_api_response = lambda msg, **kw: {"id": msg["id"], "status": 200, "result": {"ok": 1}}  # type: ignore[attr-defined]
    fake.hyperliquid_post_response = lambda msg: {"channel": "post", "data": {"id": msg["id"]}}  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "caerus.sim.orders", fake)
    assert json.loads(order_entry.binance_order_reply('{"id":3}')) == {"id": 3, "status": 200, "result": {"ok": 1}}
    assert json.loads(order_entry.hyperliquid_post_reply({"id": 4})) == {"channel": "post", "data": {"id": 4}}
    bad = json.loads(order_entry.binance_order_reply("{nope"))
    assert bad["id"] is None and bad["status"] == 400
    assert json.loads(order_entry.binance_order_reply("[1]"))["status"] == 400
