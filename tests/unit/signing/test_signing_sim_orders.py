"""The emulator's order-entry answers (caerus.sim.orders): accepted orders and each documented rejection."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator

import pytest
from eth_account import Account

from caerus.sim import orders
from caerus.venues.binance.signing import BinanceHmacSigner, query_string
from caerus.venues.hyperliquid.signing import HyperliquidSigner, order_action, order_wire
from tests.kit.sim_desk import open_desk

API = secrets.token_hex(32)
SECRET = secrets.token_hex(32)
HL = Account.create()


@pytest.fixture(autouse=True)
def desk() -> Iterator[None]:
    open_desk(HL.address, API, SECRET)
    yield
    orders.reset()


def _now() -> int:
    return time.time_ns() // 1_000_000


def _b(**over: object) -> dict:
    params = {"apiKey": API, "symbol": "BTCUSDT", "side": "BUY", "type": "LIMIT", "timeInForce": "IOC",
              "quantity": "0.010", "price": "100000.0", "timestamp": _now(), "recvWindow": 5000}
    params.update(over)
    params = {k: v for k, v in params.items() if v is not None}
    params["signature"] = BinanceHmacSigner(SECRET).sign(query_string(params))
    return {"id": 7, "method": "order.place", "params": params}


def test_binance_signed_order_fills_and_echoes_id() -> None:
    r = orders.binance_ws_api_response(_b())
    assert r["id"] == 7 and r["status"] == 200
    assert r["result"]["status"] == "FILLED" and r["result"]["executedQty"] == "0.010"


def test_binance_ioc_against_book() -> None:
    orders.update_book("binance", 99_990.0, 5.0, 100_010.0, 0.004)
    assert orders.binance_ws_api_response(_b())["result"]["status"] == "EXPIRED"  # 100000 < ask
    r = orders.binance_ws_api_response(_b(price="100020.0"))["result"]
    assert r["status"] == "EXPIRED" and r["executedQty"] == "0.004" and r["avgPrice"] == "100010.00"  # partial
    r = orders.binance_ws_api_response(_b(side="SELL", price="99000.0", timeInForce="GTC"))["result"]
    assert r["status"] == "FILLED" and r["avgPrice"] == "99990.00"
    assert orders.binance_ws_api_response(_b(timeInForce="GTC"))["result"]["status"] == "NEW"


@pytest.mark.parametrize(("over", "code"), [
    ({"symbol": "FOOUSDT"}, -1121),
    ({"quantity": "0"}, -4003),
    ({"quantity": "0.0105"}, -1111),
    ({"price": "100000.05"}, -4014),
    ({"quantity": "5000"}, -1013),
    ({"side": "UP"}, -1117),
    ({"timeInForce": "DAY"}, -1115),
    ({"timestamp": 1_000_000}, -1021),
    ({"quantity": None}, -1102),
])
def test_binance_rejections(over: dict, code: int) -> None:
    r = orders.binance_ws_api_response(_b(**over))
    assert r["status"] == 400 and r["error"]["code"] == code and "result" not in r


def test_binance_bad_signature_and_unknown_key() -> None:
    msg = _b()
    msg["params"]["price"] = "100001.0"  # changed after signing
    assert orders.binance_ws_api_response(msg)["error"]["code"] == -1022
    msg = _b()
    msg["params"]["apiKey"] = "someone-else"
    r = orders.binance_ws_api_response(msg)
    assert r["status"] == 401 and r["error"]["code"] == -2015
    # a known method without its params names what is missing; an unknown method is -1000
    r = orders.binance_ws_api_response({"id": 1, "method": "order.cancel"})
    assert r["error"]["code"] == -1102 and "'params'" in r["error"]["msg"]
    assert orders.binance_ws_api_response({"id": 1, "method": "order.teleport"})["error"]["code"] == -1000


def _hl(signer: HyperliquidSigner, px: float = 100_000, sz: float = 0.001, tif: str = "Ioc", nonce: int | None = None,
        req_id: int = 3) -> dict:
    action = order_action([order_wire(0, True, px, sz, tif=tif)])
    nonce = nonce or signer.next_nonce(_now())
    return {"method": "post", "id": req_id, "request": {"type": "action", "payload": {
        "action": action, "nonce": nonce, "signature": signer.sign_action(action, nonce), "vaultAddress": None}}}


def _statuses(r: dict) -> list:
    payload = r["data"]["response"]["payload"]
    assert payload["status"] == "ok", payload
    return payload["response"]["data"]["statuses"]


def test_hl_signed_order_fills() -> None:
    r = orders.hyperliquid_post_response(_hl(HyperliquidSigner(HL.key.hex(), is_mainnet=False)))
    assert r["channel"] == "post" and r["data"]["id"] == 3
    (st,) = _statuses(r)
    assert st["filled"]["totalSz"] == "0.001" and float(st["filled"]["avgPx"]) == 100_000


def test_hl_ioc_no_match_gtc_rests_alo_refused() -> None:
    orders.update_book("hyperliquid", 99_990, 1.0, 100_010, 1.0)
    s = HyperliquidSigner(HL.key.hex(), is_mainnet=False)  # the desk plays testnet unless configured otherwise
    assert "could not immediately match" in _statuses(orders.hyperliquid_post_response(_hl(s)))[0]["error"]
    assert "resting" in _statuses(orders.hyperliquid_post_response(_hl(s, tif="Gtc")))[0]
    assert "Post only" in _statuses(orders.hyperliquid_post_response(_hl(s, px=100_020, tif="Alo")))[0]["error"]


@pytest.mark.parametrize(("px", "sz", "text"), [(100_000.55, 0.001, "invalid price"), (123_456.7, 0.001,
                                                 "invalid price"), (100_000, 0.0000001, "invalid size"),
                                                (100_000, 0.00001, "minimum value")])
def test_hl_order_rejections(px: float, sz: float, text: str) -> None:
    (st,) = _statuses(orders.hyperliquid_post_response(_hl(HyperliquidSigner(HL.key.hex(), is_mainnet=False),
                                                           px=px, sz=sz)))
    assert text in st["error"]


def test_hl_wrong_wallet_and_replayed_nonce_refused() -> None:
    stranger = Account.create()
    r = orders.hyperliquid_post_response(_hl(HyperliquidSigner(stranger.key.hex(), is_mainnet=False)))
    payload = r["data"]["response"]["payload"]
    assert payload["status"] == "err" and "does not exist" in payload["response"]
    assert HL.address.lower() not in payload["response"]
    s = HyperliquidSigner(HL.key.hex(), is_mainnet=False)
    n = _now()
    assert _statuses(orders.hyperliquid_post_response(_hl(s, nonce=n)))
    again = orders.hyperliquid_post_response(_hl(s, nonce=n))["data"]["response"]["payload"]
    assert again["status"] == "err" and "duplicate nonce" in again["response"]


def test_no_book_means_no_liquidity() -> None:
    orders.reset()
    orders.configure_test_credentials(binance_api_key=API, binance_hmac_secret=SECRET,
                                      hyperliquid_address=HL.address)
    assert orders.binance_ws_api_response(_b())["result"]["status"] == "EXPIRED"
    assert orders.binance_ws_api_response(_b(timeInForce="GTC"))["result"]["status"] == "NEW"
    (st,) = _statuses(orders.hyperliquid_post_response(_hl(HyperliquidSigner(HL.key.hex(), is_mainnet=False))))
    assert "could not immediately match" in st["error"]


def test_hl_network_pinning_and_malformed_requests() -> None:
    orders.configure_test_credentials(hyperliquid_address=HL.address, hyperliquid_network="mainnet")
    r = orders.hyperliquid_post_response(_hl(HyperliquidSigner(HL.key.hex(), is_mainnet=False)))
    assert r["data"]["response"]["payload"]["status"] == "err"  # testnet signature on a mainnet desk
    assert _statuses(orders.hyperliquid_post_response(_hl(HyperliquidSigner(HL.key.hex(), is_mainnet=True))))
    orders.configure_test_credentials(hyperliquid_address=HL.address)  # the default: testnet
    r = orders.hyperliquid_post_response(_hl(HyperliquidSigner(HL.key.hex(), is_mainnet=True)))
    payload = r["data"]["response"]["payload"]
    assert payload["status"] == "err" and "does not exist" in payload["response"]  # mainnet signature on testnet
    with pytest.raises(ValueError, match="must be mainnet or testnet"):
        orders.configure_test_credentials(hyperliquid_address=HL.address, hyperliquid_network="any")
    bad = orders.hyperliquid_post_response({"method": "post", "id": 9, "request": {"type": "info"}})
    assert bad["data"] == {"id": 9, "response": {"type": "error", "payload": bad["data"]["response"]["payload"]}}
    assert orders.hyperliquid_post_response({"method": "subscribe"})["data"]["response"]["type"] == "error"


def test_configure_from_credentials_file(tmp_path) -> None:
    import os

    f = tmp_path / "c.toml"
    f.write_text(f'[binance]\napi_key="{API}"\nsecret="{SECRET}"\n[hyperliquid]\nprivate_key="{HL.key.hex()}"\n')
    os.chmod(f, 0o600)
    orders.reset()
    orders.configure_from_credentials_file(f)
    assert orders.binance_ws_api_response(_b())["status"] == 200
    assert _statuses(orders.hyperliquid_post_response(_hl(HyperliquidSigner(HL.key.hex(), is_mainnet=False))))
