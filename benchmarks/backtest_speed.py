"""Backtest speed: book events per second through `caerus backtest`'s replay, and through hftbacktest 2.4.4 on the
same books with the same naive rule, in the same run.

Books: the emulator's market model generated offline (BTC, the session default of 30 jumps/min) for ``--seconds``
of market time (a 30 s session's books are ~3.5k: too few to time, so the rate is measured on more and the
real-time multiple reported for 30 s as well). Ours: caerus.research.backtest.engine.run (the fleet's LatencyArb,
constant order latency, fill at arrival); timed as the replay loop alone (records prebuilt) and end to end
(engine.run: draws, read order, fill index, records built in batches and replayed; the market's generation is not
timed), and end to end with every record built at once (the pre-batching method, for reference). Peer:
benchmarks/backtest_speed_peer.py in .venv-peers (created here with pip when missing: hftbacktest is never a
caerus dependency: pyproject's [peers] extra), timed after numba compiled the rule. Both read the same books with
distinct receive times (the rank within the venues' millisecond stamps), so both see the same book sequence. Prints
books/s of both (and hftbacktest's own depth events/s: 2-4 per book), the ratio, and where the two runs of the rule
agree: orders identical in decision time, side and limit price, and the quantity each filled.
``--profile`` prints where our time goes (cProfile).

Goals: >= 1M book events/s and >= 1000x real time for a 30 s session's books.
"""

from __future__ import annotations

import argparse
import cProfile
import glob
import json
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import numpy as np

from benchmarks.common import add_common_args, at_least, emit
from caerus.research.backtest import engine, sources
from caerus.research.backtest.events import BookEvents
from caerus.research.backtest.fills import FillRules
from caerus.research.backtest.latency import LatencyModel
from caerus.strategy.config import StrategyConfig

ROOT = Path(__file__).resolve().parents[1]
PEERS = ROOT / ".venv-peers"
PEER_SCRIPT = Path(__file__).with_name("backtest_speed_peer.py")


def peer_requirements() -> list[str]:
    """pyproject.toml's [peers] extra: what .venv-peers holds (never a caerus runtime or dev dependency)."""
    return list(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["peers"])


PEERS_LOCK = ROOT / "locks" / "peers.txt"


def python313() -> str | None:
    """A Python 3.13 interpreter (cryptofeed 3, in the same [peers] extra, requires it): python3.13 on PATH when it
    runs (a pyenv shim may not), else a pyenv-installed 3.13."""
    pyenv = sorted(glob.glob(str(Path.home() / ".pyenv/versions/3.13*/bin/python3.13")))
    for cand in [shutil.which("python3.13"), *pyenv]:
        if cand and subprocess.run([cand, "--version"], capture_output=True, timeout=30).returncode == 0:
            return cand
    return None


def ensure_peers() -> Path | None:
    """.venv-peers as benchmarks.peers builds it (Python 3.13, locks/peers.txt with hashes); None, said, when it
    cannot be built."""
    py = PEERS / "bin" / "python"
    if not py.exists():
        base = python313()
        if base is None:
            print("peer: no Python 3.13 to build .venv-peers with (cryptofeed 3 in the [peers] extra needs it)",
                  file=sys.stderr)
            return None
        subprocess.run([base, "-m", "venv", str(PEERS)], check=True, timeout=300)
    reqs = peer_requirements()
    ok = subprocess.run([str(py), "-c", "import sys, importlib.metadata as m; from packaging.requirements import "
                         "Requirement as R; sys.exit(any(not R(r).specifier.contains(m.version(R(r).name), True) "
                         "for r in sys.argv[1:]))", *reqs], capture_output=True, timeout=120)
    if ok.returncode != 0:
        res = subprocess.run([str(py), "-m", "pip", "install", "-q", "--require-hashes", "-r", str(PEERS_LOCK)],
                             capture_output=True, text=True, timeout=1800)
        if res.returncode != 0:
            print(f"peer: cannot install {PEERS_LOCK}: {res.stderr[-500:]}", file=sys.stderr)
            return None
    return py


def distinct_receive_times(ev: BookEvents) -> BookEvents:
    """The offline books with t_recv = t_exchange + their rank within the millisecond (ns): the venues stamp whole
    ms, and hftbacktest applies every event of one timestamp before its rule looks, where caerus' strategy reads
    each book; distinct receive times make both tools see the same book sequence."""
    t = ev.t_exchange
    first = np.r_[0, np.flatnonzero(np.diff(t)) + 1]
    rank = np.arange(len(t)) - np.repeat(first, np.diff(np.r_[first, len(t)]))
    return BookEvents(**{**ev.__dict__, "t_recv": t + rank})


def run_peer(ev: BookEvents, cfg: StrategyConfig, order_ns: int) -> dict[str, object]:
    """hftbacktest on the same books and rule (backtest_speed_peer.py in .venv-peers); {} when it cannot run."""
    py = ensure_peers()
    if py is None:
        return {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "books.npz"
        np.savez(path, venue=ev.venue, t_exchange=ev.t_exchange, t_recv=ev.t_recv, bid_px=ev.bid_px,
                 bid_qty=ev.bid_qty, ask_px=ev.ask_px, ask_qty=ev.ask_qty)
        # caerus' constant model: the order's wire time out, its answer back after a book hop (0 here)
        params = {"order_ns": order_ns, "resp_ns": 0, "entry_bps": cfg.entry_bps, "exit_bps": cfg.exit_bps,
                  "reversal_bps": cfg.reversal_bps, "max_hold_ms": cfg.max_hold_ms, "cooldown_ms": cfg.cooldown_ms,
                  "ewma_half_life_s": cfg.ewma_half_life_s, "warmup_ms": cfg.warmup_ms,
                  "slippage_bps": cfg.slippage_bps, "order_qty": cfg.order_qty}
        res = subprocess.run([str(py), str(PEER_SCRIPT), str(path), json.dumps(params)], capture_output=True,
                             text=True, timeout=1800)
    if res.returncode != 0:
        print(f"hftbacktest run failed: {res.stderr[-800:]}", file=sys.stderr)
        return {}
    peer = json.loads(res.stdout.strip().splitlines()[-1])
    peer["books_per_s"] = len(ev) / float(peer["seconds"])
    peer["events_per_s"] = int(peer["events"]) / float(peer["seconds"])
    return peer


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
            "first_difference": None if same_orders == min(len(a), len(b)) else
            {"caerus": a[same_orders], "hftbacktest": b[same_orders]}}


def agreement_text(ag: dict[str, object]) -> str:
    return (f"agreement: orders caerus {ag['orders_caerus']} vs hftbacktest {ag['orders_hftbacktest']}, identical "
            f"(decision time, side, limit px) for the first {ag['orders_identical_prefix']}, fill qty equal for "
            f"{ag['fill_qty_equal_in_prefix']} of those; fills caerus {ag['fills_caerus']} vs hftbacktest "
            f"{ag['fills_hftbacktest']}; first difference: {ag['first_difference']}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(p)
    p.add_argument("--seconds", type=float, default=1800.0, help="market time to generate (default 30 min)")
    p.add_argument("--market", default="fixed-lag", help="market preset or TOML (default fixed-lag: the market the "
                   "documented numbers and the hftbacktest agreement were measured on; 'default': the stochastic)")
    p.add_argument("--order-latency", type=int, default=1_000_000, help="constant order latency, ns")
    p.add_argument("--repeat", type=int, default=3, help="timed replays (best kept)")
    p.add_argument("--profile", action="store_true", help="cProfile one replay and print the top functions")
    p.add_argument("--no-peer", action="store_true", help="skip hftbacktest")
    args = p.parse_args()
    seconds = 300.0 if args.quick else args.seconds
    loaded = sources.offline_market(seconds, args.seed, market=args.market)
    ev = distinct_receive_times(loaded.events)
    cfg = StrategyConfig()
    # hftbacktest's rules, so the two runs can agree order for order: continuous matching at arrival (no block clock)
    # and no depletion by our own fills (its depth is the feed's); the loop's work per book is the same either way
    rules = FillRules(blocks=False, deplete=False)
    spec = engine.RunSpec(cfg, loaded.instruments, LatencyModel.constant(args.order_latency), rules, args.seed)
    # timed, each the best of --repeat: the replay loop alone (every record built before it, not timed), end to end
    # (engine.run: latency draws, read order, fill index, records built batch by batch and replayed; not timed: the
    # offline market's generation, the data) and, for reference, end to end with every record built at once (one
    # batch: how engine.run built them before batching)
    loop_best = total_best = whole_best = float("inf")
    out = None
    for _ in range(args.repeat):
        draws = engine.LatencyDraws(spec.latency, spec.seed)
        events, recs, seen, _rows = engine.prepare(ev, spec, draws)
        fills = engine.FillModel(spec.fills, spec.target_venue, events.symbol, events.venue, events.flags,
                                 events.t_exchange, events.bid_px, events.bid_qty, events.ask_px, events.ask_qty)
        loop = engine._Loop(engine.Desk(cfg, loaded.instruments), fills, draws, spec)
        t0 = time.perf_counter()
        loop.run([(recs, seen)])
        loop_best = min(loop_best, time.perf_counter() - t0)
        del recs, seen, loop
        t0 = time.perf_counter()
        out = engine.run(ev, spec)
        total_best = min(total_best, time.perf_counter() - t0)
        t0 = time.perf_counter()
        engine.run(ev, spec, batch=len(ev))
        whole_best = min(whole_best, time.perf_counter() - t0)
    assert out is not None
    n = len(ev)
    span_s = out.t_last / 1e9 - out.t_first / 1e9
    ours_loop = n / loop_best
    ours_total = n / total_best
    ours_whole = n / whole_best
    x_rt_30s = 30.0 / (3500 / ours_total)  # a 30 s session's ~3.5k books at the end-to-end rate
    print(f"books {n} over {span_s:.0f} s of market; orders {len(out.orders['side'])}")
    print(f"caerus: replay loop {ours_loop:,.0f} books/s, end to end {ours_total:,.0f} books/s "
          f"({span_s / total_best:,.0f}x real time; records in batches of {engine.BATCH}), end to end with every "
          f"record built at once {ours_whole:,.0f} books/s")
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        engine.run(ev, spec)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(12)
    peer: dict[str, object] = {}
    ratios: dict[str, float] = {}
    if not args.no_peer:
        peer = run_peer(ev, cfg, args.order_latency)
        if peer:
            ratios["caerus_over_hftbacktest"] = ours_total / float(peer["books_per_s"])  # type: ignore[arg-type]
            peer["agreement"] = agreement(out.orders, peer.pop("orders_list"), int(peer["t0"]))  # type: ignore[arg-type]
            print(f"hftbacktest {peer['books_per_s']:,.0f} books/s ({peer['events_per_s']:,.0f} of its depth "
                  f"events/s, {peer['events']} events); caerus/hftbacktest {ratios['caerus_over_hftbacktest']:.2f}x")
            print(agreement_text(peer["agreement"]))  # type: ignore[arg-type]
    goals = [at_least("book events/s (end to end)", ours_total, 1e6, "books/s"),
             at_least("x real time, a 30 s session's books", x_rt_30s, 1000.0, "x")]
    emit("backtest_speed", {}, ratios=ratios, goals=goals, quick=args.quick, json_path=args.json,
         extra={"books": n, "span_s": span_s, "loop_books_per_s": ours_loop, "total_books_per_s": ours_total,
                "total_one_batch_books_per_s": ours_whole, "batch": engine.BATCH,
                "orders": len(out.orders["side"]), "peer": peer})
    return 0


if __name__ == "__main__":
    sys.exit(main())
