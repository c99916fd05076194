"""Who may ask the emulated Binance for what: the checks every signed request passes (API key, signature, time
window), the account's user-data listen key, and the WebSocket API's authenticated sessions.

Signed requests (USD-M futures): ``apiKey`` known (-2015, HTTP 401), ``timestamp`` and ``signature`` present
(-1102), the signature over the sorted params with the configured HMAC secret or Ed25519 public key (-1022),
``recvWindow`` at most 60000 (-1131), ``timestamp`` within it and not 1 s ahead (-1021). The REST layer checks the
signature over the query string as sent and marks the request :data:`REST_VERIFIED`.

Sessions (``session.logon`` / ``session.status`` / ``session.logout``, as Binance documents them for the WebSocket
API; only Ed25519 keys may log on, so an HMAC-signed logon is -1022): once a connection is logged on, a request
that carries no ``signature`` is authenticated as the session's key (its ``timestamp`` is still checked); one that
carries its own ``apiKey`` and ``signature`` is checked as usual. A session is a plain dict per connection (the
server keeps it, caerus.sim.binance.server): ``connectedSince``, then ``apiKey`` and ``authorizedSince`` once logged on.
"""

from __future__ import annotations

import secrets
from typing import Any

from caerus.sim.core.desk import DESK
from caerus.sim.core.verify import binance_signature_ok

MAX_RECV_WINDOW_MS = 60_000
#: marks a request whose signature the REST layer already checked over the query string as sent (an object no
#: JSON frame can carry, so a WebSocket client cannot claim it)
REST_VERIFIED = object()
#: marks a request authenticated by its connection's logged-on session (no signature of its own)
SESSION_VERIFIED = object()
_VERIFIED = (REST_VERIFIED, SESSION_VERIFIED)
#: methods that need no key at all (market data, the server's time)
PUBLIC_METHODS = frozenset({"time", "ping", "depth", "ticker.book", "ticker.price"})
SESSION_METHODS = ("session.logon", "session.status", "session.logout")


def error(req_id: Any, code: int, msg: str, status: int = 400) -> dict[str, Any]:
    """A WebSocket API error answer."""
    return {"id": req_id, "status": status, "error": {"code": code, "msg": msg}}


def integer(v: Any) -> int | None:
    """An integer from a JSON number or a string of digits, else None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.isdigit():
        return int(v)
    return None


def missing_parameter(req_id: Any, params: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any] | None:
    """The venue's -1102 error naming the first of ``names`` that ``params`` lacks or leaves empty; None if none."""
    for name in names:
        if params.get(name) in (None, ""):
            return error(req_id, -1102, f"Mandatory parameter '{name}' was not sent, was empty/null, or malformed.")
    return None


def binance_user_data_error(msg: dict[str, Any], now_ms: int, *, ed25519_only: bool = False) -> dict[str, Any] | None:
    """The checks every signed USER_DATA request passes (key, signature, time window); None when it passes.
    ``ed25519_only``: an HMAC signature does not count (``session.logon``)."""
    req_id = msg.get("id")
    params = msg.get("params")
    if not isinstance(params, dict):
        return error(req_id, -1102, "Mandatory parameter 'params' was not sent, was empty/null, or malformed.")
    if not params.get("apiKey") or params.get("apiKey") != DESK.binance_api_key:
        return error(req_id, -2015, "Invalid API-key, IP, or permissions for action.", status=401)
    verified = msg.get("verified") in _VERIFIED
    bad = missing_parameter(req_id, params, ("timestamp",) if verified else ("timestamp", "signature"))
    if bad is not None:
        return bad
    if not verified and not binance_signature_ok(
            params, hmac_secret=None if ed25519_only else DESK.binance_hmac_secret,
            ed25519_public_key=DESK.binance_ed25519_public_key):
        return error(req_id, -1022, "Signature for this request is not valid.")
    ts, window = integer(params.get("timestamp")), integer(params.get("recvWindow", 5000))
    if ts is None or window is None:
        return error(req_id, -1102, "Mandatory parameter 'timestamp' was not sent, was empty/null, or malformed.")
    if window > MAX_RECV_WINDOW_MS:
        return error(req_id, -1131, "recvWindow must be less than 60000")
    if ts >= now_ms + 1000 or now_ms - ts > window:
        return error(req_id, -1021, "Timestamp for this request is outside of the recvWindow.")
    return None


def listen_key(api_key: str | None) -> str | None:
    """The account's user-data listen key (one per account, kept while valid); None for an unknown API key."""
    if DESK.binance_api_key is None or api_key != DESK.binance_api_key:
        return None
    if not DESK.listen_keys:
        DESK.listen_keys.add(secrets.token_urlsafe(48)[:64])
    return next(iter(DESK.listen_keys))


# -- WebSocket API sessions -------------------------------------------------------------------------------------
def new_session(connected_ms: int) -> dict[str, Any]:
    """A connection's session, not logged on."""
    return {"connectedSince": connected_ms, "apiKey": None, "authorizedSince": None}


def authenticate(msg: dict[str, Any], session: dict[str, Any] | None) -> dict[str, Any]:
    """The request as the method handlers see it: on a logged-on connection, one that carries no signature of its
    own is the session's (its ``apiKey`` filled in, marked :data:`SESSION_VERIFIED`)."""
    params = msg.get("params")
    key = session.get("apiKey") if session is not None else None
    if key is None or msg.get("method") in PUBLIC_METHODS or msg.get("method") in SESSION_METHODS:
        return msg
    if params is None:
        params = {}
    if not isinstance(params, dict) or params.get("signature") not in (None, ""):
        return msg
    return {**msg, "params": {**params, "apiKey": params.get("apiKey") or key}, "verified": SESSION_VERIFIED}


def session_status(session: dict[str, Any], now_ms: int) -> dict[str, Any]:
    return {"apiKey": session.get("apiKey"), "authorizedSince": session.get("authorizedSince"),
            "connectedSince": session.get("connectedSince"), "returnRateLimits": True, "serverTime": now_ms,
            "userDataStream": False}


def session_request(msg: dict[str, Any], now_ms: int, session: dict[str, Any] | None) -> dict[str, Any]:
    """``session.logon`` (SIGNED, Ed25519 keys only), ``session.status``, ``session.logout``."""
    req_id, method = msg.get("id"), msg.get("method")
    if session is None:  # the REST layer has no connection to log on
        return error(req_id, -1000, f"{method} is a WebSocket API method: there is no session here.")
    if method == "session.logon":
        bad = binance_user_data_error(msg, now_ms, ed25519_only=True)
        if bad is not None:
            return bad
        session.update(apiKey=msg["params"]["apiKey"], authorizedSince=now_ms)
    elif method == "session.logout":
        session.update(apiKey=None, authorizedSince=None)
    return {"id": req_id, "status": 200, "result": session_status(session, now_ms)}


def order_request_error(msg: dict[str, Any], now_ms: int, mandatory: tuple[str, ...]) -> dict[str, Any] | None:
    """A signed order request's first error: :func:`binance_user_data_error`'s checks, then a missing one of
    ``mandatory``. None when it passes both."""
    return binance_user_data_error(msg, now_ms) or missing_parameter(msg.get("id"), msg["params"], mandatory)
