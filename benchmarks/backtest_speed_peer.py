"""hftbacktest's side of benchmarks/backtest_speed: run in the peers' venv (.venv-peers, pyproject's [peers] extra:
hftbacktest 2.4.4 + numba), never imported by caerus.

Reads the books (``books.npz``: venue, t_exchange, t_recv, bid/ask px/qty) the main script wrote and converts them
to hftbacktest's L2 events as its own converters do (to_events: a top that moved clears its old level with qty 0,
the new top's level is set to its size; asset 0 = Binance, asset 1 = Hyperliquid). Then runs the same naive
latency-arb rule written for it in numba: the basis (Binance mid - Hyperliquid mid) / Hyperliquid mid in bps
against its time EWMA; an entry IOC on Hyperliquid at the touch +- slippage when a Binance book moves the signal
past entry_bps, exits on exit/reversal/max hold, a cooldown, one order at a time (held until the constant round
trip has passed). Models set to caerus backtest's nearest equivalents: constant order latency (entry = the wire
time, response = the answer hop), partial fills at the top, no queue effect (IOCs never rest). Prints one JSON
line: books, events, seconds, orders (decision time, side, limit px, filled qty), fills.
Usage: python backtest_speed_peer.py BOOKS.npz PARAMS_JSON
"""

from __future__ import annotations

import json
import math
import sys
import time

import numpy as np
from hftbacktest import (
    BUY_EVENT,
    DEPTH_EVENT,
    EXCH_EVENT,
    LOCAL_EVENT,
    SELL_EVENT,
    BacktestAsset,
    HashMapMarketDepthBacktest,
)
from hftbacktest.types import event_dtype
from numba import njit

IOC = 3
LIMIT = 0


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


def asset(ev: np.ndarray, tick: float, lot: float, entry_ns: int, resp_ns: int, fees: tuple[float, float]) -> object:
    """One venue as an hftbacktest asset with the nearest equivalents of caerus backtest's models: a constant order
    latency (entry = caerus' wire time, response = its answer hop), IOCs taking what the top shows (partial fills;
    the queue model only matters for resting orders, which the rule never leaves)."""
    return (BacktestAsset().data(ev).linear_asset(1.0).constant_order_latency(entry_ns, resp_ns)
            .risk_adverse_queue_model().partial_fill_exchange().trading_value_fee_model(*fees).tick_size(tick)
            .lot_size(lot).last_trades_capacity(0))


VENUES = ((1, 0.1, 0.001), (2, 1.0, 0.00001))  # (venue code, tick, lot): asset 0 Binance, asset 1 Hyperliquid


def main() -> None:
    d = dict(np.load(sys.argv[1]))
    p = json.loads(sys.argv[2])
    t0 = int(min(d["t_exchange"].min(), d["t_recv"].min())) - 1_000_000  # time from just before the first book
    d["t_exchange"] = d["t_exchange"] - t0
    d["t_recv"] = d["t_recv"] - t0
    events = [to_events(d["venue"], code, d) for code, _, _ in VENUES]
    args = (p["entry_bps"], p["exit_bps"], p["reversal_bps"], int(p["max_hold_ms"] * 1e6), int(p["cooldown_ms"] * 1e6),
            math.log(2.0) / (p["ewma_half_life_s"] * 1e9), int(p["warmup_ms"] * 1e6), p["slippage_bps"] * 1e-4,
            p["order_qty"], p["order_ns"] + p["resp_ns"] + 1)
    # compile on a short prefix first (numba's compile time is not the backtest's speed)
    hw = HashMapMarketDepthBacktest([asset(e[:2000], t, lt, 1, 1, (0.0, 0.0))
                                     for e, (_, t, lt) in zip(events, VENUES, strict=True)])
    rule(hw, *args, np.zeros((10, 4)))
    hw.close()
    out = np.zeros((100_000, 4))
    t_start = time.perf_counter()
    hbt = HashMapMarketDepthBacktest([asset(e, t, lt, p["order_ns"], p["resp_ns"], (0.00015, 0.00045))
                                      for e, (_, t, lt) in zip(events, VENUES, strict=True)])
    n = rule(hbt, *args, out)
    sv = hbt.state_values(1)
    fills, volume = int(sv.num_trades), float(sv.trading_volume)
    hbt.close()
    dt = time.perf_counter() - t_start
    print(json.dumps({"t0": t0, "books": len(d["venue"]), "events": int(sum(len(e) for e in events)), "seconds": dt,
                      "orders": int(n), "fills": fills, "volume": volume, "orders_list": out[:n].tolist()}))


if __name__ == "__main__":
    main()
