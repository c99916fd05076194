"""The import's fast paths read exactly what the general ones read: receive stamps parsed eight digits at a time equal
``int()``; combined frames decoded in runs (binance_streams.py) give the chunks one-frame-at-a-time decoding gives,
on real captures and on hostile frames; format detection reads a file's head only."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import numpy as np
import pytest

from caerus.data.imports import ImportRefused, binance_streams, compressed, hftbacktest
from caerus.data.imports.formats import ReadOptions, detect
from caerus.data.imports.lines import stamped
from caerus.data.imports.records import Chunk
from caerus.venuekit.book_rules import MALFORMED

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "data" / "real"
REAL = [FIX / "usdm_btcusdt_20240808_head.gz", FIX / "spot_btcusdt_20240808_head.gz",
        FIX / "cm_btcusd_perp_20240808_head.gz", FIX / "usdm_btcusdt_20240808_12s.gz"]
T0 = 1_723_161_255_000_000_000


def test_stamps_read_in_words_are_int_of_the_digits() -> None:
    rng = random.Random(7)
    values = [rng.randrange(10 ** 18, 1 << 63) for _ in range(2000)] + [10 ** 18, (1 << 63) - 1, T0, 5]
    text = b"".join(b"%019d {}\n" % v for v in values)
    got = stamped(text)
    assert got is not None and got[3].tolist() == values
    assert stamped(b"%019d {}\n" % (1 << 63)) is None  # past int64: the per-line path decides


@pytest.mark.parametrize("pos", range(20))
def test_every_byte_that_is_not_a_digit_or_the_space_sends_the_chunk_to_the_line_path(pos: int) -> None:
    line = b"1723161255030314667 {}\n"
    for c in range(256):
        bad = bytearray(line)
        bad[pos] = c
        want = ((48 <= c <= 57) if pos < 19 else c == 32) and int(bytes(bad[:19]).replace(b" ", b"0")
                                                                   if bad[:19].isdigit() else b"0") < 1 << 63
        got = stamped(b"1723161255030314660 {}\n" + bytes(bad))
        assert (got is not None) == want, (pos, c)
        if got is not None:
            assert got[3].tolist() == [1723161255030314660, int(bytes(bad[:19]))]


def _bt(u: int, e_ms: int, sym: str = "BTCUSDT", b: str = "61800.2", **extra: object) -> dict:
    return {"e": "bookTicker", "u": u, "E": e_ms, "T": e_ms, "s": sym, "b": b, "B": "1.5", "a": "61800.3",
            "A": "2", **extra}


def _combined(stream: str, data: object) -> bytes:
    return json.dumps({"stream": stream, "data": data}, separators=(",", ":")).encode()


def hostile_lines() -> list[bytes]:
    """Long clean stretches (runs) broken by every kind of frame the run decoder must hand back."""
    e0 = 1_723_161_256_000
    trade = {"e": "trade", "E": e0, "s": "BTCUSDT", "t": 1, "p": "61800.2", "q": "0.01"}
    depth = {"e": "depthUpdate", "E": e0, "s": "BTCUSDT", "U": 1, "u": 2, "b": [["1", "2"]], "a": []}
    odd = [
        b'{"lastUpdateId":5123107852948,"E":1723161256501,"T":1723161256493,"bids":[],"asks":[]}',
        _combined("ethusdt@bookTicker", _bt(7, e0, "ETHUSDT")),  # a stream first seen mid-file
        _combined("btcusdt@bookTicker", trade),  # a trade on the bookTicker stream: the stream decides
        b'{"stream":"btcusdt@trade","data":' + json.dumps(trade).encode() + b',"stream":"btcusdt@bookTicker"}',
        b'{"stream":"btcusdt@bookTicker","data":' + json.dumps(trade).encode() + b',"data":'
        + json.dumps(_bt(10 ** 9, e0)).encode() + b"}",  # a repeated key: the last one counts
        b'{"data":' + json.dumps(_bt(10 ** 9 + 1, e0)).encode() + b',"stream":"btcusdt@bookTicker"}',
        b'  {"stream" : "btcusdt@trade" , "data" : ' + json.dumps(trade).encode() + b" }  ",
        _combined("btcusdt@bookTicker", _bt(10 ** 9 + 2, e0, b="x")),  # unreadable book
        _combined("btcusdt@bookTicker", {k: v for k, v in _bt(10 ** 9 + 3, e0).items() if k != "E"}),
        _combined("btcusdt@bookTicker", _bt(-1, e0)),  # out of the live type's bounds
        b"not json at all",
        json.dumps(_bt(10 ** 9 + 4, e0)).encode(),  # a raw-stream (unwrapped) message
        b'{"result":null,"id":1}',
        _combined("btcusdt@aggTrade", {"e": "aggTrade", "E": e0}),  # a stream the import does not read
        _combined("btcusdt@depth@0ms", {**depth, "E": "soon"}),  # unreadable depth
        _combined("btcusdt@trade", {**trade, "p": None}),  # unreadable trade
        _combined("btcusdt@depth@0ms", [1, 2]),
        b'{"stream":"btcusdt@trade","data":' + json.dumps(trade).encode() + b"} {}",  # two values on a line
        b'{"stream":"btcusdt@trade","data":' + json.dumps(trade).encode(),  # cut short
    ]
    rng = random.Random(3)
    out: list[bytes] = []
    u = 10 ** 6
    for k, frame in enumerate(odd):
        for _ in range(rng.randrange(5, 60)):
            u += 1
            which = rng.random()
            if which < 0.6:
                out.append(_combined("btcusdt@bookTicker", _bt(u, e0 + u % 1000)))
            elif which < 0.8:
                out.append(_combined("btcusdt@trade", {**trade, "t": u}))
            else:
                out.append(_combined("btcusdt@depth@0ms", {**depth, "u": u}))
        out.append(frame)
        if k % 3 == 0:
            out.append(frame)  # twice in a row: the run decoder backs off, then resumes
    return out


def _write(path: Path, frames: list[bytes]) -> Path:
    path.write_bytes(gzip.compress(b"".join(b"%d %s\n" % (T0 + i * 1000, f) for i, f in enumerate(frames))))
    return path


def _read(path: Path, mode: str, chunk_bytes: int) -> tuple[list[Chunk], hftbacktest.Reader]:
    reader = hftbacktest.Reader(path, ReadOptions())
    reader.mode = mode
    read = compressed.writable_text_chunks if mode == "lines" else compressed.text_chunks
    chunks = [reader._binance_chunk(text) for text in read(path, chunk_bytes)]
    return chunks, reader


def _same(a: list[Chunk], b: list[Chunk]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert x.counts == y.counts
        for name in ("sym", "seq", "t_ex", "t_recv", "bp", "bq", "ap", "aq", "pre", "depth", "clock"):
            u, v = getattr(x, name), getattr(y, name)
            assert u.dtype == v.dtype and np.array_equal(u, v, equal_nan=u.dtype.kind == "f"), name


@pytest.mark.parametrize("mode", ["lines", "runs"])
@pytest.mark.parametrize("chunk_bytes", [1 << 24, 4096])
@pytest.mark.parametrize("path", REAL + ["hostile"], ids=lambda p: getattr(p, "name", p))
def test_runs_read_what_one_frame_at_a_time_reads(path: Path | str, chunk_bytes: int, mode: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    src = _write(tmp_path / "hostile.gz", hostile_lines()) if path == "hostile" else Path(path)
    one, r1 = _read(src, "one", chunk_bytes=chunk_bytes)
    in_runs = []
    sort = binance_streams._sort
    monkeypatch.setattr(binance_streams, "_sort", lambda got, *a: (in_runs.append(len(got)), sort(got, *a)))
    in_lines = []
    frames_of = binance_streams._frames_of
    monkeypatch.setattr(binance_streams, "_frames_of",
                        lambda got, n, t: (r := frames_of(got, n, t), in_lines.append(0 if r is None else n))[0])
    fast, r2 = _read(src, mode, chunk_bytes=chunk_bytes)
    _same(fast, one)
    assert r1.symbols == r2.symbols and r1.notes() == r2.notes() and r1.markets() == r2.markets()
    frames = sum(v for c in one for k, v in c.counts.items() if k.startswith(("read.", "dropped.")))
    assert sum(in_runs) > 0.8 * frames  # most frames were read in runs, not one by one
    if mode == "lines":  # and many of those by decode_lines (the hostile file's odd frames break most runs)
        assert sum(in_lines) > (0.05 if path == "hostile" else 0.7) * frames
    else:
        assert not in_lines
    if path == "hostile":
        refused = {k: v for c in one for k, v in c.counts.items() if k.startswith(("refused.", "dropped."))}
        assert refused == {"refused.unreadable_depth": 2, "refused.unreadable_trade": 2, "dropped.not_json": 4,
                           "dropped.control": 2}
        # unreadable books (a trade on the bookTicker stream, the repeated stream key twice, "x", no E, u < 0 twice)
        assert sum(int((c.pre == MALFORMED).sum()) for c in one) == 7


def _clean(k: int, u0: int = 10 ** 6) -> list[bytes]:
    return [_combined("btcusdt@bookTicker", _bt(u0 + i, 1_723_161_256_000 + i)) for i in range(k)]


TWO = _combined("btcusdt@bookTicker", _bt(5, 1)) + b" " + _combined("btcusdt@bookTicker", _bt(6, 2))
#: lines that decode_lines takes without complaint yet are not one frame a line: the count of values still fits
#: (a line with two frames beside lines with none), or a frame is a number ("0 0" stamps are numbers too)
MISALIGNED = {
    "two frames and an empty one": [TWO, b"     "],
    "zeros between two frames, then three empty": [TWO.replace(b"} {", b"} 0 0 {"), b"   ", b"   ", b"   "],
    "a number": [b"5"],
    "a zero": [b"0"],
    "a string of digits": [b'"7"'],
    "zeros then a frame": [b"0 0 " + _combined("btcusdt@bookTicker", _bt(7, 3))],
    "an empty frame": [b"     "],
}


@pytest.mark.parametrize("last", [False, True], ids=["amid frames", "last"])
@pytest.mark.parametrize("odd", MISALIGNED, ids=str)
def test_lines_that_decode_but_are_not_one_frame_a_line_are_read_one_by_one(odd: str, last: bool, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    frames = _clean(100) + MISALIGNED[odd] + ([] if last else _clean(300, 10 ** 7))
    src = _write(tmp_path / "odd.gz", frames)
    one, _ = _read(src, "one", 1 << 24)
    refused = []
    frames_of = binance_streams._frames_of
    monkeypatch.setattr(binance_streams, "_frames_of",
                        lambda got, n, t: (r := frames_of(got, n, t), r is None and refused.append(n))[0])
    fast, _ = _read(src, "lines", 1 << 24)
    _same(fast, one)
    assert refused  # decode_lines read the run; the check of its values sent it the slow way
    dropped = sum(v for c in one for k, v in c.counts.items() if k.startswith("dropped."))
    books = sum(int(c.counts["read.bookTicker"]) for c in one)
    assert dropped >= 1 and books == (100 if last else 400)


def _corrupt_far_from_the_head(path: Path) -> Path:
    rng = random.Random(5)
    text = b"".join(b"%d %s\n" % (T0 + i, _combined("btcusdt@trade", {"x": rng.getrandbits(256)}))
                    for i in range(60_000))
    data = bytearray(gzip.compress(text))
    assert len(data) > 2 << 20
    data[2 << 20:(2 << 20) + 64] = b"\xff" * 64
    path.write_bytes(bytes(data))
    return path


def test_detection_reads_the_head_only_and_the_read_refuses_the_corruption(tmp_path: Path) -> None:
    src = _corrupt_far_from_the_head(tmp_path / "rec.gz")
    assert detect(src) == "hftbacktest"  # 64 KiB of text: the corrupt block, 2 MiB into the file, is never reached
    with pytest.raises(ImportRefused, match="cannot decompress"):
        for _ in compressed.text_chunks(src):
            pass
