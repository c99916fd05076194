"""Hyperliquid market data: URL, subscribe/ping frames, typed msgspec decoders and frame classes.

Every frame is ``{"channel": <name>, "data": ...}``, so one tagged-union decoder handles all known channels in a
single pass on the hot path: ``bbo`` (top of book per block, either side may be ``null``), ``l2Book`` (a full
snapshot; ``"fast": true`` gives 5 levels every ~0.5 s), ``subscriptionResponse``, ``pong`` and ``error``. Prices
and sizes are strings converted to float once (``strict=False``); unknown fields are ignored. A non-JSON text
greeting ("Websocket connection established.") has been seen: :func:`classify` names it instead of failing.

The server closes a connection it has received nothing on for 60 s: the feed sends ``{"method":"ping"}`` well
inside that (default every 20 s).
"""

from __future__ import annotations

from typing import Any

import msgspec

from caerus.net.untrusted import decode_untrusted
from caerus.venuekit.frames import EpochMs, FrameKind, decimal_text

DEFAULT_BASE_URL = "wss://api.hyperliquid.xyz"
TESTNET_BASE_URL = "wss://api.hyperliquid-testnet.xyz"
PATH = "/ws"
DEFAULT_SYMBOL = "BTC"
CHANNELS = ("bbo", "l2Book")
PING_FRAME = b'{"method":"ping"}'
DEFAULT_KEEPALIVE_S = 20.0  # server idle limit is 60 s
#: bbo is sent only when the top changes (~0.1 s median gap, quiet spells of seconds); 30 s means dead
DEFAULT_STALE_AFTER_S = 30.0
GREETING = b"Websocket connection established."


class Level(msgspec.Struct, gc=False):
    px: float
    sz: float
    n: int = 0


class BboData(msgspec.Struct, gc=False):
    coin: str
    time: EpochMs
    bbo: tuple[Level | None, Level | None]


class L2Data(msgspec.Struct, gc=False):
    coin: str
    time: EpochMs
    levels: tuple[list[Level], list[Level]]


class Bbo(msgspec.Struct, tag_field="channel", tag="bbo", gc=False):
    data: BboData


class L2Book(msgspec.Struct, tag_field="channel", tag="l2Book", gc=False):
    data: L2Data


class Pong(msgspec.Struct, tag_field="channel", tag="pong"):
    pass


class SubscriptionResponse(msgspec.Struct, tag_field="channel", tag="subscriptionResponse"):
    data: Any = None


class Error(msgspec.Struct, tag_field="channel", tag="error"):
    data: Any = None


DECODER = msgspec.json.Decoder(Bbo | L2Book | Pong | SubscriptionResponse | Error, strict=False)


def url(base: str) -> str:
    return base.rstrip("/") + PATH


def subscribe_frame(coin: str = DEFAULT_SYMBOL, channel: str = "bbo") -> bytes:
    if channel == "bbo":
        sub: dict[str, Any] = {"type": "bbo", "coin": coin}
    elif channel == "l2Book":
        sub = {"type": "l2Book", "coin": coin, "fast": True}
    else:
        raise ValueError(f"unknown Hyperliquid channel {channel!r}; known: {', '.join(CHANNELS)}")
    return msgspec.json.encode({"method": "subscribe", "subscription": sub})


#: subscriptions one client IP may hold across its connections (the venue's documented limit)
MAX_SUBSCRIPTIONS = 1000
#: websocket connections one client IP may hold
MAX_CONNECTIONS = 10


def subscribe_frames(coins: list[str] | tuple[str, ...], channel: str) -> tuple[bytes, ...]:
    """One subscribe frame per coin (the venue takes one subscription per message); refused past the limit."""
    if len(coins) > MAX_SUBSCRIPTIONS:
        raise ValueError(f"{len(coins)} Hyperliquid subscriptions: at most {MAX_SUBSCRIPTIONS} per client IP")
    return tuple(subscribe_frame(c, channel) for c in coins)


def frame_coin(raw: bytes | str) -> str | None:
    """The ``data.coin`` of a data frame the typed decoder refused, when the frame is still JSON (off the hot
    path)."""
    try:
        obj: Any = decode_untrusted(raw)
    except msgspec.DecodeError:
        return None
    data = obj.get("data") if isinstance(obj, dict) else None
    coin = data.get("coin") if isinstance(data, dict) else None
    return coin if isinstance(coin, str) else None


def classify_control(msg: Pong | SubscriptionResponse | Error, subscribed: bool) -> tuple[FrameKind, str]:
    """Kind of a decoded non-data frame. An error before the subscription was acknowledged is a rejection."""
    if isinstance(msg, Pong):
        return FrameKind.PONG, ""
    if isinstance(msg, SubscriptionResponse):
        return FrameKind.ACK, str(msg.data)[:120]
    text = str(msg.data)[:200]
    lowered = text.lower()
    if "already subscribed" in lowered:
        # A duplicate subscription (ours after a retry, or the venue echoing one): our subscription stands, so this
        # is counted and logged, never a reason to drop a working connection and leave a gap in the book.
        return FrameKind.VENUE_ERROR, f"already subscribed: {text}"
    if not subscribed or "subscri" in lowered:
        return FrameKind.SUB_ERROR, text
    return FrameKind.VENUE_ERROR, text


def classify(raw: bytes | str) -> tuple[FrameKind, str]:
    """Classify a frame the decoder refused (off the hot path)."""
    data = raw.encode() if isinstance(raw, str) else bytes(raw)
    if data.strip().startswith(GREETING[:-1]):
        return FrameKind.GREETING, data[:80].decode("utf-8", "replace")
    try:
        obj: Any = decode_untrusted(data)
    except msgspec.DecodeError:
        return FrameKind.MALFORMED, _excerpt(data)
    if isinstance(obj, dict) and obj.get("channel") in CHANNELS:
        return FrameKind.MALFORMED_DATA, _excerpt(data)
    return FrameKind.UNKNOWN, _excerpt(data)


def _excerpt(data: bytes, n: int = 120) -> str:
    text = data.decode("utf-8", "replace")
    return text[:n] + ("..." if len(text) > n else "")


def book_frame(seq: int, t_ms: int, coin: str, bid: float, bid_qty: float, ask: float, ask_qty: float) -> str:
    """A ``bbo`` message carrying a captured top of book (capture replay; ``seq`` is ours, not on the wire).
    Level order counts ``n`` are not captured: 1."""
    return msgspec.json.encode({"channel": "bbo", "data": {"coin": coin, "time": t_ms, "bbo": [
        {"px": decimal_text(bid), "sz": decimal_text(bid_qty), "n": 1},
        {"px": decimal_text(ask), "sz": decimal_text(ask_qty), "n": 1}]}}).decode()


# --- Recorded channels the live feed does not subscribe (read by `caerus data import`, never on the hot path).


class TradeItem(msgspec.Struct, gc=False):
    coin: str
    px: float
    sz: float
    time: EpochMs


class Trades(msgspec.Struct, tag_field="channel", tag="trades", gc=False):
    """``trades``: a list of prints (the first message after subscribing repeats recent ones, so their times are not
    a clock: the import counts them and takes no clock sample from them)."""

    data: list[TradeItem]


#: what a recording carries: the live channels plus trades (the same struct types for the books)
RECORDED_DECODER = msgspec.json.Decoder(Bbo | L2Book | Trades | Pong | SubscriptionResponse | Error, strict=False)
