"""Wire text of every frame the emulator sends, built from market-model events (pure functions).

Binance frames follow the USD-M futures market streams (prices and quantities as strings); Hyperliquid frames
follow the public WebSocket API. ``epoch_ns`` is the wall-clock time of the session start: exchange timestamps
are ``epoch_ns + scheduled offset``, truncated to milliseconds as the venues send them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from caerus.sim.market import BINANCE_QTY_STEP, BINANCE_TICK, BinanceQuote, HlBlock, HlLevel, depth_levels, hl_tick

SYMBOL = "BTCUSDT"
COIN = "BTC"


def ms(epoch_ns: int, t_ns: int) -> int:
    return (epoch_ns + t_ns) // 1_000_000


def _hl_num(x: float, decimals: int) -> str:
    text = f"{x:.{decimals}f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


# -- Binance ---------------------------------------------------------------------------------------------------
def binance_book_ticker(q: BinanceQuote, epoch_ns: int) -> str:
    e = ms(epoch_ns, q.t_ns)
    return (
        f'{{"e":"bookTicker","u":{q.update_id},"E":{e},"T":{e - 1},"s":"{SYMBOL}",'
        f'"b":"{q.bid:.1f}","B":"{q.bid_qty:.3f}","a":"{q.ask:.1f}","A":"{q.ask_qty:.3f}"}}'
    )


def binance_depth(q: BinanceQuote, t_ns: int, epoch_ns: int, levels: int, first_id: int, prev_id: int) -> str:
    """A depth<N> partial-book snapshot around quote ``q`` (``U``/``u``/``pu`` chained by the caller)."""
    e = ms(epoch_ns, t_ns)
    seed = q.update_id
    bids = depth_levels(q.bid, BINANCE_TICK, -1, levels, seed)
    asks = depth_levels(q.ask, BINANCE_TICK, +1, levels, seed + 1)
    bids[0] = (q.bid, q.bid_qty)
    asks[0] = (q.ask, q.ask_qty)
    b = ",".join(f'["{p:.1f}","{s:.3f}"]' for p, s in bids)
    a = ",".join(f'["{p:.1f}","{s:.3f}"]' for p, s in asks)
    return (
        f'{{"e":"depthUpdate","E":{e},"T":{e - 1},"s":"{SYMBOL}","U":{first_id},"u":{q.update_id},'
        f'"pu":{prev_id},"b":[{b}],"a":[{a}]}}'
    )


def binance_mark_price(q: BinanceQuote, t_ns: int, epoch_ns: int) -> str:
    e = ms(epoch_ns, t_ns)
    mid = (q.bid + q.ask) / 2
    next_funding = (e // 28_800_000 + 1) * 28_800_000
    return (
        f'{{"e":"markPriceUpdate","E":{e},"s":"{SYMBOL}","p":"{mid:.8f}","ap":"{mid:.8f}","P":"{mid:.8f}",'
        f'"i":"{mid - 15:.8f}","r":"0.00010000","T":{next_funding}}}'
    )


def binance_agg_trade(q: BinanceQuote, prev: BinanceQuote, trade_id: int, epoch_ns: int) -> str:
    """A trade at the level the market just moved through (buyer-maker when the bid was hit)."""
    e = ms(epoch_ns, q.t_ns)
    seller_hit_bid = q.bid < prev.bid
    px = prev.bid if seller_hit_bid else prev.ask
    qty = max(BINANCE_QTY_STEP, round(prev.bid_qty if seller_hit_bid else prev.ask_qty, 3))
    return (
        f'{{"e":"aggTrade","E":{e},"a":{trade_id},"s":"{SYMBOL}","p":"{px:.1f}","q":"{qty:.3f}",'
        f'"f":{trade_id * 3},"l":{trade_id * 3 + 2},"T":{e - 1},"m":{"true" if seller_hit_bid else "false"}}}'
    )


def binance_combined(stream: str, raw: str) -> str:
    return f'{{"stream":"{stream}","data":{raw}}}'


def binance_result(req_id: object, result: object = None) -> str:
    return json.dumps({"result": result, "id": req_id}, separators=(",", ":"))


def binance_error(code: int, msg: str, req_id: object) -> str:
    return json.dumps({"error": {"code": code, "msg": msg}, "id": req_id}, separators=(",", ":"))


# -- Hyperliquid -----------------------------------------------------------------------------------------------
def _hl_level(level: HlLevel | None, tick: float) -> str:
    if level is None:
        return "null"
    return f'{{"px":"{_hl_num(level.px, 1)}","sz":"{_hl_num(level.sz, 5)}","n":{level.n}}}'


def hl_bbo(block: HlBlock, epoch_ns: int) -> str:
    tick = hl_tick(block.bid.px if block.bid else block.ask.px if block.ask else 1.0)
    return (
        f'{{"channel":"bbo","data":{{"coin":"{COIN}","time":{ms(epoch_ns, block.t_ns)},'
        f'"bbo":[{_hl_level(block.bid, tick)},{_hl_level(block.ask, tick)}]}}}}'
    )


def hl_l2_book(block: HlBlock, t_ns: int, epoch_ns: int, depth: int) -> str:
    """Full ``depth``-level snapshot as of ``block`` (``time`` is the block time, as on the venue)."""
    bid_px = block.bid.px if block.bid else block.ask.px - 1  # type: ignore[union-attr]
    tick = hl_tick(bid_px)
    sides = []
    for side, best, lvl0 in ((-1, block.bid, block.bid), (+1, block.ask, block.ask)):
        base = best.px if best else bid_px + (tick if side > 0 else 0)
        levels = depth_levels(base, tick, side, depth, block.index * 2 + (side > 0))
        parts = []
        for i, (px, sz) in enumerate(levels):
            if i == 0 and lvl0 is not None:
                parts.append(_hl_level(lvl0, tick))
            else:
                parts.append(f'{{"px":"{_hl_num(px, 1)}","sz":"{_hl_num(sz, 5)}","n":{1 + (i * 7 + 3) % 11}}}')
        sides.append("[" + ",".join(parts) + "]")
    return (
        f'{{"channel":"l2Book","data":{{"coin":"{COIN}","time":{ms(epoch_ns, block.t_ns)},'
        f'"levels":[{sides[0]},{sides[1]}]}}}}'
    )


def hl_subscription_response(method: str, subscription: object) -> str:
    return json.dumps(
        {"channel": "subscriptionResponse", "data": {"method": method, "subscription": subscription}},
        separators=(",", ":"),
    )


def hl_error(text: str) -> str:
    return json.dumps({"channel": "error", "data": text}, separators=(",", ":"))


HL_PONG = '{"channel":"pong"}'
HL_GREETING = "Websocket connection established."


# -- fault payloads --------------------------------------------------------------------------------------------
def _binance_malformed(i: int) -> str:
    return f'{{"e":"bookTicker","u":{i},"E":17000000000'


def _hl_malformed(i: int) -> str:
    return '{"channel":"bbo","data":{"coin":"BTC","time":'


def _binance_error(i: int) -> str:
    return binance_error(2, "Invalid request: emulator error-frames scenario", None)


def _hl_error(i: int) -> str:
    return hl_error(f"emulator error-frames scenario ({i})")


_DEEP = "[" * 100_000 + "]" * 100_000  # nesting far past any decoder's limit (the 2026 boundary report's frame)


def _binance_hostile(last: dict[str, Any]) -> list[str]:
    """Frames shaped like the last bookTicker ``last`` that a feed must survive (issue 12's venue boundary)."""
    u, e = int(last["u"]), int(last["E"])
    bid, ask = float(last["b"]), float(last["a"])
    return [
        json.dumps(last | {"u": 1 << 63}),  # an id past int64: MALFORMED
        json.dumps(last | {"u": u + 1, "s": "ETHUSDT", "b": "3000.00", "a": "3000.10"}),  # WRONG_INSTRUMENT
        '{"e":"bookTicker","x":' + _DEEP + "}",  # pathologically nested
        json.dumps({"e": "depthUpdate", "E": e, "T": e, "s": last["s"], "U": u, "u": u + 1, "pu": u,  # a diff
                    "b": [[last["b"], "0"]], "a": [[last["a"], "2.000"]]}),  # NOT_SNAPSHOT
        json.dumps(last | {"u": u + 2, "b": f"{ask + 1.0:.2f}", "a": f"{bid:.2f}"}),  # CROSSED: quote withdrawn
    ]


def _hl_hostile(last: dict[str, Any]) -> list[str]:
    """Frames shaped like the last bbo ``last`` that a feed must survive."""
    d = last["data"]
    bid, ask = d["bbo"]
    return [
        json.dumps({"channel": "bbo", "data": d | {"time": 1 << 62}}),  # a time past int64 ns: MALFORMED
        json.dumps({"channel": "bbo", "data": d | {"coin": "ETH"}}),  # WRONG_INSTRUMENT
        '{"channel":"error","data":' + _DEEP + "}",  # pathologically nested
        json.dumps({"channel": "bbo", "data": d | {"bbo": [bid, None]}}),  # NULL_SIDE: the ask withdrawn
        json.dumps({"channel": "bbo", "data": d | {"bbo": [ask, bid]}}),  # CROSSED
    ]


@dataclass(frozen=True)
class FaultFrames:
    """One venue's fault payloads: truncated JSON, an error frame, the head of an oversized data frame, and the
    hostile frames derived from the last data frame a connection was sent."""

    malformed: Callable[[int], str]
    error: Callable[[int], str]
    oversized_head: str
    hostile: Callable[[dict[str, Any]], list[str]]


#: venue -> its fault payloads (one entry per emulated venue)
FAULTS: dict[str, FaultFrames] = {
    "binance": FaultFrames(_binance_malformed, _binance_error, '{"e":"bookTicker","pad":"', _binance_hostile),
    "hyperliquid": FaultFrames(_hl_malformed, _hl_error, '{"channel":"bbo","pad":"', _hl_hostile),
}


def malformed_frame(venue: str, i: int) -> str:
    """Truncated JSON, the way a broken proxy or a cut frame looks."""
    return FAULTS[venue].malformed(i)


#: how a top-of-book data frame starts (the hostile frames are derived from the newest one a connection was sent)
TOP_OF_BOOK_PREFIXES = ('{"e":"bookTicker"', '{"channel":"bbo"')


def hostile_frames(venue: str, last_data: str) -> list[str]:
    """Adversarial frames built from ``last_data`` (the newest bookTicker / bbo sent): an id or time past int64, another
    instrument, pathological nesting, a depth diff (Binance), a withdrawn side (Hyperliquid), a crossed book."""
    return FAULTS[venue].hostile(json.loads(last_data))


def error_frame(venue: str, i: int) -> str:
    return FAULTS[venue].error(i)


def oversized_frame(venue: str, size_bytes: int) -> str:
    """Valid JSON of about ``size_bytes``: a client with a smaller max_size must refuse it (close 1009)."""
    head = FAULTS[venue].oversized_head
    return head + "x" * max(0, size_bytes - len(head) - 2) + '"}'
