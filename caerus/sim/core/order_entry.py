"""Bridge from the emulator's sockets to the order-entry logic the emulator's wiring hands down.

The order handling sits above this core (``caerus.sim.orders`` over the two venue packages), so the core never
imports it: the emulator (caerus.sim.emulator, and caerus.sim.app before it reads the test credentials) calls
:func:`install` with that module, and the servers' calls end in its ``binance_ws_api_response(msg)`` and
``hyperliquid_post_response(msg)``. While nothing is installed (or a function is missing or raises), the client
gets a venue-shaped error frame naming the problem instead of silence.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any, Protocol

log = logging.getLogger("caerus.sim")

#: the order-entry handlers the emulator installed (caerus.sim.orders, or a stand-in with the same functions)
_installed: object | None = None


def install(handlers: object | None) -> None:
    """Hand the order-entry handlers down (``caerus.sim.orders``: the module, or anything with its functions);
    None takes them away (every order request then gets a venue-shaped "unavailable" error)."""
    global _installed
    _installed = handlers


def installed() -> object | None:
    """What :func:`install` was last given (None: nothing)."""
    return _installed


def _handler(name: str) -> tuple[Callable[..., Any] | None, str]:
    if _installed is None:
        return None, ("order entry unavailable in this emulator: no order handlers installed (the emulator "
                      "installs caerus.sim.orders)")
    fn = getattr(_installed, name, None)
    if fn is None:
        return None, f"order entry unavailable in this emulator: the installed caerus.sim.orders has no {name}()"
    return fn, ""


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))


def binance_order_reply(text: str | bytes, session: dict[str, Any] | None = None,
                        market: Callable[[str, dict[str, Any]], tuple[int, Any]] | None = None) -> str:
    """Reply frame for one Binance WebSocket API request frame; ``session`` is the connection's (see
    :func:`binance_session`), ``market`` answers the market-data methods (``depth``, ``ticker.book``...)."""
    try:
        msg = json.loads(text)
    except ValueError as exc:
        return _dumps({"id": None, "status": 400, "error": {"code": -1100,
                                                            "msg": f"Malformed request JSON: {exc}"}})
    if not isinstance(msg, dict):
        return _dumps({"id": None, "status": 400, "error": {"code": -1100, "msg": "request must be a JSON object"}})
    fn, why = _handler("binance_ws_api_response")
    if fn is None:
        return _dumps({"id": msg.get("id"), "status": 503, "error": {"code": -1000, "msg": why}})
    try:
        return _dumps(fn(msg, session=session, market=market))
    except Exception as exc:  # a bug in order handling must not kill the connection silently
        log.exception("binance_ws_api_response failed")
        return _dumps({"id": msg.get("id"), "status": 500,
                       "error": {"code": -1000, "msg": f"emulator order handler failed: {exc!r}"}})


def binance_session(connected_ms: int) -> dict[str, Any]:
    """A new WebSocket API connection's session state (``session.logon`` fills it in)."""
    fn, _ = _handler("new_session")
    return fn(connected_ms) if fn is not None else {"connectedSince": connected_ms}


def on_clock() -> None:
    """Let order entry act on the emulator's clock (GTD expiry): the account-event pump calls this."""
    fn, _ = _handler("on_clock")
    if fn is not None:
        fn()


def is_order_place(text: str | bytes) -> bool:
    """The frame is an ``order.place`` request (what the ``lost-reply`` scenario drops the answer of)."""
    try:
        msg = json.loads(text)
    except ValueError:
        return False
    return isinstance(msg, dict) and msg.get("method") in ("order.place", "v1/order.place", "algoOrder.place")


def hyperliquid_post_reply(msg: dict) -> str:
    """Reply frame for one Hyperliquid ``{"method":"post",...}`` message."""
    fn, why = _handler("hyperliquid_post_response")
    if fn is None:
        return _post_error(msg, why)
    try:
        return _dumps(fn(msg))
    except Exception as exc:
        log.exception("hyperliquid_post_response failed")
        return _post_error(msg, f"emulator post handler failed: {exc!r}")


def _post_error(msg: object, text: str) -> str:
    """Every post gets a reply carrying its id, as the venue does (a client waits on that id); only a frame with no
    usable id goes to the ``error`` channel."""
    req_id = msg.get("id") if isinstance(msg, dict) else None
    if isinstance(req_id, int) and not isinstance(req_id, bool):
        return _dumps({"channel": "post", "data": {"id": req_id, "response": {"type": "error", "payload": text}}})
    return _dumps({"channel": "error", "data": text})


class BookSink(Protocol):
    """``orders.update_book``: one instrument's top of book on one venue (``symbol``: catalogue name)."""

    def __call__(self, venue: str, bid_px: float, bid_qty: float, ask_px: float, ask_qty: float, *,
                 symbol: str = "BTC", mark: float | None = None) -> None: ...


def book_sink() -> BookSink | None:
    """The installed ``caerus.sim.orders.update_book``: the market driver feeds it each top of book so
    emulated order fills happen against the emulated market."""
    fn, _ = _handler("update_book")
    return fn


def configure_venue(*, binance_fee_tier: int, hl_fee_tier: int, binance_gtd_min_lead_s: float) -> None:
    """Hand the emulator's venue settings (EmulatorConfig) to the installed ``caerus.sim.orders``."""
    fn, _ = _handler("configure_venue")
    if fn is not None:
        fn(binance_fee_tier=binance_fee_tier, hl_fee_tier=hl_fee_tier, binance_gtd_min_lead_s=binance_gtd_min_lead_s)


def configure_credentials_from_env() -> bool:
    """Let the installed ``caerus.sim.orders`` pick up its ``CAERUS_SIM_*`` test credentials (process start-up
    only)."""
    fn, _ = _handler("configure_from_env")
    return bool(fn()) if fn is not None else False
