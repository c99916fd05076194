"""Feed hot path per message: decode + validate + publish into a real SWMR ring, both venues.

Runs the feed's real venue loops (``BinanceSink`` / ``HyperliquidSink``) over pre-built bookTicker and bbo frames
and reads back the loops' own ``feed_internal`` samples (t_publish - t_recv, time.time_ns), exactly what a live
feed records. Reference in the same run: the same validation and publish with ``json.loads``-based decoding
(dict look-ups + ``float()`` per field). Also prints the decode step alone for both decoders.

    python -m benchmarks.feed_parse [--quick] [--json PATH]

Metric names: ``<venue> path <decoder>`` = t_publish - t_recv per message through decode + validate + publish
(``hl`` = Hyperliquid bbo, ``binance`` = bookTicker); ``decode <frame> <decoder>`` = the decode call alone
(perf_counter_ns around it, so ~50-100 ns of timer overhead included).

Goals (issue 3): feed internal p50 <= 2 us for a bookTicker, <= 3 us for a bbo.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import shutil
import tempfile
import time
import uuid

import numpy as np

from benchmarks.common import at_most, emit, parse_sized, summarize, time_each


def make_frames(n: int, seed: int) -> tuple[list[bytes], list[bytes]]:
    """n bookTicker and n bbo frames with increasing ids/times and a random-walk valid book."""
    rng = random.Random(seed)
    px = 95_000.0
    t_ms = int(time.time() * 1000)
    u = 5_000_000_000
    bt: list[bytes] = []
    bbo: list[bytes] = []
    for _ in range(n):
        px = max(1000.0, px + rng.choice((-0.1, 0.0, 0.1)))
        u += rng.randint(1, 40)
        t_ms += 1
        bid, ask = round(px, 1), round(px + 0.1, 1)
        bq, aq = rng.randint(1, 5000) / 1000, rng.randint(1, 5000) / 1000
        bt.append(
            (
                f'{{"e":"bookTicker","u":{u},"s":"BTCUSDT","b":"{bid:.1f}","B":"{bq:.3f}","a":"{ask:.1f}",'
                f'"A":"{aq:.3f}","T":{t_ms - 1},"E":{t_ms}}}'
            ).encode()
        )
        hb, ha = float(round(px)), float(round(px) + 1)
        bbo.append(
            (
                f'{{"channel":"bbo","data":{{"coin":"BTC","time":{t_ms},"bbo":[{{"px":"{hb:.0f}","sz":"{bq:.5f}",'
                f'"n":{rng.randint(1, 9)}}},{{"px":"{ha:.0f}","sz":"{aq:.5f}","n":{rng.randint(1, 9)}}}]}}}}'
            ).encode()
        )
    return bt, bbo


class _JsonBinance:
    """Reference: the same checks and publish, decoding with json.loads."""

    def __init__(self, publish, check) -> None:  # type: ignore[no-untyped-def]
        self.publish = publish
        self.check = check
        self.last_u = -1
        self.last_t = 0
        self.samples: list[int] = []

    def on_message(self, raw: bytes, t_recv: int) -> None:
        m = json.loads(raw)
        if m.get("e") != "bookTicker":
            return
        u = m["u"]
        t_ex = m["E"] * 1_000_000
        bp, bq, ap, aq = float(m["b"]), float(m["B"]), float(m["a"]), float(m["A"])
        if u <= self.last_u or t_ex < self.last_t or self.check(bp, bq, ap, aq):
            return
        self.last_u, self.last_t = u, t_ex
        t_pub = time.time_ns()
        self.publish(1, 1, 0, 1, 0, 0, u, t_ex, t_recv, t_pub, bp, bq, ap, aq, 0)
        self.samples.append(t_pub - t_recv)


class _JsonHyperliquid(_JsonBinance):
    def on_message(self, raw: bytes, t_recv: int) -> None:
        m = json.loads(raw)
        if m.get("channel") != "bbo":
            return
        d = m["data"]
        bid, ask = d["bbo"]
        if bid is None or ask is None:
            return
        t_ex = d["time"] * 1_000_000
        bp, bq, ap, aq = float(bid["px"]), float(bid["sz"]), float(ask["px"]), float(ask["sz"])
        if t_ex < self.last_t or self.check(bp, bq, ap, aq):
            return
        self.last_u += 1
        self.last_t = t_ex
        t_pub = time.time_ns()
        self.publish(2, 1, 0, 1, 0, 0, self.last_u, t_ex, t_recv, t_pub, bp, bq, ap, aq, 0)
        self.samples.append(t_pub - t_recv)


def run_sink(sink, session, frames: list[bytes], reps: int) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Feed frames through a real venue loop; returns its feed_internal samples (ns)."""
    out: list[np.ndarray] = []
    on_message = sink.on_message
    time_ns = time.time_ns
    chunk = sink.sample_cap
    for _ in range(reps):
        # Each repetition replays the same ids/times: reset the ordering state so every message is accepted.
        sink.last_key = -1
        sink.last_t_ex = 0
        for i, raw in enumerate(frames):
            on_message(raw, time_ns(), session)
            if (i + 1) % chunk == 0:
                n = sink.take_samples()
                out.append(sink.fi.arr[:n].copy())
        n = sink.take_samples()
        out.append(sink.fi.arr[:n].copy())
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def run_ref(ref: _JsonBinance, frames: list[bytes], reps: int) -> np.ndarray:
    on_message = ref.on_message
    time_ns = time.time_ns
    for _ in range(reps):
        ref.last_u = -1
        ref.last_t = 0
        for raw in frames:
            on_message(raw, time_ns())
    return np.asarray(ref.samples, dtype=np.int64)


def main(argv: list[str] | None = None) -> int:
    args, n = parse_sized(argv, __doc__, "frames", "frames per venue per repetition", 20_000, 100_000)
    reps = 2 if args.quick else 5

    shm = tempfile.mkdtemp(prefix="caerus-bench-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    os.environ["CAERUS_SHM_DIR"] = shm
    try:
        return _run(args, n, reps)
    finally:
        shutil.rmtree(shm, ignore_errors=True)


def _run(args: argparse.Namespace, n: int, reps: int) -> int:
    from caerus.net.ws import WsSession
    from caerus.venuekit.book_rules import check_levels
    from caerus.venuekit.feed_outputs import FeedOutputs
    from caerus.venues.binance import data as binance
    from caerus.venues.binance.feed import BinanceSink
    from caerus.venues.hyperliquid import data as hyperliquid
    from caerus.venues.hyperliquid.feed import HyperliquidSink

    bt, bbo = make_frames(n, args.seed)
    tag = uuid.uuid4().hex[:8]
    metrics: dict[str, dict[str, float]] = {}
    sinks = {}
    for venue, cls in (("binance", BinanceSink), ("hyperliquid", HyperliquidSink)):
        out = FeedOutputs(venue, f"b{tag}.book.{venue}", f"b{tag}.events.{venue}", f"b{tag}.stats.{venue}",
                          capacity=4096, venue_code=cls.venue,
                          log_stream=open(os.devnull, "w"))  # noqa: SIM115 - closed with the process
        sink = cls(out)
        out.sink = sink
        session = WsSession("wss://bench.invalid/ws", 1, sink.on_message)
        sink.active = session
        sinks[venue] = (out, sink, session)

    gc.collect()
    gc.freeze()
    # warm-up (also checks every frame is accepted)
    for venue, frames in (("binance", bt), ("hyperliquid", bbo)):
        out, sink, session = sinks[venue]
        warm = min(2000, n)
        run_sink(sink, session, frames[:warm], 1)
        if sink.n_books != warm:
            raise SystemExit(f"{venue}: warm-up published {sink.n_books} of {warm} frames (a frame was rejected)")

    fi_bt = run_sink(*sinks["binance"][1:], bt, reps)
    fi_bbo = run_sink(*sinks["hyperliquid"][1:], bbo, reps)
    ref_bt = run_ref(_JsonBinance(sinks["binance"][0].books.publish, check_levels), bt, reps)
    ref_bbo = run_ref(_JsonHyperliquid(sinks["hyperliquid"][0].books.publish, check_levels), bbo, reps)
    dec_ms_bt = time_each(binance.DATA_DECODER.decode, bt)
    dec_js_bt = time_each(json.loads, bt)
    dec_ms_bbo = time_each(hyperliquid.DECODER.decode, bbo)
    dec_js_bbo = time_each(json.loads, bbo)

    metrics["binance path msgspec"] = summarize(fi_bt)
    metrics["binance path json ref"] = summarize(ref_bt)
    metrics["hl path msgspec"] = summarize(fi_bbo)
    metrics["hl path json ref"] = summarize(ref_bbo)
    metrics["decode bt msgspec"] = summarize(dec_ms_bt)
    metrics["decode bt json"] = summarize(dec_js_bt)
    metrics["decode bbo msgspec"] = summarize(dec_ms_bbo)
    metrics["decode bbo json"] = summarize(dec_js_bbo)
    p50 = {k: v["p50"] for k, v in metrics.items()}
    ratios = {
        "binance json.loads/msgspec (p50, full path)": p50["binance path json ref"]
        / p50["binance path msgspec"],
        "hyperliquid json.loads/msgspec (p50, full path)": p50["hl path json ref"]
        / p50["hl path msgspec"],
        "bookTicker decode json.loads/msgspec (p50)": p50["decode bt json"]
        / p50["decode bt msgspec"],
        "bbo decode json.loads/msgspec (p50)": p50["decode bbo json"] / p50["decode bbo msgspec"],
    }
    goals = [
        at_most("feed_internal.binance p50 (bookTicker)", p50["binance path msgspec"], 2000),
        at_most("feed_internal.hyperliquid p50 (bbo)", p50["hl path msgspec"], 3000),
    ]
    published = {v: s[1].n_books for v, s in sinks.items()}
    for venue, (_out, sink, _session) in sinks.items():
        expected = min(2000, n) + n * reps
        if sink.n_books != expected:
            raise SystemExit(f"{venue}: published {sink.n_books} of {expected} frames (a frame was rejected)")
    for out, _sink, _session in sinks.values():
        out.close()
    emit("feed_parse", metrics, ratios=ratios, goals=goals, quick=args.quick, json_path=args.json,
         extra={"frames_per_rep": n, "reps": reps, "published": published})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
