"""Binance USD-M futures market data: URLs and routes, subscribe frames, typed msgspec decoders, frame classes.

Since 2026-03 the stream host routes by path: bookTicker and depth live on ``/public``; ``/market`` carries
aggTrade/markPrice/kline and *acknowledges* a bookTicker subscription, then stays silent (only the data watchdog
notices). We connect to ``<base>/public/ws`` and subscribe with ``SUBSCRIBE``; messages then arrive unwrapped.

Hot path: :data:`DATA_DECODER` decodes a bookTicker or depth5 message straight into a typed Struct, converting the
string prices/quantities to float once (``strict=False``) and ignoring unknown fields (``st``, ``ps``, ``s``,
``T``...). Data structs are ``gc=False`` (they hold no references that could form a cycle), so the per-message
allocation does not count towards triggering the garbage collector. Anything the decoder rejects goes to
:func:`classify` (off the common path): acks, both error shapes (``{"code":..,"msg":..,"id":..}`` as documented,
``{"error":{"code":..,"msg":..},"id":..}`` as seen on the wire, ``id`` possibly null), malformed data, garbage.
"""

from __future__ import annotations

from typing import Any

import msgspec

from caerus.net.untrusted import decode_untrusted
from caerus.venuekit.frames import EpochMs, FrameKind, SeqId, decimal_text

DEFAULT_BASE_URL = "wss://fstream.binance.com"
TESTNET_BASE_URL = "wss://fstream.binancefuture.com"
ROUTES = {"public": "/public/ws", "market": "/market/ws"}
DEFAULT_SYMBOL = "BTCUSDT"
CHANNELS = ("bookTicker", "depth5")
# Since 2026-03 each stream lives on one route only; a subscription on the other route is acknowledged and then
# silent forever (only a data watchdog notices), so the feed refuses that combination at start.
CHANNEL_ROUTES = {"bookTicker": "public", "depth5": "public"}
ROUTE_NOTE = ("since 2026-03 Binance routes streams by path: bookTicker and depth live on /public, aggTrade, markPrice "
              "and kline on /market; a subscription on the wrong route is acknowledged and then stays silent")
SUBSCRIBE_ID = 1
#: Binance closes a connection after 24 h; rotate well before (make-before-break)
DEFAULT_ROTATE_AFTER_S = 23 * 3600.0
#: bookTicker for BTCUSDT is many messages per second; 10 s of silence means the subscription is dead
DEFAULT_STALE_AFTER_S = 10.0
DATA_EVENTS = frozenset({"bookTicker", "depthUpdate"})
#: levels a side in every depth5 message (the venue always fills all five for a listed perpetual)
DEPTH_LEVELS = 5


class BookTicker(msgspec.Struct, tag_field="e", tag="bookTicker", gc=False):
    """``<symbol>@bookTicker``: best bid/ask with the order-book update id ``u`` and event time ``E`` (ms)."""

    u: SeqId
    E: EpochMs
    s: str
    b: float
    B: float
    a: float
    A: float


class Depth(msgspec.Struct, tag_field="e", tag="depthUpdate", gc=False):
    """``<symbol>@depth5@100ms``: a full top-5 snapshot per message (levels are [price, qty] pairs)."""

    u: SeqId
    E: EpochMs
    s: str
    b: list[tuple[float, float]]
    a: list[tuple[float, float]]


def is_snapshot(m: Depth) -> bool:
    """Can this depthUpdate be a depth5 snapshot? A diff-depth update (same envelope) must never be read as one.

    A snapshot has exactly :data:`DEPTH_LEVELS` levels a side, every size positive, bids strictly descending and
    asks strictly ascending. A diff usually breaks one of these (a removal has size 0; the count varies). A diff
    that passes all four is indistinguishable on the wire (same ``e``, ``U``/``u``/``pu``); the feed subscribes to
    depth5 alone on its own connection, so what reaches it with this envelope is expected to be the snapshot.
    """
    b = m.b
    a = m.a
    if len(b) != DEPTH_LEVELS or len(a) != DEPTH_LEVELS:
        return False
    prev = float("inf")
    for px, qty in b:
        if not qty > 0.0 or not px < prev:
            return False
        prev = px
    prev = float("-inf")
    for px, qty in a:
        if not qty > 0.0 or not px > prev:
            return False
        prev = px
    return True


DATA_DECODER = msgspec.json.Decoder(BookTicker | Depth, strict=False)


def url(base: str, route: str = "public") -> str:
    """Stream URL for a base (scheme + host[:port]) and a route name (public | market)."""
    try:
        return base.rstrip("/") + ROUTES[route]
    except KeyError:
        raise ValueError(f"unknown Binance route {route!r}; known: {', '.join(ROUTES)}") from None


def stream(symbol: str = DEFAULT_SYMBOL, channel: str = "bookTicker") -> str:
    if channel == "bookTicker":
        return f"{symbol.lower()}@bookTicker"
    if channel == "depth5":
        return f"{symbol.lower()}@depth5@100ms"
    raise ValueError(f"unknown Binance channel {channel!r}; known: {', '.join(CHANNELS)}")


def subscribe_frame(streams: list[str], request_id: int = SUBSCRIBE_ID) -> bytes:
    return msgspec.json.encode({"method": "SUBSCRIBE", "params": streams, "id": request_id})


#: streams one connection may carry (the venue's documented limit)
MAX_STREAMS_PER_CONNECTION = 1024
#: streams per SUBSCRIBE frame: a whole connection's worth in a few frames, well under the venue's 10 incoming
#: messages per second (the frames go out together right after the handshake)
STREAMS_PER_FRAME = 200


def subscribe_frames(symbols: list[str] | tuple[str, ...], channel: str) -> tuple[bytes, ...]:
    """SUBSCRIBE frames for one channel of many symbols on one connection (raw, unwrapped messages: every
    payload names its symbol in ``s``, so the combined-stream wrapper would only add a layer to decode)."""
    if len(symbols) > MAX_STREAMS_PER_CONNECTION:
        raise ValueError(f"{len(symbols)} streams on one Binance connection: at most {MAX_STREAMS_PER_CONNECTION}")
    streams = [stream(s, channel) for s in symbols]
    return tuple(subscribe_frame(streams[i:i + STREAMS_PER_FRAME]) for i in range(0, len(streams), STREAMS_PER_FRAME))


def classify(raw: bytes | str) -> tuple[FrameKind, str]:
    """Classify a frame the data decoder refused; returns the kind and a short description (off the hot path)."""
    try:
        obj: Any = decode_untrusted(raw)
    except msgspec.DecodeError:
        return FrameKind.MALFORMED, _excerpt(raw)
    if not isinstance(obj, dict):
        return FrameKind.UNKNOWN, _excerpt(raw)
    event = obj.get("e")
    if isinstance(event, str) and event in DATA_EVENTS:  # "e" may be anything, an unhashable list included
        return FrameKind.MALFORMED_DATA, _excerpt(raw)
    err = obj.get("error")
    if isinstance(err, dict) or ("code" in obj and "msg" in obj):
        body = err if isinstance(err, dict) else obj
        req = obj.get("id")
        text = f"code {body.get('code')}: {body.get('msg')}"
        if req is None or req == SUBSCRIBE_ID:
            return FrameKind.SUB_ERROR, text
        return FrameKind.VENUE_ERROR, text
    if "result" in obj and "id" in obj:
        if obj["result"] is None:
            return FrameKind.ACK, f"id {obj['id']}"
        return FrameKind.UNKNOWN, _excerpt(raw)
    return FrameKind.UNKNOWN, _excerpt(raw)


def frame_symbol(raw: bytes | str) -> str | None:
    """The ``s`` (symbol) of a data frame the typed decoder refused, when the frame is still JSON (off the hot path)."""
    try:
        obj: Any = decode_untrusted(raw)
    except msgspec.DecodeError:
        return None
    sym = obj.get("s") if isinstance(obj, dict) else None
    return sym if isinstance(sym, str) else None


def _excerpt(raw: bytes | str, n: int = 120) -> str:
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes | bytearray | memoryview) else raw
    return text[:n] + ("..." if len(text) > n else "")


def book_frame(seq: int, e_ms: int, symbol: str, bid: float, bid_qty: float, ask: float, ask_qty: float) -> str:
    """A ``bookTicker`` message carrying a captured top of book (capture replay). ``T`` is not captured: ``E``."""
    return msgspec.json.encode({"e": "bookTicker", "u": int(seq), "E": e_ms, "T": e_ms, "s": symbol,
                                "b": decimal_text(bid), "B": decimal_text(bid_qty), "a": decimal_text(ask),
                                "A": decimal_text(ask_qty)}).decode()


# --- Recorded Binance streams the live feed does not subscribe (read by `caerus data import`, never on the hot path).
# The books the import stores are decoded with the live types above (BookTicker: the same fields, the same string ->
# float conversion, the same bounds); these cover what a recording carries besides them.


class Combined(msgspec.Struct, gc=False):
    """A combined-stream frame (``/stream?streams=a/b``): the stream name and the message as the raw stream sends it
    (kept undecoded: the stream name says which type decodes it)."""

    stream: str
    data: msgspec.Raw


class SpotBookTicker(msgspec.Struct, gc=False):
    """Spot ``<symbol>@bookTicker``: the futures fields without an event type or any time (``e``/``E``/``T`` absent):
    its only clock is the receive stamp."""

    u: SeqId
    s: str
    b: float
    B: float
    a: float
    A: float


class DepthEvent(msgspec.Struct, gc=False):
    """Any ``depthUpdate`` (a diff on ``@depth@0ms``/``@depth@100ms``): its event time, symbol and last update id;
    the levels are skipped (a diff is not a top of book: the live feed refuses it as NOT_SNAPSHOT)."""

    e: str
    E: EpochMs
    s: str
    u: SeqId


class Trade(msgspec.Struct, gc=False):
    """``<symbol>@trade`` (futures and spot): event time, symbol, trade id, price and quantity."""

    e: str
    E: EpochMs
    s: str
    t: int
    p: float
    q: float


class RestDepth(msgspec.Struct, gc=False):
    """The REST depth snapshot a recorder writes before the diffs (``GET /fapi/v1/depth``; spot's has no ``E``)."""

    lastUpdateId: SeqId
    E: EpochMs | None = None


COMBINED_DECODER = msgspec.json.Decoder(Combined)
BOOK_TICKER_DECODER = msgspec.json.Decoder(BookTicker, strict=False)
SPOT_BOOK_TICKER_DECODER = msgspec.json.Decoder(SpotBookTicker, strict=False)
DEPTH_EVENT_DECODER = msgspec.json.Decoder(DepthEvent, strict=False)
TRADE_DECODER = msgspec.json.Decoder(Trade, strict=False)
REST_DEPTH_DECODER = msgspec.json.Decoder(RestDepth)
