"""The import refuses what the live feed refuses, exactly: the same frames through the feed loop (real ring) and
through `caerus data import` give the same records (VALID and REJECTED, reason, seq, times, prices) and the same
refusal counts by reason."""

from __future__ import annotations

import gzip
import io
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest

from caerus import data
from caerus.data.imports import ImportOptions, binance_streams, hftbacktest, run_import
from caerus.ipc.swmr import SwmrReader
from caerus.net.ws import WsSession
from caerus.venuekit.book_rules import check_levels, check_levels_many
from caerus.venuekit.feed_outputs import FeedOutputs
from caerus.venues.binance.feed import BinanceSink
from caerus.venues.hyperliquid.feed import HyperliquidSink
from caerus.wire import BOOK, RejectReason, Venue

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "data" / "real"
T0 = 1_723_161_255_000_000_000


def bt(u: int, e_ms: int, b: str = "61800.2", a: str = "61800.3", bq: str = "1", aq: str = "2") -> bytes:
    return json.dumps({"e": "bookTicker", "u": u, "E": e_ms, "T": e_ms, "s": "BTCUSDT", "b": b, "B": bq, "a": a,
                       "A": aq}, separators=(",", ":")).encode()


def bbo(t_ms: int, bid: object = ("100", "1"), ask: object = ("101", "2")) -> bytes:
    def lvl(x: object) -> object:
        return None if x is None else {"px": x[0], "sz": x[1], "n": 1}  # type: ignore[index]

    return json.dumps({"channel": "bbo", "data": {"coin": "BTC", "time": t_ms, "bbo": [lvl(bid), lvl(ask)]}},
                      separators=(",", ":")).encode()


def real_bookticker_messages() -> list[bytes]:
    out = []
    for ln in gzip.decompress((FIX / "usdm_btcusdt_20240808_head.gz").read_bytes()).split(b"\n"):
        if b"@bookTicker" in ln[:60]:
            out.append(json.dumps(json.loads(ln.partition(b" ")[2])["data"], separators=(",", ":")).encode())
    return out


def live(venue: str, messages: list[bytes]) -> tuple[list[tuple], dict[str, int]]:
    """The feed loop over ``messages`` (t_recv = T0 + i): its published records and reject counters."""
    out = FeedOutputs(venue, f"imp.book.{venue}", f"imp.events.{venue}", f"imp.stats.feed-{venue}", capacity=4096,
                      log_stream=io.StringIO(), venue_code=int(Venue[venue.upper()]))
    try:
        sink = (BinanceSink if venue == "binance" else HyperliquidSink)(out, parse_error_limit=10 ** 6)
        s1 = WsSession("wss://x/ws", 1, sink.on_message)
        sink.active = s1
        books = SwmrReader.attach(f"imp.book.{venue}", BOOK, timeout=1)
        for i, m in enumerate(messages):
            s1.msg_count += 1
            if sink.on_message(m, T0 + i, s1):
                s1.data_count += 1
        recs = []
        while (r := books.read_next()) is not None:
            recs.append(r)
        books.close()
        out.housekeeping()
        snap = out.counters.snapshot()
        counts = {r.name.lower(): int(snap[f"reject.{r.name.lower()}"]) for r in RejectReason
                  if snap.get(f"reject.{r.name.lower()}")}
        return recs, counts
    finally:
        out.close()


def imported(tmp_path: Path, lines: list[bytes], **kw: object) -> tuple[list[tuple], dict[str, int]]:
    """The import of ``lines`` (receive stamps T0 + i), as stored and read back; refusals by reason."""
    src = tmp_path / "rec.gz"
    src.write_bytes(gzip.compress(b"\n".join(b"%d %s" % (T0 + i, m) for i, m in enumerate(lines)) + b"\n"))
    outcome = run_import(tmp_path / "s", [src], ImportOptions(jobs=1, **kw), out=None)  # type: ignore[arg-type]
    assert outcome.ok, outcome.errors
    books = data.books(tmp_path / "s").sort_values("t_recv")
    rows = list(zip(books["flags"], books["reason"], books["seq"], books["t_exchange"], books["t_recv"],
                    books["bid_px"], books["bid_qty"], books["ask_px"], books["ask_qty"], strict=True))
    refused = {k: v for k, v in outcome.entries[0]["refused"].items() if v}
    return rows, refused


def comparable(recs: list[tuple]) -> list[tuple]:
    """(flags, reason, seq, t_exchange, t_recv, prices) of the feed's records; the feed stamps a MALFORMED record's
    t_recv with its own clock (no frame time is known to it there), so that one is left out of the comparison."""
    out = []
    for r in recs:
        _v, flags, _sym, _conn, reason, _, seq, t_ex, t_recv, _pub, bp, bq, ap, aq, _w = r
        out.append((flags, reason, seq, t_ex, None if reason == RejectReason.MALFORMED else t_recv, bp, bq, ap, aq))
    return out


def same(a: list[tuple], b: list[tuple]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        for u, v in zip(x, y, strict=True):
            if u is None:
                continue
            if isinstance(u, float) and math.isnan(u):
                if not (isinstance(v, float) and math.isnan(v)):
                    return False
            elif u != v:
                return False
    return True


@pytest.mark.parametrize("mode", ["lines", "runs", "one"])
def test_binance_refusals_match_the_live_feed(shm_dir: Path, tmp_path: Path, mode: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Every real bookTicker of the fixture, then crafted refusals, through the feed loop and through the import:
    read every way the import reads combined frames (lines per decode_lines call, runs of typed decodes, and one
    frame at a time)."""
    real = real_bookticker_messages()
    assert len(real) > 250
    crossed = json.loads(real[30])
    crossed["b"], crossed["a"] = crossed["a"], crossed["b"]  # a real update with its sides swapped: crossed
    real[30] = json.dumps(crossed, separators=(",", ":")).encode()
    e0 = json.loads(real[-1])["E"]
    u0 = json.loads(real[-1])["u"]
    crafted = [
        bt(u0 + 1, e0), bt(u0 + 1, e0),  # duplicate
        bt(u0, e0 + 1),  # id going backwards
        bt(u0 + 2, e0 - 1),  # venue time backwards
        bt(u0 + 3, e0 + 1, b="61800.3"),  # locked
        bt(u0 + 4, e0 + 1, b="0"), bt(u0 + 5, e0 + 1, aq="0"), bt(u0 + 6, e0 + 1, b="NaN"),
        b'{"e":"bookTicker","u":1,"E":1,"s":"BTCUSDT","b":"x","B":"1","a":"2","A":"1"}',  # unreadable
        bt(u0 + 8, e0 + 2),
        # the ordering state advances on a book refused for its levels: older ones after it are refused too
        bt(u0 + 20, e0 + 10, b="61800.4"),  # crossed, the newest id and time seen
        bt(u0 + 19, e0 + 11),  # id older than the refused one
        bt(u0 + 21, e0 + 9),  # newer id, time older than the refused one
        bt(u0 + 22, e0 + 11),
    ]
    messages = real + crafted
    recs, live_counts = live("binance", messages)
    wrapped = [b'{"stream":"btcusdt@bookTicker","data":' + m + b"}" for m in messages]
    monkeypatch.setattr(hftbacktest.Reader, "mode", mode)
    in_runs: list[int] = []
    sort = binance_streams._sort
    monkeypatch.setattr(binance_streams, "_sort", lambda got, *a: (in_runs.append(len(got)), sort(got, *a)))
    rows, import_counts = imported(tmp_path, wrapped)
    assert live_counts == import_counts == {"crossed": 2, "duplicate": 1, "seq_not_increasing": 2,
                                            "time_backwards": 2, "locked": 1, "nonpositive_price": 1,
                                            "nonpositive_size": 1, "not_finite": 1, "malformed": 1}
    assert same(comparable(recs), rows)
    assert len(rows) == len(messages) - 5  # the ordering refusals publish nothing
    # in runs: every frame but the first (it names the stream) and the unreadable one; else none
    assert sum(in_runs) == (len(messages) - 2 if mode != "one" else 0)


def test_hyperliquid_refusals_match_the_live_feed(shm_dir: Path, tmp_path: Path) -> None:
    messages = [bbo(1000), bbo(1000), bbo(999), bbo(1001, bid=None), bbo(1002, bid=("101.5", "1")),
                bbo(1003, ask=("100", "0")), b'{"channel":"bbo","data":{"coin":"BTC","time":1004,"bbo":"x"}}',
                bbo(1004), bbo(1004)]
    recs, live_counts = live("hyperliquid", messages)
    rows, import_counts = imported(tmp_path, messages)
    assert live_counts == import_counts == {"time_backwards": 1, "null_side": 1, "crossed": 1,
                                            "nonpositive_size": 1, "malformed": 1}
    assert same(comparable(recs), rows)


def test_check_levels_many_agrees_with_the_feeds_check_levels() -> None:
    edge = [float("nan"), float("inf"), -float("inf"), -1.0, 0.0, 1.0, 2.0]
    combos = np.array(list(itertools.product(edge, repeat=4)))
    got = check_levels_many(combos[:, 0], combos[:, 1], combos[:, 2], combos[:, 3])
    want = [check_levels(*c) for c in combos.tolist()]
    assert got.tolist() == want
    assert len(set(want)) == 6  # every rule (and OK) occurs in the grid


@pytest.mark.parametrize("seed", [1, 2])
def test_update_id_ordering_matches_a_row_by_row_reference(seed: int) -> None:
    from caerus.data.imports.checks import _State, order_update_id

    rng = np.random.default_rng(seed)
    seq = np.cumsum(rng.integers(-3, 5, 20_000)).astype(np.int64) + 100
    t = np.cumsum(rng.integers(-1, 3, 20_000)).astype(np.int64) + 10
    st = _State()
    got = order_update_id(seq, t, st)
    key, last, want = -1, 0, []
    for u, ti in zip(seq.tolist(), t.tolist(), strict=True):  # the feed's loop, one update at a time
        if u <= key:
            want.append(int(RejectReason.DUPLICATE if u == key else RejectReason.SEQ_NOT_INCREASING))
        elif ti < last:
            want.append(int(RejectReason.TIME_BACKWARDS))
        else:
            key, last = u, ti
            want.append(0)
    assert got.tolist() == want and (st.last_key, st.last_t) == (key, last)
    assert 0 < sum(1 for w in want if w) < len(want)
