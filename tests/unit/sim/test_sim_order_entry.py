"""The bridge to the installed order entry (caerus.sim.orders): venue-shaped errors when nothing is installed or a
handler raises, its answer otherwise."""

from __future__ import annotations

import json
import types
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from caerus.sim.core import order_entry


@pytest.fixture
def install() -> Iterator[Callable[[object | None], None]]:
    """order_entry.install, with whatever was installed before put back afterwards."""
    before = order_entry.installed()
    yield order_entry.install
    order_entry.install(before)


def test_nothing_installed_gives_error_frames(install: Callable[[object | None], None]) -> None:
    install(None)
    b = json.loads(order_entry.binance_order_reply('{"id":"x","method":"order.place","params":{}}'))
    assert b["id"] == "x" and b["status"] == 503 and "caerus.sim.orders" in b["error"]["msg"]
    h = json.loads(order_entry.hyperliquid_post_reply({"method": "post", "id": 1, "request": {}}))
    # answered on the post's own id (a client waits on it), never only on the error channel
    assert h["channel"] == "post" and h["data"]["id"] == 1 and "caerus.sim.orders" in h["data"]["response"]["payload"]
    h = json.loads(order_entry.hyperliquid_post_reply({"method": "post"}))  # no id to answer on
    assert h["channel"] == "error" and "caerus.sim.orders" in h["data"]
    assert order_entry.book_sink() is None
    assert order_entry.configure_credentials_from_env() is False


def test_a_missing_handler_is_named(install: Callable[[object | None], None]) -> None:
    install(types.SimpleNamespace())
    b = json.loads(order_entry.binance_order_reply('{"id":"x","method":"order.place","params":{}}'))
    assert b["status"] == 503 and "no binance_ws_api_response()" in b["error"]["msg"]


def test_raising_handler_gives_500_and_error_channel(install: Callable[[object | None], None]) -> None:
    def boom(msg: dict, **connection: object) -> dict:  # Binance's gets the connection's session and market
        raise RuntimeError("bug")

    install(types.SimpleNamespace(binance_ws_api_response=boom, hyperliquid_post_response=boom))
    b = json.loads(order_entry.binance_order_reply('{"id":7,"method":"order.place"}'))
    assert b["id"] == 7 and b["status"] == 500 and "bug" in b["error"]["msg"]
    h = json.loads(order_entry.hyperliquid_post_reply({"method": "post", "id": 1}))
    assert h["channel"] == "post" and h["data"]["id"] == 1 and "bug" in h["data"]["response"]["payload"]


def test_answers_come_from_the_installed_handler(install: Callable[[object | None], None]) -> None:
    install(types.SimpleNamespace(
        binance_ws_api_response=lambda msg, **kw: {"id": msg["id"], "status": 200, "result": {"ok": 1}},
        hyperliquid_post_response=lambda msg: {"channel": "post", "data": {"id": msg["id"]}}))
    assert json.loads(order_entry.binance_order_reply('{"id":3}')) == {"id": 3, "status": 200, "result": {"ok": 1}}
    assert json.loads(order_entry.hyperliquid_post_reply({"id": 4})) == {"channel": "post", "data": {"id": 4}}
    bad = json.loads(order_entry.binance_order_reply("{nope"))
    assert bad["id"] is None and bad["status"] == 400
    assert json.loads(order_entry.binance_order_reply("[1]"))["status"] == 400


def test_the_emulator_installs_the_order_entry_of_caerus_sim_orders(
        install: Callable[[object | None], None], tmp_path: Path) -> None:
    from caerus.sim import orders
    from caerus.sim.core.config import EmulatorConfig
    from caerus.sim.emulator import VenueEmulator

    install(None)
    VenueEmulator(EmulatorConfig(cert_dir=tmp_path))
    assert order_entry.installed() is orders
