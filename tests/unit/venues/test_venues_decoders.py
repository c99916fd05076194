"""Decoders over documented Binance / Hyperliquid payloads and their edge cases; frame classification."""

from __future__ import annotations

import math

import msgspec
import pytest

from caerus.venuekit.frames import FrameKind
from caerus.venues.binance import data as binance
from caerus.venues.hyperliquid import data as hyperliquid

# From the Binance USD-M docs (bookTicker), plus the st/ps fields the stream may carry.
BOOK_TICKER = (b'{"e":"bookTicker","u":400900217,"E":1568014460893,"T":1568014460891,"s":"BNBUSDT",'
               b'"b":"25.35190000","B":"31.21000000","a":"25.36520000","A":"40.66000000"}')
BOOK_TICKER_EXTRA = (b'{"e":"bookTicker","u":7,"s":"BTCUSDT","b":"95000.10","B":"1.5","a":"95000.20","A":"2",'
                     b'"T":1,"E":2,"st":1,"ps":"BOTH"}')
DEPTH5 = (b'{"e":"depthUpdate","E":1571889248277,"T":1571889248276,"s":"BTCUSDT","U":390497796,"u":390497878,'
          b'"pu":390497794,"b":[["7403.89","0.002"],["7403.90","3.906"]],"a":[["7405.96","3.340"]]}')


def test_binance_book_ticker_decodes_strings_to_floats() -> None:
    m = binance.DATA_DECODER.decode(BOOK_TICKER)
    assert type(m) is binance.BookTicker
    assert (m.u, m.E) == (400900217, 1568014460893)
    assert (m.b, m.B, m.a, m.A) == (25.3519, 31.21, 25.3652, 40.66)


def test_binance_book_ticker_ignores_unknown_fields() -> None:
    m = binance.DATA_DECODER.decode(BOOK_TICKER_EXTRA)
    assert (m.u, m.b, m.a) == (7, 95000.1, 95000.2)


def test_binance_depth5_top_levels() -> None:
    m = binance.DATA_DECODER.decode(DEPTH5)
    assert type(m) is binance.Depth
    assert m.u == 390497878 and m.b[0] == (7403.89, 0.002) and m.a[0] == (7405.96, 3.34)


def test_binance_nan_and_inf_strings_become_non_finite_floats() -> None:
    # They decode (msgspec converts them); the book validator must reject them as NOT_FINITE.
    m = binance.DATA_DECODER.decode(BOOK_TICKER.replace(b'"25.35190000"', b'"NaN"').replace(b'"40.66000000"',
                                                                                          b'"inf"'))
    assert math.isnan(m.b) and math.isinf(m.A)


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        (b'{"result":null,"id":1}', FrameKind.ACK),
        (b'{"code":2,"msg":"Invalid request: unknown stream","id":1}', FrameKind.SUB_ERROR),
        (b'{"error":{"code":2,"msg":"Invalid request: property name must be a string"},"id":1}',
         FrameKind.SUB_ERROR),
        (b'{"error":{"code":3,"msg":"Invalid JSON"},"id":null}', FrameKind.SUB_ERROR),
        (b'{"error":{"code":1,"msg":"other request failed"},"id":7}', FrameKind.VENUE_ERROR),
        (b'{"e":"bookTicker","u":1,"E":2,"b":"abc","B":"1","a":"2","A":"1"}', FrameKind.MALFORMED_DATA),
        (b'{"e":"bookTicker","u":1,"E":2,"b":"1"}', FrameKind.MALFORMED_DATA),
        (b'{"e":"bookTicker","u":1,"E":2,"b":"1","B":"1","a":"2"', FrameKind.MALFORMED),
        (b"\xff\xfe garbage", FrameKind.MALFORMED),
        (b'{"e":"aggTrade","p":"1"}', FrameKind.UNKNOWN),
        (b"[1,2,3]", FrameKind.UNKNOWN),
        (b'{"result":["btcusdt@bookTicker"],"id":2}', FrameKind.UNKNOWN),
    ],
)
def test_binance_non_data_frames_are_classified_not_parsed(raw: bytes, kind: FrameKind) -> None:
    with pytest.raises(msgspec.DecodeError):
        binance.DATA_DECODER.decode(raw)
    assert binance.classify(raw)[0] is kind


def test_binance_urls_and_subscribe_frame() -> None:
    assert binance.url("wss://fstream.binance.com") == "wss://fstream.binance.com/public/ws"
    assert binance.url("wss://h:1/", "market") == "wss://h:1/market/ws"
    assert binance.stream("BTCUSDT", "depth5") == "btcusdt@depth5@100ms"
    assert msgspec.json.decode(binance.subscribe_frame([binance.stream()])) == {
        "method": "SUBSCRIBE", "params": ["btcusdt@bookTicker"], "id": 1}
    with pytest.raises(ValueError, match="route"):
        binance.url("wss://h", "private")


# Hyperliquid frames as documented (strings for px/sz).
BBO = (b'{"channel":"bbo","data":{"coin":"BTC","time":1730000000123,"bbo":[{"px":"95000.0","sz":"1.2345","n":3},'
       b'{"px":"95001.0","sz":"0.5","n":1}]}}')


def test_hyperliquid_bbo() -> None:
    m = hyperliquid.DECODER.decode(BBO)
    assert type(m) is hyperliquid.Bbo
    bid, ask = m.data.bbo
    assert m.data.time == 1730000000123 and (bid.px, bid.sz, bid.n) == (95000.0, 1.2345, 3) and ask.px == 95001.0


def test_hyperliquid_bbo_null_side() -> None:
    raw = b'{"channel":"bbo","data":{"coin":"BTC","time":1,"bbo":[null,{"px":"1","sz":"2","n":1}]}}'
    m = hyperliquid.DECODER.decode(raw)
    assert m.data.bbo[0] is None and m.data.bbo[1].px == 1.0


def test_hyperliquid_l2book_fast() -> None:
    raw = (b'{"channel":"l2Book","data":{"coin":"BTC","time":5,"levels":[[{"px":"10","sz":"1","n":1},'
           b'{"px":"9","sz":"1","n":1}],[{"px":"11","sz":"2","n":2}]]}}')
    m = hyperliquid.DECODER.decode(raw)
    assert type(m) is hyperliquid.L2Book and m.data.levels[0][0].px == 10.0 and m.data.levels[1][0].sz == 2.0
    assert msgspec.json.decode(hyperliquid.subscribe_frame("BTC", "l2Book"))["subscription"]["fast"] is True


def test_hyperliquid_control_frames_decode_in_the_same_pass() -> None:
    pong = hyperliquid.DECODER.decode(b'{"channel":"pong"}')
    ack = hyperliquid.DECODER.decode(b'{"channel":"subscriptionResponse","data":{"method":"subscribe",'
                                     b'"subscription":{"type":"bbo","coin":"BTC"}}}')
    err = hyperliquid.DECODER.decode(b'{"channel":"error","data":"Invalid subscription {\\"type\\":\\"x\\"}"}')
    assert hyperliquid.classify_control(pong, True)[0] is FrameKind.PONG
    assert hyperliquid.classify_control(ack, False)[0] is FrameKind.ACK
    assert hyperliquid.classify_control(err, True)[0] is FrameKind.SUB_ERROR  # names the subscription
    other = hyperliquid.DECODER.decode(b'{"channel":"error","data":"Too many messages"}')
    assert hyperliquid.classify_control(other, True)[0] is FrameKind.VENUE_ERROR
    assert hyperliquid.classify_control(other, False)[0] is FrameKind.SUB_ERROR  # before any ack


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        (b"Websocket connection established.", FrameKind.GREETING),
        (b'{"channel":"bbo","data":{"coin":"BTC","time":1,"bbo":[{"px":"x","sz":"1"},null]}}',
         FrameKind.MALFORMED_DATA),
        (b'{"channel":"bbo","data":{"coin":"BTC"}}', FrameKind.MALFORMED_DATA),
        (b'{"channel":"bbo","data":{"coin":"BTC","time":1,"bbo":[', FrameKind.MALFORMED),
        (b'{"channel":"trades","data":[]}', FrameKind.UNKNOWN),
        (b"42", FrameKind.UNKNOWN),
    ],
)
def test_hyperliquid_frames_the_decoder_refuses(raw: bytes, kind: FrameKind) -> None:
    with pytest.raises(msgspec.DecodeError):
        hyperliquid.DECODER.decode(raw)
    assert hyperliquid.classify(raw)[0] is kind
