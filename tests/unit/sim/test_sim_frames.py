"""Frame text: the exact venue shapes, strings for prices, timestamps from the scheduled times."""

from __future__ import annotations

import json

from caerus.sim.core import frames
from caerus.sim.core.depth import DepthBook, DepthEvent
from caerus.sim.core.market import BinanceQuote, HlBlock, HlLevel

EPOCH = 1_790_000_000_000_000_000
Q = BinanceQuote(t_ns=12_345_678, update_id=5_000_000_123, bid=95000.1, bid_qty=1.5, ask=95000.2, ask_qty=0.002)


def test_book_ticker_shape() -> None:
    d = json.loads(frames.binance_book_ticker(Q, EPOCH))
    assert d == {"e": "bookTicker", "u": 5_000_000_123, "E": 1_790_000_000_012, "T": 1_790_000_000_011,
                 "s": "BTCUSDT", "b": "95000.1", "B": "1.500", "a": "95000.2", "A": "0.002"}


def test_combined_wrapper_and_depth_chain() -> None:
    book = DepthBook(seed=1)
    book.apply(Q)
    bids, asks = book.top(5)
    raw = frames.binance_depth(DepthEvent(5_000_000_100, Q.update_id, 5_000_000_099, Q.t_ns, tuple(bids),
                                          tuple(asks)), Q.t_ns, EPOCH)
    d = json.loads(frames.binance_combined("btcusdt@depth5@100ms", raw))
    assert d["stream"] == "btcusdt@depth5@100ms"
    data = d["data"]
    assert (data["e"], data["U"], data["u"], data["pu"]) == ("depthUpdate", 5_000_000_100, 5_000_000_123,
                                                             5_000_000_099)
    assert len(data["b"]) == len(data["a"]) == 5
    assert data["b"][0] == ["95000.1", "1.500"] and data["a"][0] == ["95000.2", "0.002"]
    bids = [float(p) for p, _ in data["b"]]
    asks = [float(p) for p, _ in data["a"]]
    assert bids == sorted(bids, reverse=True) and asks == sorted(asks)


def test_binance_control_frames() -> None:
    assert json.loads(frames.binance_result(7)) == {"result": None, "id": 7}
    assert json.loads(frames.binance_error(2, "Invalid request: x", 3)) == {
        "error": {"code": 2, "msg": "Invalid request: x"}, "id": 3}


def test_hyperliquid_bbo_and_l2() -> None:
    block = HlBlock(t_ns=70_000_000, index=1, bid=HlLevel(95000.0, 0.5, 3), ask=None, changed=True)
    d = json.loads(frames.hl_bbo(block, EPOCH))
    assert d == {"channel": "bbo", "data": {"coin": "BTC", "time": 1_790_000_000_070,
                                            "bbo": [{"px": "95000.0", "sz": "0.5", "n": 3}, None]}}
    full = HlBlock(t_ns=70_000_000, index=1, bid=HlLevel(95000.0, 0.5, 3), ask=HlLevel(95001.0, 1.25, 2),
                   changed=True)
    book = json.loads(frames.hl_l2_book(full, 500_000_000, EPOCH, 5))["data"]
    bids, asks = book["levels"]
    assert len(bids) == len(asks) == 5
    assert bids[0] == {"px": "95000.0", "sz": "0.5", "n": 3}
    assert asks[0] == {"px": "95001.0", "sz": "1.25", "n": 2}
    assert [float(x["px"]) for x in bids] == sorted((float(x["px"]) for x in bids), reverse=True)


def test_fault_payloads() -> None:
    for venue in ("binance", "hyperliquid"):
        bad = frames.malformed_frame(venue, 1)
        try:
            json.loads(bad)
        except ValueError:
            pass
        else:
            raise AssertionError(f"{venue} malformed frame parsed: {bad}")
        big = frames.oversized_frame(venue, 2 * 1024 * 1024)
        assert len(big) == 2 * 1024 * 1024
        json.loads(big)
    assert json.loads(frames.error_frame("hyperliquid", 0))["channel"] == "error"
    assert json.loads(frames.error_frame("binance", 0))["error"]["code"] == 2
