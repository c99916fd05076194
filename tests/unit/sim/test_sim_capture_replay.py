"""A real capture as the emulator's market (caerus.sim.core.capture_file, caerus.sim.core.replay_market), without
sockets.

On a 12 s slice of real Binance USD-M BTCUSDT (tests/fixtures/data/real, MIT, hftbacktest): every bookTicker and
trade of the file comes out in file order at its receive offset with the venue's text, exchange times retimed; what
the emulated venue cannot serve (spot, COIN-M, Hyperliquid, an unlisted symbol) is refused naming the file; and the
Hyperliquid side follows the replayed mid (exactly, on the fixed-lag market: each block is the mid hl_lag_ms earlier
on Hyperliquid's grid).
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

from caerus.sim.core.capture_file import CaptureFrames, RealFrame, RealQuote, Retimed, inspect, is_capture
from caerus.sim.core.market import BinanceQuote, HlBlock, hl_tick
from caerus.sim.core.market_config import load_market
from caerus.sim.core.replay_market import ReplayMarket

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "data" / "real"
SLICE = REAL / "usdm_btcusdt_20240808_12s.gz"


def _file_frames(path: Path) -> list[tuple[int, str, dict]]:
    """(receive ns, stream, data) of every line of a capture, read independently of the module under test."""
    out = []
    for line in gzip.decompress(path.read_bytes()).decode().splitlines():
        ts, _, frame = line.partition(" ")
        obj = json.loads(frame)
        out.append((int(ts), obj["stream"], obj["data"]))
    return out


def test_inspect_names_the_market_and_the_recorder_clock() -> None:
    info = inspect([SLICE])
    assert info.symbols == ("BTCUSDT",) and info.names == ("BTC",)
    first_book = next(t for t, s, _ in _file_frames(SLICE) if s.endswith("@bookTicker"))
    assert info.first_recv_ns == first_book
    # the shared README: the recorder's receive stamps run ~1.27 s behind the venue's E
    assert info.clock_offset_ns is not None and -1_300e6 < info.clock_offset_ns < -1_240e6
    assert 150 < info.head_rate_hz < 250  # real USD-M BTCUSDT: ~192 bookTicker frames/s
    assert info.streams == {"btcusdt@bookTicker": 2284, "btcusdt@trade": 451}


def test_every_frame_in_file_order_at_its_receive_offset_with_the_venue_text() -> None:
    want = _file_frames(SLICE)
    first = next(t for t, s, _ in want if s.endswith("@bookTicker"))
    want = [w for w in want if w[0] >= first]
    got = list(CaptureFrames(inspect([SLICE])))
    assert len(got) == len(want)
    lines = [ln.partition(" ")[2] for ln in gzip.decompress(SLICE.read_bytes()).decode().splitlines()]
    lines = lines[len(lines) - len(want):]
    for ev, line, (t_recv, stream, data) in zip(got, lines, want, strict=True):
        assert ev.t_ns == t_recv - first and ev.recv_ns == t_recv
        text = ev.text.at(data["E"]) if ev.text is not None else ""
        # at the recorded E the retimed text is the recorded data, byte for byte (key order and number text kept)
        assert line == f'{{"stream":"{stream}","data":{text}}}'
        assert json.loads(text) == data
        if stream.endswith("@bookTicker"):
            assert isinstance(ev, RealQuote)
            assert (ev.update_id, ev.bid, ev.bid_qty, ev.ask, ev.ask_qty) == (
                data["u"], float(data["b"]), float(data["B"]), float(data["a"]), float(data["A"]))
        else:
            assert isinstance(ev, RealFrame) and ev.topic == "binance:btcusdt@trade"


def test_retimed_sets_e_to_the_send_time_and_keeps_the_t_gap() -> None:
    text = '{"e":"trade","E":1723161256322,"T":1723161256300,"s":"BTCUSDT","p":"61800.30"}'
    out = json.loads(Retimed(text).at(1_800_000_000_000))
    assert out == {"e": "trade", "E": 1_800_000_000_000, "T": 1_800_000_000_000 - 22, "s": "BTCUSDT",
                   "p": "61800.30"}
    assert Retimed('{"x":1}').at(5) == '{"x":1}'


@pytest.mark.parametrize(("fixture", "problem"), [
    ("spot_btcusdt_20240808_head.gz", "Binance spot frames"),
    ("cm_btcusd_perp_20240808_head.gz", "Binance COIN-M frames"),
    ("hyperliquid_btcusd_20250126.gz", "a Hyperliquid capture"),
])
def test_what_the_emulated_venue_cannot_serve_is_refused_naming_the_file(fixture: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem) as err:
        inspect([REAL / fixture])
    assert fixture in str(err.value)


def test_unlisted_symbol_and_non_captures_are_refused(tmp_path: Path) -> None:
    bad = tmp_path / "xyz.gz"
    line = ('1723161255088169167 {"stream":"xyzusdt@bookTicker","data":{"e":"bookTicker","u":1,"s":"XYZUSDT",'
            '"b":"1.0","B":"1","a":"1.1","A":"1","T":1,"E":1}}\n')
    bad.write_bytes(gzip.compress(line.encode()))
    with pytest.raises(ValueError, match="symbol XYZUSDT is not listed"):
        inspect([bad])
    frames_file = tmp_path / "frames.jsonl"
    frames_file.write_text('{"venue":"binance","t_ns":0,"frame":"{}"}\n')
    assert not is_capture(frames_file) and is_capture(SLICE)
    with pytest.raises(ValueError, match="not an hftbacktest capture"):
        inspect([frames_file])
    with pytest.raises(ValueError, match="does not exist"):
        inspect([tmp_path / "missing.gz"])


def _events(preset: str, seed: int = 1) -> list[BinanceQuote | RealFrame | HlBlock]:
    info = inspect([SLICE])
    return list(ReplayMarket(load_market(preset, seed=seed, symbols=info.names), CaptureFrames(info)).events())


def test_both_venues_are_primed_at_time_zero_then_the_capture_plays_in_time_order() -> None:
    events = _events("default")
    first = events[0]
    assert type(first) is BinanceQuote and first.t_ns == 0  # priming: a plain quote, not counted as served
    assert isinstance(events[1], HlBlock) and events[1].t_ns == 0
    real = [e for e in events if isinstance(e, RealQuote | RealFrame)]
    assert isinstance(real[0], RealQuote) and real[0].update_id == first.update_id  # then the first frame itself
    times = [e.t_ns for e in events]
    assert times == sorted(times)
    assert len(real) == 2284 + 451


def test_the_fixed_lag_follower_is_the_replayed_mid_hl_lag_ms_earlier() -> None:
    events = _events("fixed-lag")
    lag_ns = int(load_market("fixed-lag").hl_lag_ms * 1e6)
    mids: list[tuple[int, float]] = [(0, 0.0)]
    blocks = 0
    for e in events:
        if isinstance(e, RealQuote):
            mids.append((e.t_ns, (e.bid + e.ask) / 2))
        elif isinstance(e, HlBlock) and e.t_ns > lag_ns:
            mid = [m for t, m in mids if t <= e.t_ns - lag_ns][-1]
            tick = hl_tick(mid)
            assert e.bid is not None and e.ask is not None
            assert e.bid.px == math.floor(mid / tick) * tick and e.ask.px == e.bid.px + tick
            blocks += 1
    assert blocks > 100  # ~70 ms blocks over 12 s


def test_the_default_follower_follows_the_real_mid_and_one_seed_gives_one_side() -> None:
    events = _events("default")
    mids = [(e.bid + e.ask) / 2 for e in events if isinstance(e, RealQuote)]
    lo, hi = min(mids), max(mids)
    hl = [(e.bid.px + e.ask.px) / 2 for e in events if isinstance(e, HlBlock) and e.bid and e.ask]
    # the catalogue starts BTC at 95,000: a Hyperliquid side not built from the replayed mid would be far away;
    # following it (lags, partial catch-up, own moves of 6-18 bp) it stays within 0.5% of the real range
    assert all(lo * 0.995 < m < hi * 1.005 for m in hl)
    assert len(hl) > 100
    again = _events("default")
    assert [e for e in again if isinstance(e, HlBlock)] == [e for e in events if isinstance(e, HlBlock)]
    other = _events("default", seed=2)
    assert [e for e in other if isinstance(e, HlBlock)] != [e for e in events if isinstance(e, HlBlock)]


def test_market_symbols_must_be_the_captures() -> None:
    info = inspect([SLICE])
    with pytest.raises(ValueError, match="not the capture's"):
        ReplayMarket(load_market("default", symbols=("ETH",)), CaptureFrames(info))
