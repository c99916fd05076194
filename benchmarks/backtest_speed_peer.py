"""hftbacktest's side of benchmarks/backtest_speed: a worker in the peers' venv (.venv-peers, pyproject's [peers]
extra: hftbacktest 2.4.4 + numba), never imported by caerus. It times its own region on command, so the main
script can interleave its repetitions with caerus' (benchmarks/protocol).

Reads the books (``books.npz``: venue, t_exchange, t_recv, bid/ask px/qty) the main script wrote and converts them
to hftbacktest's L2 events as its own converters do (to_events: a top that moved clears its old level with qty 0,
the new top's level is set to its size; asset 0 = Binance, asset 1 = Hyperliquid). Then runs the same naive
latency-arb rule written for it in numba: the basis (Binance mid - Hyperliquid mid) / Hyperliquid mid in bps
against its time EWMA; an entry IOC on Hyperliquid at the touch +- slippage when a Binance book moves the signal
past entry_bps, exits on exit/reversal/max hold, a cooldown, one order at a time (held until the constant round
trip has passed). Models set to caerus backtest's nearest equivalents: constant order latency (entry = the wire
time, response = the answer hop), partial fills at the top, no queue effect (IOCs never rest).

Both of hftbacktest's backtesters (its docs: ``HashMapMarketDepthBacktest``, the general one, and
``ROIVectorMarketDepthBacktest``, a vector over a price range of interest, the faster one), each with its assets'
range of interest set to the books' prices +- 1%.

The timed region (:func:`run`): build the backtester over the events, run the rule, read ``state_values`` (trades,
volume), close it -- what a user's backtest does. As hftbacktest's docs say, the first call of numba code compiles
it (tens of seconds); so :func:`warm_up` calls every step of the region once, on a prefix of the events, before
any timing: every numba dispatcher the region calls (the rule, the backtester's jitclass constructor and methods,
the state values' accessors) compiles there. Every timed region runs under numba's compile-event recorder, and
reports what compiled inside it (``compiled_in_timed_region``: must be empty; the main script refuses the sample
otherwise) and how many signatures each dispatcher it calls had compiled before timing started and after it ended
(equal when nothing compiled inside).

Protocol (one JSON object a line each way): ``{"op": "warm_up", "backtester": "hashmap"|"roivec", "skip": [step]}``
(``skip``: warm-up steps left out, for tests/peers' check that a missing one is caught), ``{"op": "run",
"backtester": ...}``, ``{"op": "quit"}``; every answer is one line on stdout.
Usage: python -m benchmarks.backtest_speed_peer BOOKS.npz PARAMS_JSON
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable

import numpy as np
from hftbacktest import (
    BUY_EVENT,
    DEPTH_EVENT,
    EXCH_EVENT,
    LOCAL_EVENT,
    SELL_EVENT,
    BacktestAsset,
    HashMapMarketDepthBacktest,
    ROIVectorMarketDepthBacktest,
)
from hftbacktest.binding import HashMapMarketDepthBacktest_, ROIVectorMarketDepthBacktest_
from hftbacktest.types import event_dtype
from numba import njit
from numba.core import event as numba_event

IOC = 3
LIMIT = 0
#: the backtesters, by the name the main script uses: (constructor, its numba jitclass)
BACKTESTERS = {"hashmap": (HashMapMarketDepthBacktest, HashMapMarketDepthBacktest_),
               "roivec": (ROIVectorMarketDepthBacktest, ROIVectorMarketDepthBacktest_)}
#: the timed region's steps after building the backtester, in order; the warm-up calls each of them (tests/peers
#: drops one to see it caught)
STEPS = ("rule", "state_values", "close")
WARM_UP_EVENTS = 2000  # per asset: enough for the rule to send orders (so every branch it calls compiles)


def to_events(venue: np.ndarray, code: int, d: dict) -> np.ndarray:
    """One venue's top-of-book updates as hftbacktest L2 depth events, as its own converters build them (a level
    set to its size; a level that left the top set to qty 0): per book, first the previous top's level cleared on
    each side whose price moved, then the new top's levels with their sizes, all at the book's exchange and local
    times (hftbacktest applies a timestamp's events together, so the book is never read half-updated)."""
    m = venue == code
    t_ex, t_lo = d["t_exchange"][m], d["t_recv"][m]
    n = len(t_ex)
    parts = []  # (slot within the book, side flag, price, qty, mask) -> events sorted by (book, slot)
    for k, (flag, px, qty) in enumerate(((BUY_EVENT, "bid_px", "bid_qty"), (SELL_EVENT, "ask_px", "ask_qty"))):
        p, q = d[px][m], d[qty][m]
        prev = np.concatenate(([np.nan], p[:-1]))
        moved = (prev != p) & ~np.isnan(prev)
        parts.append((k, flag, prev, np.zeros(n), moved))  # slots 0, 1: clear the old tops
        parts.append((2 + k, flag, p, q, ~np.isnan(p)))  # slots 2, 3: set the new tops
    rows = np.concatenate([np.flatnonzero(mask) for *_, mask in parts])
    slot = np.concatenate([np.full(int(mask.sum()), sl) for sl, *_, mask in parts])
    order = np.lexsort((slot, rows))
    ev = np.zeros(len(rows), dtype=event_dtype)
    ev["ev"] = np.concatenate([np.full(int(mask.sum()), EXCH_EVENT | LOCAL_EVENT | DEPTH_EVENT | flag, np.uint64)
                               for _, flag, _, _, mask in parts])[order]
    ev["px"] = np.concatenate([px[mask] for _, _, px, _, mask in parts])[order]
    ev["qty"] = np.concatenate([q[mask] for _, _, _, q, mask in parts])[order]
    ev["exch_ts"] = t_ex[rows[order]]
    ev["local_ts"] = t_lo[rows[order]]
    return ev


@njit
def rule(hbt, entry_bps, exit_bps, reversal_bps, max_hold, cooldown, k, warmup, slip, qty, rtt, out):
    n_out = 0
    ewma = 0.0
    ewma_t = 0
    start_t = 0
    last_fire = -(1 << 62)
    entry_t = 0
    busy_until = 0
    oid = 0
    last_bn = 0.0
    pos = 0.0
    prev_pos = 0.0
    while True:
        r = hbt.wait_next_feed(False, 60_000_000_000)
        if r != 0 and r != 2:  # 1: end of data; anything else an error
            break
        now = hbt.current_timestamp
        bn = hbt.depth(0)
        hl = hbt.depth(1)
        bb, ba, hb, ha = bn.best_bid, bn.best_ask, hl.best_bid, hl.best_ask
        if not (bb > 0 and ba > 0 and hb > 0 and ha > 0 and ba < 1e300 and ha < 1e300):
            continue
        bn_mid = (bb + ba) * 0.5
        hl_mid = (hb + ha) * 0.5
        is_bn = bn_mid != last_bn
        last_bn = bn_mid
        basis = (bn_mid - hl_mid) / hl_mid * 1e4
        if start_t == 0:
            start_t = now
            ewma = basis
            ewma_t = now
        signal = basis - ewma
        dt = now - ewma_t
        if dt > 0:
            ewma += (1.0 - math.exp(-k * dt)) * (basis - ewma)
            ewma_t = now
        pos = hbt.position(1)
        if pos != prev_pos and n_out > 0:  # the last order's fill (one order in flight at a time)
            out[n_out - 1, 3] += abs(pos - prev_pos)
            prev_pos = pos
        if now < busy_until:
            continue
        side = 0
        size = 0.0
        if abs(pos) > 1e-12:
            s = signal if pos > 0 else -signal
            if s <= -reversal_bps or s <= exit_bps or now - entry_t >= max_hold:
                side = -1 if pos > 0 else 1
                size = abs(pos)
        elif is_bn and now - start_t >= warmup and now - last_fire >= cooldown:
            if signal >= entry_bps:
                side = 1
            elif signal <= -entry_bps:
                side = -1
            size = qty
            if side != 0:
                entry_t = now
        if side == 0:
            continue
        oid += 1
        hbt.clear_inactive_orders(1)
        if side > 0:
            px = math.ceil(ha * (1.0 + slip))
            hbt.submit_buy_order(1, oid, px, size, IOC, LIMIT, False)
        else:
            px = math.floor(hb * (1.0 - slip))
            hbt.submit_sell_order(1, oid, px, size, IOC, LIMIT, False)
        last_fire = now
        busy_until = now + rtt
        if n_out < out.shape[0]:
            out[n_out, 0] = now
            out[n_out, 1] = side
            out[n_out, 2] = px
            out[n_out, 3] = 0.0
            n_out += 1
    return n_out


def asset(ev: np.ndarray, tick: float, lot: float, entry_ns: int, resp_ns: int, fees: tuple[float, float],
          roi: tuple[float, float] | None) -> object:
    """One venue as an hftbacktest asset with the nearest equivalents of caerus backtest's models: a constant order
    latency (entry = caerus' wire time, response = its answer hop), IOCs taking what the top shows (partial fills;
    the queue model only matters for resting orders, which the rule never leaves); ``roi``: the price range of
    interest (ROIVectorMarketDepthBacktest's depth is a vector over it)."""
    a = (BacktestAsset().data(ev).linear_asset(1.0).constant_order_latency(entry_ns, resp_ns)
         .risk_adverse_queue_model().partial_fill_exchange().trading_value_fee_model(*fees).tick_size(tick)
         .lot_size(lot).last_trades_capacity(0))
    return a if roi is None else a.roi_lb(roi[0]).roi_ub(roi[1])


VENUES = ((1, 0.1, 0.001), (2, 1.0, 0.00001))  # (venue code, tick, lot): asset 0 Binance, asset 1 Hyperliquid


class Worker:
    """The books as hftbacktest events, the rule's arguments, and the warm-up and timed region per backtester."""

    def __init__(self, d: dict[str, np.ndarray], p: dict[str, float]) -> None:
        self.books = len(d["venue"])
        self.t0 = int(min(d["t_exchange"].min(), d["t_recv"].min())) - 1_000_000  # time from just before the first
        d = {**d, "t_exchange": d["t_exchange"] - self.t0, "t_recv": d["t_recv"] - self.t0}
        self.events = [to_events(d["venue"], code, d) for code, _, _ in VENUES]
        self.roi = []
        for code, tick, _ in VENUES:  # the books' prices +- 1%, on the tick grid
            m = d["venue"] == code
            px = np.concatenate([d["bid_px"][m], d["ask_px"][m]])
            px = px[np.isfinite(px) & (px > 0)]
            self.roi.append((math.floor(px.min() * 0.99 / tick) * tick, math.ceil(px.max() * 1.01 / tick) * tick))
        self.args = (p["entry_bps"], p["exit_bps"], p["reversal_bps"], int(p["max_hold_ms"] * 1e6),
                     int(p["cooldown_ms"] * 1e6), math.log(2.0) / (p["ewma_half_life_s"] * 1e9),
                     int(p["warmup_ms"] * 1e6), p["slippage_bps"] * 1e-4, p["order_qty"],
                     p["order_ns"] + p["resp_ns"] + 1)
        self.latency = (int(p["order_ns"]), int(p["resp_ns"]))

    def _build(self, kind: str, events: list[np.ndarray], latency: tuple[int, int],
               fees: tuple[float, float]) -> object:
        make = BACKTESTERS[kind][0]
        return make([asset(e, tick, lot, *latency, fees, self.roi[i] if kind == "roivec" else None)
                     for i, (e, (_, tick, lot)) in enumerate(zip(events, VENUES, strict=True))])

    def dispatchers(self, kind: str) -> dict[str, Callable]:
        """Every numba dispatcher the timed region calls from Python, or that the rule calls: the rule, and the
        backtester jitclass' constructor and methods."""
        cls = BACKTESTERS[kind][1]
        return {"rule": rule, **{f"{cls.class_type.class_name}.{name}": d
                                 for name, d in cls.class_type.jit_methods.items()}}

    def signatures(self, kind: str) -> dict[str, int]:
        return {name: len(d.signatures) for name, d in self.dispatchers(kind).items()}  # type: ignore[attr-defined]

    def region(self, kind: str, events: list[np.ndarray], latency: tuple[int, int], fees: tuple[float, float],
               out: np.ndarray, steps: tuple[str, ...] = STEPS) -> tuple[int, int, float]:
        """The timed region (or, on a prefix, the warm-up): the steps in ``steps``; (orders, trades, volume)."""
        hbt = self._build(kind, events, latency, fees)
        n = trades = 0
        volume = 0.0
        if "rule" in steps:
            n = rule(hbt, *self.args, out)
        if "state_values" in steps:
            sv = hbt.state_values(1)  # type: ignore[attr-defined]
            trades, volume = int(sv.num_trades), float(sv.trading_volume)
        if "close" in steps:
            hbt.close()  # type: ignore[attr-defined]
        return n, trades, volume

    def warm_up(self, kind: str, skip: list[str]) -> dict[str, object]:
        steps = tuple(s for s in STEPS if s not in skip)
        t = time.perf_counter()
        with numba_event.install_recorder("numba:compile") as rec:
            self.region(kind, [e[:WARM_UP_EVENTS] for e in self.events], (1, 1), (0.0, 0.0), np.zeros((10, 4)),
                        steps)
        return {"backtester": kind, "warm_up_s": time.perf_counter() - t, "steps": list(steps),
                "compiled": _compiled(rec), "signatures": self.signatures(kind)}

    def run(self, kind: str) -> dict[str, object]:
        before = self.signatures(kind)
        out = np.zeros((100_000, 4))
        with numba_event.install_recorder("numba:compile") as rec:
            t = time.perf_counter()
            n, trades, volume = self.region(kind, self.events, self.latency, (0.00015, 0.00045), out)
            seconds = time.perf_counter() - t
        return {"backtester": kind, "seconds": seconds, "t0": self.t0, "books": self.books,
                "events": int(sum(len(e) for e in self.events)), "orders": n, "fills": trades, "volume": volume,
                "orders_list": out[:n].tolist(), "compiled_in_timed_region": _compiled(rec),
                "signatures_before_timing": before, "signatures_after_timing": self.signatures(kind)}


def _compiled(rec: object) -> list[str]:
    """What numba compiled while ``rec`` (an event recorder) listened: one name per compilation started."""
    names = []
    for _, ev in rec.buffer:  # type: ignore[attr-defined]
        if ev.is_start:
            disp = ev.data.get("dispatcher")
            func = getattr(disp, "py_func", None)
            names.append(getattr(func, "__qualname__", None) or str(disp))
    return names


def main() -> None:
    d = dict(np.load(sys.argv[1]))
    w = Worker(d, json.loads(sys.argv[2]))
    print(json.dumps({"ready": True, "books": w.books}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["op"] == "quit":
            break
        if cmd["backtester"] not in BACKTESTERS:
            res: dict[str, object] = {"error": f"unknown backtester {cmd['backtester']!r} (have {list(BACKTESTERS)})"}
        elif cmd["op"] == "warm_up":
            res = w.warm_up(cmd["backtester"], list(cmd.get("skip", [])))
        elif cmd["op"] == "run":
            res = w.run(cmd["backtester"])
        else:
            res = {"error": f"unknown op {cmd['op']!r} (warm_up, run, quit)"}
        print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
