"""Which ring layout a many-instrument reader should use, measured: one ring per venue or one per instrument.

The strategy must see every instrument's newest book. Two layouts, both real SWMR rings in shared memory:

* ``shared``: one ring per venue carrying every instrument (``BOOK.symbol`` tells them apart), read in every-record
  mode -- a pass costs one ``read_next`` when nothing is new, and each new record is read once;
* ``per-instrument``: one ring per venue and instrument, each read in latest-value mode -- a pass polls all N rings.

Printed per N (1, 4, 16, 64): the cost of one idle pass (nothing new: what the loop pays between books, and what
delays noticing the next one), and the cost per record consumed when the writer publishes bursts of ``--burst``
records spread over the instruments. Ratios are against N = 1 of the same layout and between layouts, in this run.

    python -m benchmarks.ring_layout [--quick] [--json PATH]
"""

from __future__ import annotations

import os
import tempfile
import time

from benchmarks.common import benchmark_parser, emit, summarize

COUNTS = (1, 4, 16, 64)


def _book(sym: int, seq: int) -> tuple:
    return (1, 1, sym, 1, 0, 0, seq, seq, seq, seq, 100.0, 1.0, 100.1, 1.0, 0)


def _measure(n: int, layout: str, passes: int, bursts: int, burst: int) -> tuple[list[float], list[float]]:
    """(idle pass costs ns, per-record costs ns) for ``n`` instruments in ``layout``."""
    from caerus.ipc.swmr import SwmrReader, SwmrWriter
    from caerus.wire import BOOK

    tag = f"rl{os.getpid()}{layout[0]}{n}"
    names = [f"{tag}.all"] if layout == "shared" else [f"{tag}.{k}" for k in range(n)]
    writers = [SwmrWriter.create(name, BOOK, 4096) for name in names]
    readers = [SwmrReader.attach(name, BOOK, timeout=1) for name in names]
    try:
        reads = [r.read_next for r in readers] if layout == "shared" else [r.read_latest for r in readers]
        idle: list[float] = []
        tns = time.perf_counter_ns
        for _ in range(passes):
            t0 = tns()
            for read in reads:
                read()
            idle.append(float(tns() - t0))
        per_record: list[float] = []
        seq = 0
        for _ in range(bursts):
            for _ in range(burst):
                seq += 1
                sym = seq % n
                writers[0 if layout == "shared" else sym].publish(*_book(sym, seq))
            got = 0
            t0 = tns()
            for read in reads:
                while read() is not None:
                    got += 1
                    if layout != "shared":
                        break  # latest-value: one read per ring per pass
            if got:
                per_record.append((tns() - t0) / got)
        return idle, per_record
    finally:
        for r in readers:
            r.close()
        for w in writers:
            w.close(unlink=True)


def main(argv: list[str] | None = None) -> int:
    p = benchmark_parser(__doc__)
    p.add_argument("--burst", type=int, default=64, help="records per burst, spread over the instruments")
    args = p.parse_args(argv)
    passes, bursts = (20_000, 500) if args.quick else (100_000, 2_000)
    os.environ.setdefault("CAERUS_SHM_DIR", tempfile.mkdtemp(prefix="caerus-rl-", dir="/dev/shm"))
    metrics: dict[str, dict[str, float]] = {}
    for n in COUNTS:
        for layout in ("shared", "per-instrument"):
            idle, rec = _measure(n, layout, passes, bursts, args.burst)
            metrics[f"idle pass {layout} N={n}"] = summarize(idle)
            metrics[f"per record {layout} N={n}"] = summarize(rec)
    ratios = {}
    for n in COUNTS[1:]:
        for layout in ("shared", "per-instrument"):
            ratios[f"idle pass {layout} N={n}/N=1 p50"] = (metrics[f"idle pass {layout} N={n}"]["p50"]
                                                           / metrics[f"idle pass {layout} N=1"]["p50"])
        ratios[f"idle pass per-instrument/shared N={n} p50"] = (metrics[f"idle pass per-instrument N={n}"]["p50"]
                                                                / metrics[f"idle pass shared N={n}"]["p50"])
    emit("ring_layout", metrics, ratios=ratios, quick=args.quick, json_path=args.json,
         extra={"burst": args.burst, "passes": passes, "bursts": bursts})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
