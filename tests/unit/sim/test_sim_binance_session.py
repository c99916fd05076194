"""The emulated Binance WebSocket API's sessions and market data (issue 51 item 3): ``session.logon`` with an
Ed25519 key (an HMAC-signed logon is refused, as the venue documents: only Ed25519 keys may log on), then requests
without a signature on that session; ``session.status`` / ``session.logout``; ``depth`` and ``ticker.book``."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from caerus.sim import orders
from caerus.venues.binance.signing import BinanceEd25519Signer, BinanceHmacSigner, sign_params

API_KEY = "e" * 64
SECRET = "s" * 64
ED = Ed25519PrivateKey.generate()


@pytest.fixture(autouse=True)
def desk() -> Iterator[None]:
    orders.reset()
    orders.configure_test_credentials(binance_api_key=API_KEY, binance_hmac_secret=SECRET,
                                      binance_ed25519_public_key=ED.public_key())
    orders.update_book("binance", 99_990.0, 5.0, 100_000.0, 5.0)
    yield
    orders.reset()


def _now() -> int:
    return time.time_ns() // 1_000_000


def _ask(session: dict[str, Any] | None, method: str, params: dict[str, Any] | None = None,
         market: Any = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"id": "r1", "method": method}
    if params is not None:
        msg["params"] = params
    return orders.binance_ws_api_response(msg, session=session, market=market)


def _signed(signer: Any, **params: Any) -> dict[str, Any]:
    return sign_params({"apiKey": API_KEY, "timestamp": _now(), **params}, signer)


def test_logon_with_ed25519_then_unsigned_orders_are_the_sessions() -> None:
    session = orders.new_session(_now() - 5)
    assert _ask(session, "session.status")["result"]["apiKey"] is None
    unsigned = {"symbol": "BTCUSDT", "side": "BUY", "type": "LIMIT", "timeInForce": "GTC", "price": "97000.0",
                "quantity": "0.010", "timestamp": _now()}
    assert _ask(session, "order.place", dict(unsigned))["error"]["code"] == -2015  # not logged on: no key
    logon = _ask(session, "session.logon", _signed(BinanceEd25519Signer(ED)))
    assert logon["status"] == 200 and logon["result"]["apiKey"] == API_KEY
    assert logon["result"]["authorizedSince"] >= logon["result"]["connectedSince"]
    placed = _ask(session, "order.place", dict(unsigned, timestamp=_now()))
    assert placed["result"]["status"] == "NEW", placed
    status = _ask(session, "order.status", {"symbol": "BTCUSDT", "orderId": placed["result"]["orderId"],
                                            "timestamp": _now()})
    assert status["result"]["orderId"] == placed["result"]["orderId"]
    stale = _ask(session, "order.place", dict(unsigned, timestamp=_now() - 60_000))
    assert stale["error"]["code"] == -1021  # the session does not lift the time window
    forged = _ask(session, "order.place", dict(unsigned, timestamp=_now(), apiKey=API_KEY, signature="00" * 32))
    assert forged["error"]["code"] == -1022  # a request carrying its own signature is checked as usual
    assert _ask(session, "session.logout")["result"]["apiKey"] is None
    assert _ask(session, "order.place", dict(unsigned, timestamp=_now()))["error"]["code"] == -2015


def test_an_hmac_signed_logon_is_refused_only_ed25519_keys_log_on() -> None:
    session = orders.new_session(_now())
    refused = _ask(session, "session.logon", _signed(BinanceHmacSigner(SECRET)))
    assert refused["error"] == {"code": -1022, "msg": "Signature for this request is not valid."}
    assert session["apiKey"] is None
    assert _ask(None, "session.status")["error"]["code"] == -1000  # no connection (REST): no session


def test_depth_and_ticker_book_come_from_the_servers_market_data() -> None:
    asked: list[tuple[str, dict[str, Any]]] = []

    def market(method: str, params: dict[str, Any]) -> tuple[int, Any]:
        asked.append((method, params))
        if params.get("symbol") == "NOPEUSDT":
            return 400, {"code": -1121, "msg": "Invalid symbol."}
        return 200, {"lastUpdateId": 7, "bids": [["99990.0", "5.000"]], "asks": [["100000.0", "5.000"]]}

    depth = _ask(None, "depth", {"symbol": "BTCUSDT", "limit": 5}, market)
    assert depth["status"] == 200 and depth["result"]["lastUpdateId"] == 7 and "rateLimits" in depth
    assert _ask(None, "ticker.book", {"symbol": "NOPEUSDT"}, market)["error"]["code"] == -1121
    assert asked == [("depth", {"symbol": "BTCUSDT", "limit": 5}), ("ticker.book", {"symbol": "NOPEUSDT"})]
    assert _ask(None, "ticker.book", {"symbol": "BTCUSDT"})["error"]["code"] == -1000  # no server market here
    unknown = _ask(None, "order.test", {})
    assert unknown["error"]["code"] == -1000 and "session.logon" in unknown["error"]["msg"]
