"""The cost curve of many instruments: whole-fleet sessions at N = 1, 4, 16, 64 at a fixed rate per instrument.

Each N is a real local session (`caerus session`, one code path with `invoke bench`): the venue emulator on
loopback emulating N correlated perpetuals (Binance bookTicker at ``--rate`` Hz each, Hyperliquid blocks carrying
every coin), one feed process per venue carrying all N on one pooled connection, the strategy in ``mode =
"bench"`` (an IOC on every Binance book it reads, so every Binance book gives a tick-to-decision sample) and the
execution process (paper). Capture is off: its cost is not the subject. Every process runs the ``sleep`` wait
policy so that CPU time is work done, not spinning.

Printed per N: tick_to_decision p50/p99 (t_decision - t_recv of the trigger book, every Binance book), the feeds'
CPU time per WebSocket message (``cpu_ns / cpu_msgs`` from each feed's counters since its first message: TLS,
WebSocket framing, decode, validation, publish and housekeeping, both venues together), feed_internal p50 (t_publish
- t_recv: decode + validate + publish alone), the strategy's CPU time per book (its idle polls included: the sleep
policy still wakes every few tens of microseconds), the records the strategy lost to
a lapping ring (``books.lost``) and the cost ratios against N = 1 *in the same run*. Goals: feed cost per message
at N = 64 within 1.5x of N = 1; no ring loss.

``--same-total`` holds the *total* Binance rate at ``--rate`` x 16 for every N instead (each instrument gets
``total / N``): at a fixed rate per instrument the load grows with N, so fixed per-second costs (housekeeping,
pings) and cache warmth favour large N; at a fixed total what is left is what the number of instruments itself
costs.

    python -m benchmarks.symbols_scaling [--quick] [--json PATH] [--seconds S] [--rate HZ] [--same-total]
                                         [--counts 1,4,16,64]
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.common import Goal, at_most, benchmark_parser, emit, run_session, summarize_histogram
from caerus.plan import feed_venue

COUNTS = (1, 4, 16, 64)
STRATEGY_TOML = 'mode = "bench"\norder_qty = 0.001\nmax_position = 0.002\n'
# every order is refused after pickup by the rate limit past 100/s: the decision path is what is measured
EXECUTION_TOML = ("[risk]\nmax_order_qty = 0.01\nmax_position = 0.25\nmax_orders_per_s = 100\n"
                  "price_band_bps = 500.0\n")


def instrument_names(n: int) -> list[str]:
    """``--symbols`` entries for the first ``n`` perpetuals both emulated venues list (BTC first), each naming
    both venues' symbols (the emulator lists some under other names, like Binance 1000PEPEUSDT / Hyperliquid
    kPEPE)."""
    from caerus.sim.core.catalogue import LISTED

    both = [i for i in LISTED if i.binance_symbol is not None and i.hl_asset is not None]
    if n > len(both):
        raise SystemExit(f"symbols_scaling: the emulator lists {len(both)} instruments on both venues, not {n}")
    return [f"{i.name}={i.binance_symbol}/{i.name}" for i in both[:n]]


def one_session(work: Path, n: int, seconds: float, seed: int, rate: float, timeout_s: float) -> Path:
    return run_session("symbols_scaling", work / f"sessions-{n}", seconds, seed,
                       ["--symbols", ",".join(instrument_names(n)), "--symbol-rate", f"{rate:g}", "--transport",
                        "paper", "--wait-policy", "sleep", "--strategy-config", str(work / "strategy.toml"),
                        "--execution-config", str(work / "execution.toml")], timeout_s)


def measure(session: Path) -> dict[str, Any]:
    """What one session says about its cost (from summary.json counters and the merged histograms)."""
    from caerus.metrics.summary import load_metrics

    summary = json.loads((session / "summary.json").read_text())
    counters = summary.get("counters") or {}
    feeds = [f for f in counters if feed_venue(f) is not None]  # every feed process (each share of a split venue)
    feed_cpu = sum(float((counters.get(f) or {}).get("cpu_ns", 0)) for f in feeds)
    feed_msgs = sum(float((counters.get(f) or {}).get("cpu_msgs", 0)) for f in feeds)
    strat = counters.get("strategy") or {}
    strat_books = float(strat.get("cpu_books", 0))
    out: dict[str, Any] = {
        "feed_cpu_ns_per_msg": feed_cpu / feed_msgs if feed_msgs else float("nan"),
        "feed_msgs": feed_msgs,
        "strategy_cpu_ns_per_book": float(strat.get("cpu_ns", 0)) / strat_books if strat_books else float("nan"),
        "strategy_books": strat_books,
        "ring_lost": int(strat.get("books.lost", 0)),
        "instrument_stale": sum(int((counters.get(f) or {}).get("instrument_stale", 0)) for f in feeds),
    }
    metrics = load_metrics(session).metrics
    for tag in ("tick_to_decision", "feed_internal.binance", "feed_internal.hyperliquid"):
        m = metrics.get(tag)
        if m is not None and m.hist.get_total_count():
            out[tag] = summarize_histogram(m.hist)
    return out


def main(argv: list[str] | None = None) -> int:
    p = benchmark_parser(__doc__)
    p.add_argument("--seconds", type=float, help="length of each session (default 20, quick 8)")
    p.add_argument("--rate", type=float, default=20.0,
                   help="Binance bookTicker messages per second per instrument (default 20: 1280/s at N = 64)")
    p.add_argument("--same-total", action="store_true",
                   help="the same total Binance rate (rate x 16) at every N instead of the same rate per instrument")
    p.add_argument("--counts", default=",".join(map(str, COUNTS)), help="instrument counts, comma-separated")
    p.add_argument("--reports", type=Path, default=Path("reports"),
                   help="reports folder: the result is also left there as symbols_scaling.json, which the report "
                        "of a many-instrument session plots")
    args = p.parse_args(argv)
    seconds = args.seconds or (8.0 if args.quick else 20.0)
    counts = [int(c) for c in args.counts.split(",")]
    if not counts or counts[0] != 1:
        raise SystemExit("symbols_scaling: the counts must start at 1 (the in-run reference)")
    results: dict[int, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="caerus-symbols-") as tmp:
        work = Path(tmp)
        (work / "strategy.toml").write_text(STRATEGY_TOML)
        (work / "execution.toml").write_text(EXECUTION_TOML)
        for n in counts:
            rate = args.rate * 16 / n if args.same_total else args.rate
            session = one_session(work, n, seconds, args.seed, rate, timeout_s=seconds * 4 + 240)
            results[n] = measure(session)
    metrics: dict[str, dict[str, float]] = {}
    ratios: dict[str, float] = {}
    base = results[1]["feed_cpu_ns_per_msg"]
    for n, r in results.items():
        for tag in ("tick_to_decision", "feed_internal.binance", "feed_internal.hyperliquid"):
            if r.get(tag):
                metrics[f"{tag} N={n}"] = r[tag]
        if n != 1:
            ratios[f"feed cost per message N={n}/N=1"] = r["feed_cpu_ns_per_msg"] / base
            for tag in ("feed_internal.binance", "feed_internal.hyperliquid"):
                if r.get(tag) and results[1].get(tag):
                    ratios[f"{tag} p50 N={n}/N=1"] = r[tag]["p50"] / results[1][tag]["p50"]
    goals: list[Goal] = []
    top = max(results)
    if top != 1:
        goals.append(at_most(f"feed cost per message N={top}/N=1", ratios[f"feed cost per message N={top}/N=1"],
                             1.5, unit="x"))
    goals.append(at_most("ring records lost (all N)", float(sum(r["ring_lost"] for r in results.values())), 0.0,
                         unit=""))
    print("N    feed msgs   feed cpu ns/msg   bn feed_internal p50   strategy cpu ns/book*  ttd p50 us   ttd p99 us"
          "   ring lost   silent")
    nan = float("nan")
    for n, r in results.items():
        ttd = r.get("tick_to_decision") or {}
        fi = (r.get("feed_internal.binance") or {}).get("p50", nan)
        print(f"{n:<4} {r['feed_msgs']:>9,.0f}   {r['feed_cpu_ns_per_msg']:>15,.0f}   {fi:>17,.0f} ns   "
              f"{r['strategy_cpu_ns_per_book']:>20,.0f}   {ttd.get('p50', nan) / 1e3:>10.1f}   "
              f"{ttd.get('p99', nan) / 1e3:>10.1f}   {r['ring_lost']:>9}   {r['instrument_stale']:>6}")
    print("* strategy CPU time includes its idle polls, so it falls as books arrive more often")
    doc = emit("symbols_scaling", metrics, ratios=ratios, goals=goals, quick=args.quick, json_path=args.json,
               extra={"seconds": seconds, "rate_hz": args.rate, "same_total": args.same_total, "counts": counts,
                      "per_count": {str(n): r for n, r in results.items()}})
    # the newest curve, where the report of a many-instrument session looks for it (caerus.report.render)
    args.reports.mkdir(parents=True, exist_ok=True)
    (args.reports / "symbols_scaling.json").write_text(json.dumps(doc, indent=2, sort_keys=True))
    print(f"cost curve for the reports: {args.reports / 'symbols_scaling.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
