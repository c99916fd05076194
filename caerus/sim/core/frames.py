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

from caerus.sim.core.catalogue import ListedInstrument
from caerus.sim.core.depth import DepthEvent, Level
from caerus.sim.core.market import BinanceQuote, HlBlock, HlLevel, depth_levels, hl_tick
from caerus.sim.core.marks import Marks
from caerus.sim.core.tape import Bar, TickerStats, Trade

SYMBOL = "BTCUSDT"  # the default instrument of the frame builders (each takes an InstrumentFormat)
COIN = "BTC"


@dataclass(frozen=True)
class InstrumentFormat:
    """How one instrument's top-of-book frames name it and print its numbers."""

    symbol: str  # Binance symbol (``BTCUSDT``)
    coin: str  # Hyperliquid coin (``BTC``)
    price_decimals: int  # Binance price decimals (the tick's)
    qty_decimals: int  # Binance quantity decimals (the step's)
    hl_px_decimals: int  # Hyperliquid price decimals at most (6 - szDecimals)
    hl_sz_decimals: int  # Hyperliquid szDecimals


BTC_FORMAT = InstrumentFormat(SYMBOL, COIN, 1, 3, 1, 5)


def instrument_format(inst: ListedInstrument) -> InstrumentFormat:
    return InstrumentFormat(inst.binance_symbol or inst.name, inst.name, inst.price_decimals, inst.qty_decimals,
                            inst.hl_max_decimals, inst.sz_decimals)


def ms(epoch_ns: int, t_ns: int) -> int:
    return (epoch_ns + t_ns) // 1_000_000


def hl_num(x: float, decimals: int) -> str:
    """Hyperliquid's number text: at most ``decimals`` decimals, trailing zeros dropped (one kept after the point)."""
    text = f"{x:.{decimals}f}"
    if decimals == 0:
        return text
    text = text.rstrip("0")
    return text + "0" if text.endswith(".") else text


# -- Binance ---------------------------------------------------------------------------------------------------
def binance_book_ticker(q: BinanceQuote, epoch_ns: int, fmt: InstrumentFormat = BTC_FORMAT) -> str:
    e = ms(epoch_ns, q.t_ns)
    pd, qd = fmt.price_decimals, fmt.qty_decimals
    return (
        f'{{"e":"bookTicker","u":{q.update_id},"E":{e},"T":{e - 1},"s":"{fmt.symbol}",'
        f'"b":"{q.bid:.{pd}f}","B":"{q.bid_qty:.{qd}f}","a":"{q.ask:.{pd}f}","A":"{q.ask_qty:.{qd}f}"}}'
    )


def _levels(levels: tuple[Level, ...] | list[Level], f: InstrumentFormat = BTC_FORMAT) -> str:
    pd, qd = f.price_decimals, f.qty_decimals
    return ",".join(f'["{p:.{pd}f}","{s:.{qd}f}"]' for p, s in levels)


def binance_depth(ev: DepthEvent, t_ns: int, epoch_ns: int, f: InstrumentFormat = BTC_FORMAT) -> str:
    """A ``depthUpdate`` event of ``f``'s symbol: a diff (changed levels, size 0 = removed) or a partial-book
    snapshot (top N)."""
    e = ms(epoch_ns, t_ns)
    return (
        f'{{"e":"depthUpdate","E":{e},"T":{e - 1},"s":"{f.symbol}","U":{ev.first_id},"u":{ev.last_id},'
        f'"pu":{ev.prev_id},"b":[{_levels(ev.bids, f)}],"a":[{_levels(ev.asks, f)}]}}'
    )


def binance_depth_snapshot(bids: list[Level], asks: list[Level], update_id: int, t_ns: int, epoch_ns: int,
                           f: InstrumentFormat = BTC_FORMAT) -> dict[str, Any]:
    """``GET /fapi/v1/depth`` body (numbers on ``f``'s grid)."""
    e = ms(epoch_ns, t_ns)
    pd, qd = f.price_decimals, f.qty_decimals
    return {"lastUpdateId": update_id, "E": e, "T": e - 1,
            "bids": [[f"{p:.{pd}f}", f"{s:.{qd}f}"] for p, s in bids],
            "asks": [[f"{p:.{pd}f}", f"{s:.{qd}f}"] for p, s in asks]}


def binance_agg_trade(t: Trade, epoch_ns: int, f: InstrumentFormat = BTC_FORMAT) -> str:
    e = ms(epoch_ns, t.t_ns)
    pd, qd = f.price_decimals, f.qty_decimals
    return (
        f'{{"e":"aggTrade","E":{e},"a":{t.trade_id},"s":"{f.symbol}","p":"{t.px:.{pd}f}","q":"{t.qty:.{qd}f}",'
        f'"f":{t.trade_id * 3},"l":{t.trade_id * 3 + 2},"T":{e - 1},"m":{"true" if t.buyer_is_maker else "false"}}}'
    )


def binance_trade(t: Trade, epoch_ns: int, f: InstrumentFormat = BTC_FORMAT) -> str:
    e = ms(epoch_ns, t.t_ns)
    pd, qd = f.price_decimals, f.qty_decimals
    return (
        f'{{"e":"trade","E":{e},"T":{e - 1},"s":"{f.symbol}","t":{t.trade_id},"p":"{t.px:.{pd}f}",'
        f'"q":"{t.qty:.{qd}f}","X":"MARKET","m":{"true" if t.buyer_is_maker else "false"}}}'
    )


def binance_kline_row(bar: Bar, minutes: int, f: InstrumentFormat = BTC_FORMAT) -> list[Any]:
    """``GET /fapi/v1/klines``' 12-field row for a bar (numbers on ``f``'s grid)."""
    pd, qd = f.price_decimals, f.qty_decimals
    t = bar.start_ns // 1_000_000
    return [t, f"{bar.open:.{pd}f}", f"{bar.high:.{pd}f}", f"{bar.low:.{pd}f}", f"{bar.close:.{pd}f}",
            f"{bar.volume:.{qd}f}", t + minutes * 60_000 - 1, f"{bar.quote_volume:.5f}", bar.count,
            f"{bar.taker_buy_volume:.{qd}f}", f"{bar.taker_buy_quote:.5f}", "0"]


def binance_kline(bar: Bar, interval: str, minutes: int, now_ms: int, f: InstrumentFormat = BTC_FORMAT) -> str:
    """One ``kline`` stream event for the bar as it stands (``x``: closed, false while its interval runs)."""
    t = bar.start_ns // 1_000_000
    close = t + minutes * 60_000 - 1
    pd, qd = f.price_decimals, f.qty_decimals
    return (
        f'{{"e":"kline","E":{now_ms},"s":"{f.symbol}","k":{{"t":{t},"T":{close},"s":"{f.symbol}","i":"{interval}",'
        f'"f":{bar.first_id},"L":{bar.last_id},"o":"{bar.open:.{pd}f}","c":"{bar.close:.{pd}f}",'
        f'"h":"{bar.high:.{pd}f}","l":"{bar.low:.{pd}f}","v":"{bar.volume:.{qd}f}","n":{bar.count},'
        f'"x":{"true" if now_ms > close else "false"},"q":"{bar.quote_volume:.5f}","V":"{bar.taker_buy_volume:.{qd}f}",'
        f'"Q":"{bar.taker_buy_quote:.5f}","B":"0"}}}}'
    )


def binance_mini_ticker(st: TickerStats, t_ns: int, epoch_ns: int, f: InstrumentFormat = BTC_FORMAT) -> str:
    pd, qd = f.price_decimals, f.qty_decimals
    return (
        f'{{"e":"24hrMiniTicker","E":{ms(epoch_ns, t_ns)},"s":"{f.symbol}","c":"{st.last:.{pd}f}",'
        f'"o":"{st.open:.{pd}f}","h":"{st.high:.{pd}f}","l":"{st.low:.{pd}f}","v":"{st.volume:.{qd}f}",'
        f'"q":"{st.quote_volume:.2f}"}}'
    )


def binance_ticker_fields(st: TickerStats, t_ns: int, epoch_ns: int, fmt: InstrumentFormat = BTC_FORMAT
                          ) -> dict[str, Any]:
    """The 24 h statistics both the ``@ticker`` stream and ``GET /fapi/v1/ticker/24hr`` carry (stream letters)."""
    change = st.last - st.open
    pd, qd = fmt.price_decimals, fmt.qty_decimals
    return {"s": fmt.symbol, "p": f"{change:.{pd}f}", "P": f"{(change / st.open * 100) if st.open else 0:.3f}",
            "w": f"{st.vwap:.{pd + 1}f}", "c": f"{st.last:.{pd}f}", "Q": f"{st.last_qty:.{qd}f}",
            "o": f"{st.open:.{pd}f}", "h": f"{st.high:.{pd}f}", "l": f"{st.low:.{pd}f}", "v": f"{st.volume:.{qd}f}",
            "q": f"{st.quote_volume:.2f}",
            "O": ms(epoch_ns, st.first_t_ns), "C": ms(epoch_ns, t_ns), "F": st.first_id, "L": st.last_id,
            "n": st.count}


def binance_ticker(st: TickerStats, t_ns: int, epoch_ns: int, f: InstrumentFormat = BTC_FORMAT) -> str:
    body = {"e": "24hrTicker", "E": ms(epoch_ns, t_ns), **binance_ticker_fields(st, t_ns, epoch_ns, f)}
    return json.dumps(body, separators=(",", ":"))


def binance_mark_fields(marks: Marks, t_ns: int, epoch_ns: int, fmt: InstrumentFormat = BTC_FORMAT
                        ) -> dict[str, Any]:
    """Mark price event fields (the ``@markPrice`` stream and ``GET /fapi/v1/premiumIndex``) from the symbol's
    marks (caerus.sim.core.marks): mark, index, the interval's predicted funding rate and the next funding time."""
    e = ms(epoch_ns, t_ns)
    mark = marks.mark or 0.0
    return {"e": "markPriceUpdate", "E": e, "s": fmt.symbol, "p": f"{mark:.8f}", "ap": f"{mark:.8f}",
            "P": f"{mark:.8f}", "i": f"{marks.index or 0.0:.8f}", "r": f"{marks.rate:.8f}",
            "T": marks.next_funding_ms(e)}


def binance_mark_price(marks: Marks, t_ns: int, epoch_ns: int, f: InstrumentFormat = BTC_FORMAT) -> str:
    return json.dumps(binance_mark_fields(marks, t_ns, epoch_ns, f), separators=(",", ":"))


def binance_combined(stream: str, raw: str) -> str:
    return f'{{"stream":"{stream}","data":{raw}}}'


def binance_result(req_id: object, result: object = None) -> str:
    return json.dumps({"result": result, "id": req_id}, separators=(",", ":"))


def binance_error(code: int, msg: str, req_id: object) -> str:
    return json.dumps({"error": {"code": code, "msg": msg}, "id": req_id}, separators=(",", ":"))


# -- Hyperliquid -----------------------------------------------------------------------------------------------
def _hl_level(level: HlLevel | None, tick: float, fmt: InstrumentFormat = BTC_FORMAT) -> str:
    if level is None:
        return "null"
    return (f'{{"px":"{hl_num(level.px, fmt.hl_px_decimals)}","sz":"{hl_num(level.sz, fmt.hl_sz_decimals)}",'
            f'"n":{level.n}}}')


def hl_bbo(block: HlBlock, epoch_ns: int, fmt: InstrumentFormat = BTC_FORMAT) -> str:
    tick = hl_tick(block.bid.px if block.bid else block.ask.px if block.ask else 1.0, fmt.hl_sz_decimals)
    return (
        f'{{"channel":"bbo","data":{{"coin":"{fmt.coin}","time":{ms(epoch_ns, block.t_ns)},'
        f'"bbo":[{_hl_level(block.bid, tick, fmt)},{_hl_level(block.ask, tick, fmt)}]}}}}'
    )


def hl_l2_book(block: HlBlock, t_ns: int, epoch_ns: int, depth: int, fmt: InstrumentFormat = BTC_FORMAT) -> str:
    """Full ``depth``-level snapshot of ``fmt``'s coin as of ``block`` (``time`` is the block time, as on the
    venue); the levels behind the top are synthetic, seeded by the block, on the coin's price grid."""
    bid_px = block.bid.px if block.bid else block.ask.px - 1  # type: ignore[union-attr]
    tick = hl_tick(bid_px, fmt.hl_sz_decimals)
    least = 10.0 ** -fmt.hl_sz_decimals  # the smallest size the coin shows (a level is never 0)
    sides = []
    for side, best, lvl0 in ((-1, block.bid, block.bid), (+1, block.ask, block.ask)):
        base = best.px if best else bid_px + (tick if side > 0 else 0)
        levels = depth_levels(base, tick, side, depth, block.index * 2 + (side > 0))
        parts = []
        for i, (px, sz) in enumerate(levels):
            if i == 0 and lvl0 is not None:
                parts.append(_hl_level(lvl0, tick, fmt))
            else:
                parts.append(f'{{"px":"{hl_num(px, fmt.hl_px_decimals)}",'
                             f'"sz":"{hl_num(max(sz, least), fmt.hl_sz_decimals)}","n":{1 + (i * 7 + 3) % 11}}}')
        sides.append("[" + ",".join(parts) + "]")
    return (
        f'{{"channel":"l2Book","data":{{"coin":"{fmt.coin}","time":{ms(epoch_ns, block.t_ns)},'
        f'"levels":[{sides[0]},{sides[1]}]}}}}'
    )


def hl_trades(trades: list[Trade], epoch_ns: int, fmt: InstrumentFormat = BTC_FORMAT) -> str:
    """A ``trades`` frame: side ``A`` when the seller was the taker (the bid was hit), ``B`` when the buyer was."""
    items = [{"coin": fmt.coin, "side": "A" if t.buyer_is_maker else "B", "px": hl_num(t.px, fmt.hl_px_decimals),
              "sz": hl_num(t.qty, fmt.hl_sz_decimals), "time": ms(epoch_ns, t.t_ns), "hash": f"0x{t.trade_id:064x}",
              "tid": t.trade_id, "users": [HL_MAKER, HL_TAKER]} for t in trades]
    return json.dumps({"channel": "trades", "data": items}, separators=(",", ":"))


def hl_candle_fields(bar: Bar, interval: str, minutes: int, fmt: InstrumentFormat = BTC_FORMAT) -> dict[str, Any]:
    """One candle (``candleSnapshot`` element and the ``candle`` channel's data), numbers as the coin shows them."""
    t = bar.start_ns // 1_000_000
    pd = fmt.hl_px_decimals
    return {"t": t, "T": t + minutes * 60_000 - 1, "s": fmt.coin, "i": interval, "o": hl_num(bar.open, pd),
            "c": hl_num(bar.close, pd), "h": hl_num(bar.high, pd), "l": hl_num(bar.low, pd),
            "v": hl_num(bar.volume, fmt.hl_sz_decimals), "n": bar.count}


def hl_candle(bar: Bar, interval: str, minutes: int, fmt: InstrumentFormat = BTC_FORMAT) -> str:
    """A ``candle`` channel frame: the coin's current candle of that interval, sent after each trade."""
    return json.dumps({"channel": "candle", "data": hl_candle_fields(bar, interval, minutes, fmt)},
                      separators=(",", ":"))


def hl_mid(block: HlBlock, fmt: InstrumentFormat = BTC_FORMAT) -> str | None:
    if block.bid is None or block.ask is None:
        return None
    return hl_num((block.bid.px + block.ask.px) / 2, fmt.hl_px_decimals)


def hl_all_mids(mids: dict[str, str]) -> str | None:
    """An ``allMids`` frame carrying every coin's mid (``mids``: coin -> mid text); None when there is none."""
    if not mids:
        return None
    return json.dumps({"channel": "allMids", "data": {"mids": mids}}, separators=(",", ":"))


def hl_asset_ctx(block: HlBlock, day: TickerStats, marks: Marks, fmt: InstrumentFormat = BTC_FORMAT
                 ) -> dict[str, Any]:
    """The perp's asset context (``metaAndAssetCtxs`` and the ``activeAssetCtx`` channel), session as the day: the
    hour's predicted funding, the last premium sample, the index as ``oraclePx`` and the mark
    (caerus.sim.core.marks)."""
    pd = fmt.hl_px_decimals
    mid = hl_mid(block, fmt) or "0"
    bid = hl_num(block.bid.px, pd) if block.bid else mid
    ask = hl_num(block.ask.px, pd) if block.ask else mid
    mark = hl_num(marks.mark, pd) if marks.mark is not None else mid
    oracle = hl_num(marks.index, pd) if marks.index is not None else mid
    return {"funding": hl_rate(marks.rate), "openInterest": "10000.0",
            "prevDayPx": hl_num(day.open, pd) if day.count else mid, "dayNtlVlm": hl_num(day.quote_volume, 2),
            "premium": hl_rate(marks.premium), "oraclePx": oracle, "markPx": mark, "midPx": mid,
            "impactPxs": [bid, ask], "dayBaseVlm": hl_num(day.volume, fmt.hl_sz_decimals)}


def hl_rate(x: float) -> str:
    """A funding rate or premium as Hyperliquid prints it (``"0.0000125"``: fixed point, trailing zeros dropped)."""
    return hl_num(x, 10)


#: the asset context of a coin with no book (listed, not emulated): the venue shows a null mid, no impact prices
HL_EMPTY_ASSET_CTX: dict[str, Any] = {
    "funding": "0.0", "openInterest": "0.0", "prevDayPx": "0.0", "dayNtlVlm": "0.0", "premium": None,
    "oraclePx": "0.0", "markPx": "0.0", "midPx": None, "impactPxs": None, "dayBaseVlm": "0.0"}


def hl_active_asset_ctx(block: HlBlock, day: TickerStats, marks: Marks, fmt: InstrumentFormat = BTC_FORMAT) -> str:
    return json.dumps({"channel": "activeAssetCtx", "data": {"coin": fmt.coin,
                                                             "ctx": hl_asset_ctx(block, day, marks, fmt)}},
                      separators=(",", ":"))


def hl_subscription_response(method: str, subscription: object) -> str:
    return json.dumps(
        {"channel": "subscriptionResponse", "data": {"method": method, "subscription": subscription}},
        separators=(",", ":"),
    )


def hl_error(text: str) -> str:
    return json.dumps({"channel": "error", "data": text}, separators=(",", ":"))


HL_PONG = '{"channel":"pong"}'
HL_MAKER = "0x0000000000000000000000000000000000000001"  # counterparties shown on emulated trades
HL_TAKER = "0x0000000000000000000000000000000000000002"
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
