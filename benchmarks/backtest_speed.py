"""Backtest speed: book events per second through `caerus backtest`'s replay, and through both of hftbacktest
2.4.4's backtesters on the same books with the same naive rule, in one run, under one timing protocol
(benchmarks/protocol: warmed, the same number of interleaved repetitions, the median of each).

Books: the emulator's market model generated offline (BTC, the session default of 30 jumps/min) for ``--seconds``
of market time (a 30 s session's books are ~3.5k: too few to time, so the rate is measured on more and the
real-time multiple reported for 30 s as well). Both tools read the same books with distinct receive times (the
rank within the venues' millisecond stamps), so both see the same book sequence.

Contenders, each warmed up first (its warm-up time on a line of its own) and then timed ``--repeat`` times,
interleaved, the order rotated each repetition:

- **caerus backtest**: caerus.research.backtest.engine.run end to end (the fleet's LatencyArb, constant order
  latency, continuous matching at arrival: latency draws, read order, fill index, BOOK records built in batches
  and replayed, the output arrays; the market's generation is not timed). Warm-up: one whole run.
- **caerus replay loop alone**: the same replay with every record built before it (not timed): the decision code's
  floor.
- **hftbacktest HashMapMarketDepthBacktest** and **ROIVectorMarketDepthBacktest** (its faster one): a worker in
  .venv-peers (benchmarks/backtest_speed_peer; created here with pip when missing: hftbacktest is never a caerus
  dependency) times its own region: build the backtester over the events, the rule, ``state_values``, close. Its
  warm-up calls every step of that region once on a prefix of the events, so numba compiles every dispatcher the
  region calls before timing; a repetition in which anything compiled is refused (ProtocolError), never averaged in.

Prints books/s of every contender (median of the repetitions, min-max beside it), caerus over each backtester, and
where the runs agree: orders identical in decision time, side and limit price, and the quantity each filled -- for
both backtesters against caerus, and every repetition against the first. ``--profile`` prints where our time goes.

Goals: >= 1M book events/s and >= 1000x real time for a 30 s session's books (issue 24); caerus >= 1.0x
hftbacktest's faster backtester in books/s (issue 49).
"""

from __future__ import annotations

import cProfile
import json
import os
import pstats
import selectors
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

import numpy as np

from benchmarks import peers_venv, protocol
from benchmarks.common import at_least, benchmark_parser, emit
from caerus.research.backtest import engine, sources
from caerus.research.backtest.events import BookEvents
from caerus.research.backtest.fills import FillRules
from caerus.research.backtest.latency import LatencyDraws, LatencyModel
from caerus.strategy.config import StrategyConfig

ROOT = Path(__file__).resolve().parents[1]
BACKTESTERS = {"hashmap": "hftbacktest HashMapMarketDepthBacktest",
               "roivec": "hftbacktest ROIVectorMarketDepthBacktest"}
CAERUS = "caerus backtest"
CAERUS_LOOP = "caerus replay loop alone"
WORKER_TIMEOUT_S = 900.0  # one answer of the worker (a warm-up compiles for tens of seconds on a loaded machine)


def distinct_receive_times(ev: BookEvents) -> BookEvents:
    """The offline books with t_recv = t_exchange + their rank within the millisecond (ns): the venues stamp whole
    ms, and hftbacktest applies every event of one timestamp before its rule looks, where caerus' strategy reads
    each book; distinct receive times make both tools see the same book sequence."""
    t = ev.t_exchange
    first = np.r_[0, np.flatnonzero(np.diff(t)) + 1]
    rank = np.arange(len(t)) - np.repeat(first, np.diff(np.r_[first, len(t)]))
    return BookEvents(**{**ev.__dict__, "t_recv": t + rank})


def rule_params(cfg: StrategyConfig, order_ns: int) -> dict[str, float]:
    """The rule's parameters for the peer: caerus' constant model, the order's wire time out and its answer back
    after a book hop (0 here)."""
    return {"order_ns": order_ns, "resp_ns": 0, "entry_bps": cfg.entry_bps, "exit_bps": cfg.exit_bps,
            "reversal_bps": cfg.reversal_bps, "max_hold_ms": cfg.max_hold_ms, "cooldown_ms": cfg.cooldown_ms,
            "ewma_half_life_s": cfg.ewma_half_life_s, "warmup_ms": cfg.warmup_ms, "slippage_bps": cfg.slippage_bps,
            "order_qty": cfg.order_qty}


class PeerWorker:
    """benchmarks/backtest_speed_peer running in .venv-peers over the books, answering one command at a time."""

    def __init__(self, py: Path, ev: BookEvents, params: dict[str, float]) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="caerus-bt-peer-")
        path = Path(self._tmp.name) / "books.npz"
        np.savez(path, venue=ev.venue, t_exchange=ev.t_exchange, t_recv=ev.t_recv, bid_px=ev.bid_px,
                 bid_qty=ev.bid_qty, ask_px=ev.ask_px, ask_qty=ev.ask_qty)
        self._err: IO[str] = open(Path(self._tmp.name) / "stderr.txt", "w+")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen([str(py), "-m", "benchmarks.backtest_speed_peer", str(path),
                                      json.dumps(params)], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err, text=True)
        self._sel = selectors.DefaultSelector()
        assert self.proc.stdout is not None
        self._sel.register(self.proc.stdout, selectors.EVENT_READ)
        self.ready = self._answer()

    def _answer(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        if not self._sel.select(WORKER_TIMEOUT_S):
            raise RuntimeError(f"the hftbacktest worker gave no answer within {WORKER_TIMEOUT_S:.0f} s")
        line = self.proc.stdout.readline()
        if not line:
            self._err.seek(0)
            raise RuntimeError(f"the hftbacktest worker ended (exit {self.proc.wait(30)}): {self._err.read()[-800:]}")
        ans: dict[str, Any] = json.loads(line)
        if "error" in ans:
            raise RuntimeError(f"the hftbacktest worker: {ans['error']}")
        return ans

    def call(self, op: str, backtester: str, **kw: object) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": op, "backtester": backtester, **kw}) + "\n")
        self.proc.stdin.flush()
        return self._answer()

    def close(self) -> None:
        try:
            if self.proc.poll() is None and self.proc.stdin is not None:
                self.proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
                self.proc.stdin.close()
            self.proc.wait(60)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait(30)
        finally:
            self._sel.close()
            self._err.close()
            self._tmp.cleanup()


def compiled_check(name: str, ans: dict[str, Any]) -> dict[str, Any]:
    """A peer repetition is a sample only when nothing compiled inside its timed region (ProtocolError otherwise)."""
    if ans["compiled_in_timed_region"]:
        raise protocol.ProtocolError(f"{name}: numba compiled inside the timed region "
                                     f"({', '.join(ans['compiled_in_timed_region'])}): its warm-up missed a path")
    return ans


def agreement(ours: dict[str, np.ndarray], theirs: list[list[float]], t0: int) -> dict[str, object]:
    """Where the two runs of the rule agree: orders (decision time, side, limit price) and fills (filled or not,
    quantity), in order, up to the first difference."""
    a = list(zip(ours["t_seen"].tolist(), ours["side"].tolist(), ours["px"].tolist(), ours["fill_qty"].tolist(),
                 strict=True))
    b = [(t0 + int(t), int(sd), float(px), float(q)) for t, sd, px, q in theirs]  # the peer's clock starts at t0
    same_orders = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x[:3] != y[:3]), min(len(a), len(b)))
    same_fills = sum(abs(x[3] - y[3]) < 1e-12 for x, y in zip(a[:same_orders], b[:same_orders], strict=True))
    return {"orders_caerus": len(a), "orders_hftbacktest": len(b), "orders_identical_prefix": same_orders,
            "fills_caerus": sum(x[3] > 0 for x in a), "fills_hftbacktest": sum(y[3] > 0 for y in b),
            "fill_qty_equal_in_prefix": same_fills,
            "identical": same_orders == len(a) == len(b) and same_fills == len(a),
            "first_difference": None if same_orders == min(len(a), len(b)) else
            {"caerus": a[same_orders], "hftbacktest": b[same_orders]}}


def agreement_text(name: str, ag: dict[str, object]) -> str:
    return (f"agreement {name}: orders caerus {ag['orders_caerus']} vs {ag['orders_hftbacktest']}, identical "
            f"(decision time, side, limit px) for the first {ag['orders_identical_prefix']}, fill qty equal for "
            f"{ag['fill_qty_equal_in_prefix']} of those; fills caerus {ag['fills_caerus']} vs "
            f"{ag['fills_hftbacktest']}; first difference: {ag['first_difference']}")


def _same_orders(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[c], b[c]) for c in a)


def contenders(ev: BookEvents, spec: engine.RunSpec, peer: PeerWorker | None) -> list[protocol.Contender[Any]]:
    """caerus end to end, its replay loop alone, and (with a worker) both hftbacktest backtesters."""

    def loop_once(_: int) -> float:
        draws = LatencyDraws(spec.latency, spec.seed)
        events, recs, seen, _rows = engine.prepare(ev, spec, draws)
        fills = engine.FillModel(spec.fills, spec.target_venue, events.symbol, events.venue, events.flags,
                                 events.t_exchange, events.bid_px, events.bid_qty, events.ask_px, events.ask_qty)
        loop = engine._Loop(engine.Desk(spec.strategy, spec.instruments), fills, draws, spec)
        with engine.gc_paused():
            t0 = time.perf_counter()
            loop.run([(recs, seen)])
            return time.perf_counter() - t0

    out: list[protocol.Contender[Any]] = [
        protocol.Contender(CAERUS, lambda _: engine.run(ev, spec), lambda: engine.run(ev, spec),
                           "one whole run, dropped"),
        protocol.Contender(CAERUS_LOOP, loop_once, lambda: loop_once(-1), "one whole replay, dropped",
                           seconds=lambda s: s),
    ]
    if peer is not None:
        for kind, name in BACKTESTERS.items():
            out.append(protocol.Contender(
                name, lambda _, k=kind, n=name: compiled_check(n, peer.call("run", k)),
                lambda k=kind: peer.call("warm_up", k),
                "every step of the timed region once (build, rule, state_values, close) on a prefix of the events: "
                "numba compiles every dispatcher the region calls", seconds=lambda a: float(a["seconds"])))
    return out


def main(argv: list[str] | None = None) -> int:
    p = benchmark_parser(__doc__)
    p.add_argument("--seconds", type=float, default=1800.0, help="market time to generate (default 30 min)")
    p.add_argument("--market", default="fixed-lag", help="market preset or TOML (default fixed-lag: the market the "
                   "documented numbers and the hftbacktest agreement were measured on; 'default': the stochastic)")
    p.add_argument("--order-latency", type=int, default=1_000_000, help="constant order latency, ns")
    p.add_argument("--repeat", type=int, default=5, help="timed repetitions of every contender, interleaved (the "
                   "median is kept)")
    p.add_argument("--profile", action="store_true", help="cProfile one replay and print the top functions")
    p.add_argument("--no-peer", action="store_true", help="skip hftbacktest")
    args = p.parse_args(argv)
    seconds = 300.0 if args.quick else args.seconds
    load_start = os.getloadavg()
    loaded = sources.offline_market(seconds, args.seed, market=args.market)
    ev = distinct_receive_times(loaded.events)
    cfg = StrategyConfig()
    # hftbacktest's rules, so the runs can agree order for order: continuous matching at arrival (no block clock) and
    # no depletion by our own fills (its depth is the feed's); the loop's work per book is the same either way
    rules = FillRules(blocks=False, deplete=False)
    spec = engine.RunSpec(cfg, loaded.instruments, LatencyModel.constant(args.order_latency), rules, args.seed)
    peer = None
    if not args.no_peer:
        py = peers_venv.ensure()
        peer = PeerWorker(py, ev, rule_params(cfg, args.order_latency)) if py is not None else None
    try:
        timed = protocol.interleaved(contenders(ev, spec, peer), args.repeat)
    finally:
        if peer is not None:
            peer.close()
    by = {t.name: t for t in timed}
    n = len(ev)
    ref = by[CAERUS]
    out = ref.results[0]
    if not all(_same_orders(r.orders, out.orders) for r in ref.results):
        raise protocol.ProtocolError(f"{CAERUS}: the repetitions sent different orders")
    span_s = out.t_last / 1e9 - out.t_first / 1e9
    rate = {t.name: n / t.median_s for t in timed}
    spread = {t.name: (n / max(t.seconds), n / min(t.seconds)) for t in timed}
    x_rt_30s = 30.0 / (3500 / rate[CAERUS])  # a 30 s session's ~3.5k books at the end-to-end rate
    print(f"books {n} over {span_s:.0f} s of market; orders {len(out.orders['side'])}; load average at start "
          f"{load_start[0]:.1f}, at end {os.getloadavg()[0]:.1f} ({os.cpu_count()} CPUs)")
    print(f"protocol: warmed, {args.repeat} interleaved repetitions of every contender (order rotated), "
          f"{protocol.STATISTIC}")
    for line in protocol.warm_up_lines(timed):
        print(line)
    for t in timed:
        lo, hi = spread[t.name]
        print(f"{t.name}: {rate[t.name]:,.0f} books/s (median of {t.repetitions}; {lo:,.0f}-{hi:,.0f})")
    print(f"caerus: {span_s / ref.median_s:,.0f}x real time end to end; records in batches of {engine.BATCH}")
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        engine.run(ev, spec)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(12)
    ratios: dict[str, float] = {}
    hft: dict[str, object] = {}
    goals = [at_least("book events/s (end to end)", rate[CAERUS], 1e6, "books/s"),
             at_least("x real time, a 30 s session's books", x_rt_30s, 1000.0, "x")]
    if peer is not None:
        for kind, name in BACKTESTERS.items():
            runs = by[name].results
            first = runs[0]
            if any(r["orders_list"] != first["orders_list"] for r in runs):
                raise protocol.ProtocolError(f"{name}: the repetitions sent different orders")
            ag = agreement(out.orders, first["orders_list"], int(first["t0"]))
            ratios[f"caerus_over_{kind}"] = rate[CAERUS] / rate[name]
            # the same ratio repetition by repetition (each pair ran back to back: the machine's load drifts less
            # within a pair than across the run), the median of the pairs beside the ratio of the medians
            paired = sorted(p / c for c, p in zip(ref.seconds, by[name].seconds, strict=True))
            hft[kind] = {"name": name, "books_per_s": rate[name], "events": first["events"],
                         "events_per_s": first["events"] / by[name].median_s, "orders": first["orders"],
                         "fills": first["fills"], "agreement": ag, "warm_up": by[name].warm_up_result,
                         "signatures_before_timing": first["signatures_before_timing"],
                         "signatures_after_timing": runs[-1]["signatures_after_timing"],
                         "compiled_in_timed_regions": sum(len(r["compiled_in_timed_region"]) for r in runs),
                         "paired_ratios": paired}
            print(f"caerus / {name}: {ratios[f'caerus_over_{kind}']:.2f}x (per repetition pair: median "
                  f"{statistics.median(paired):.2f}x, {paired[0]:.2f}-{paired[-1]:.2f}x)")
            print(agreement_text(name, ag))
        faster = max(BACKTESTERS, key=lambda k: rate[BACKTESTERS[k]])
        ratios["caerus_over_faster_hftbacktest"] = ratios[f"caerus_over_{faster}"]
        goals.append(at_least(f"caerus / hftbacktest's faster backtester ({BACKTESTERS[faster]}), books/s, same run",
                              ratios["caerus_over_faster_hftbacktest"], 1.0, "x"))
    emit("backtest_speed", {}, ratios=ratios, goals=goals, quick=args.quick, json_path=args.json,
         extra={"books": n, "span_s": span_s, "repetitions": args.repeat, "statistic": protocol.STATISTIC,
                "load_average": {"start": load_start, "end": os.getloadavg()}, "protocol": protocol.as_json(timed),
                "total_books_per_s": rate[CAERUS], "loop_books_per_s": rate[CAERUS_LOOP], "batch": engine.BATCH,
                "orders": len(out.orders["side"]), "hftbacktest": hft})
    return 0


if __name__ == "__main__":
    sys.exit(main())
