"""hftbacktest's side of benchmarks/backtest_speed: run in the peers' venv (.venv-peers, hftbacktest 2.4.4 +
numba), never imported by caerus.

Reads the books (``books.npz``: venue, t_exchange, t_recv, bid/ask px/qty) the main script wrote, converts them
to hftbacktest's event format (one DEPTH_BBO event per side per book, exchange and local timestamps, asset 0 =
Binance, asset 1 = Hyperliquid), and runs the same naive latency-arb rule written for it in numba: the basis
(Binance mid - Hyperliquid mid) / Hyperliquid mid in bps against its time EWMA; an entry IOC on Hyperliquid at the
touch +- slippage when a Binance book moves the signal past entry_bps, exits on exit/reversal/max hold, a cooldown,
one order at a time (held until the constant round trip has passed). Prints one JSON line: books, seconds, fills.
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
    DEPTH_BBO_EVENT,
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
    m = venue == code
    n = int(m.sum())
    ev = np.zeros(2 * n, dtype=event_dtype)
    for k, (flag, px, qty) in enumerate(((BUY_EVENT, "bid_px", "bid_qty"), (SELL_EVENT, "ask_px", "ask_qty"))):
        ev["ev"][k::2] = EXCH_EVENT | LOCAL_EVENT | DEPTH_BBO_EVENT | flag
        ev["exch_ts"][k::2] = d["t_exchange"][m]
        ev["local_ts"][k::2] = d["t_recv"][m]
        ev["px"][k::2] = d[px][m]
        ev["qty"][k::2] = d[qty][m]
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
        if now < busy_until:
            continue
        pos = hbt.position(1)
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
            n_out += 1
    return n_out


def main() -> None:
    d = dict(np.load(sys.argv[1]))
    p = json.loads(sys.argv[2])
    t0 = int(min(d["t_exchange"].min(), d["t_recv"].min())) - 1_000_000  # time from just before the first book
    d["t_exchange"] = d["t_exchange"] - t0
    d["t_recv"] = d["t_recv"] - t0
    assets = []
    for code, tick, lot in ((1, 0.1, 0.001), (2, 1.0, 0.00001)):
        a = (BacktestAsset().data(to_events(d["venue"], code, d)).linear_asset(1.0)
             .constant_order_latency(p["order_ns"], p["order_ns"]).risk_adverse_queue_model()
             .no_partial_fill_exchange().trading_value_fee_model(0.00015, 0.00045).tick_size(tick).lot_size(lot)
             .last_trades_capacity(0))
        assets.append(a)
    out = np.zeros((100_000, 3))
    args = (p["entry_bps"], p["exit_bps"], p["reversal_bps"], int(p["max_hold_ms"] * 1e6), int(p["cooldown_ms"] * 1e6),
            math.log(2.0) / (p["ewma_half_life_s"] * 1e9), int(p["warmup_ms"] * 1e6), p["slippage_bps"] * 1e-4,
            p["order_qty"], 2 * p["order_ns"] + 1)
    # compile on a short prefix first (numba's compile time is not the backtest's speed)
    warm = np.load(sys.argv[1])
    small = {k: warm[k][:2000] for k in warm.files}
    hw = HashMapMarketDepthBacktest([
        BacktestAsset().data(to_events(small["venue"], c, small)).linear_asset(1.0).constant_order_latency(1, 1)
        .risk_adverse_queue_model().no_partial_fill_exchange().trading_value_fee_model(0.0, 0.0).tick_size(t)
        .lot_size(lt).last_trades_capacity(0) for c, t, lt in ((1, 0.1, 0.001), (2, 1.0, 0.00001))])
    rule(hw, *args, np.zeros((10, 3)))
    hw.close()
    t0 = time.perf_counter()
    hbt = HashMapMarketDepthBacktest(assets)
    n = rule(hbt, *args, out)
    sv = hbt.state_values(1)
    fills = int(sv.num_trades)
    hbt.close()
    dt = time.perf_counter() - t0
    print(json.dumps({"books": len(d["venue"]), "seconds": dt, "orders": int(n), "fills": fills,
                      "orders_list": out[:n].tolist()}))


if __name__ == "__main__":
    main()
