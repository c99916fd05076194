"""When one feed process cannot keep up: split a venue's instruments across threads or across processes?

The feed's work per message -- msgspec decode, validation, the ring publish -- is Python holding the GIL. This
measures how many Binance bookTicker messages per second the real loop (``BinanceSink.on_message`` into a real
SWMR ring in shared memory) gets through when 64 instruments' messages are handled

* by one loop (the reference),
* by ``--workers`` threads of one process, each a sink of its own share of the instruments and its own ring,
* by ``--workers`` processes, each the same.

Printed: the throughput of each, and its ratio to one loop in the same run. The GIL decides the threads' ratio;
free cores decide the processes'. (TLS and WebSocket framing, also Python, would add to the per-message work but
not change which way it splits.)

    python -m benchmarks.feed_split [--quick] [--json PATH] [--workers N]
"""

from __future__ import annotations

import multiprocessing as mp
import os
import shutil
import tempfile
import threading
import time
import uuid

from benchmarks.common import benchmark_parser, emit

INSTRUMENTS = 64


def _frames(symbols: list[str], per_symbol: int) -> list[bytes]:
    from caerus.venues.binance import data as binance

    out = []
    for k in range(per_symbol):
        for i, s in enumerate(symbols):
            px = 100.0 + i + (k % 50) * 0.1
            out.append(binance.book_frame(1000 + k, 1_700_000_000_000 + k, s, px, 1.5, px + 0.1, 2.5).encode())
    return out


def _worker(tag: str, symbols: list[str], per_symbol: int, start: threading.Barrier | None) -> float:
    """Handle every frame of ``symbols`` through a real sink and ring; returns the seconds it took."""
    from caerus.net.ws import WsSession
    from caerus.venuekit.feed_outputs import FeedOutputs
    from caerus.venues.binance.feed import BinanceSink

    out = FeedOutputs("binance", f"{tag}.book", f"{tag}.events", f"{tag}.stats", capacity=4096, venue_code=1,
                      log_stream=open(os.devnull, "w"))  # noqa: SIM115 - closed with out
    try:
        sink = BinanceSink(out, symbols=symbols)
        out.sink = sink
        session = WsSession("wss://bench.invalid/ws", 1, sink.on_message)
        sink.active = session
        frames = _frames(symbols, per_symbol)
        on_message = sink.on_message
        tns = time.time_ns
        if start is not None:
            start.wait(60)
        t0 = time.perf_counter()
        for i, raw in enumerate(frames):
            on_message(raw, tns(), session)
            if not i & 4095:
                sink.take_samples()
        dt = time.perf_counter() - t0
        if sink.n_books != len(frames):
            raise SystemExit(f"feed_split: {sink.n_books} of {len(frames)} frames published (one was rejected)")
        return dt
    finally:
        out.close()


def _proc_main(tag: str, symbols: list[str], per_symbol: int, start: object, q: mp.Queue) -> None:
    start.wait(60)  # type: ignore[attr-defined]  # every worker ready: they start together
    q.put(_worker(tag, symbols, per_symbol, None))


def main(argv: list[str] | None = None) -> int:
    p = benchmark_parser(__doc__)
    p.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1), help="threads / processes (2)")
    args = p.parse_args(argv)
    per_symbol = 300 if args.quick else 1500
    rounds = 3 if args.quick else 5
    shm = tempfile.mkdtemp(prefix="caerus-split-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    os.environ["CAERUS_SHM_DIR"] = shm
    symbols = [f"S{i:02d}USDT" for i in range(INSTRUMENTS)]
    shares = [symbols[k::args.workers] for k in range(args.workers)]
    total = INSTRUMENTS * per_symbol
    rates: dict[str, list[float]] = {"one loop": [], "threads": [], "processes": []}
    ctx = mp.get_context("spawn")
    try:
        for r in range(rounds):  # interleaved: machine noise falls on every variant
            tag = uuid.uuid4().hex[:6]
            rates["one loop"].append(total / _worker(f"o{tag}", symbols, per_symbol, None))
            barrier = threading.Barrier(args.workers)
            threads = [threading.Thread(target=_worker, args=(f"t{tag}{k}", shares[k], per_symbol, barrier))
                       for k in range(args.workers)]
            t0 = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join(300)
            rates["threads"].append(total / (time.perf_counter() - t0))
            pbarrier = ctx.Barrier(args.workers + 1)
            q: mp.Queue = ctx.Queue()
            procs = [ctx.Process(target=_proc_main, args=(f"p{tag}{k}", shares[k], per_symbol, pbarrier, q))
                     for k in range(args.workers)]
            for pr in procs:
                pr.start()
            pbarrier.wait(120)
            spans = [q.get(timeout=300) for _ in procs]
            for pr in procs:
                pr.join(30)
            rates["processes"].append(total / max(spans))  # the slowest worker ends the work
            print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:,.0f}/s" for k, v in rates.items()))
    finally:
        shutil.rmtree(shm, ignore_errors=True)
    import statistics

    med = {k: statistics.median(v) for k, v in rates.items()}
    ratios = {f"{k} / one loop (median throughput)": med[k] / med["one loop"] for k in ("threads", "processes")}
    for k, v in med.items():
        print(f"{k}: {v:,.0f} messages/s (median of {rounds})")
    emit("feed_split", {}, ratios=ratios, quick=args.quick, json_path=args.json,
         extra={"workers": args.workers, "instruments": INSTRUMENTS, "messages": total, "rates": rates,
                "cpus": os.cpu_count()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
