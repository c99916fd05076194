"""A run's numbers: PnL (realised and marked), markouts, hit rate, turnover, drawdown, fills by reason, per
instrument and in total -- computed after the replay from its orders and the target venue's mids (numpy, off the
loop).

Conventions (the paper account's, caerus.execution.paper_account): realised PnL on average cost; marked = realised + the
open position at the last mid - fees; a fill's markout at horizon h is ``side * (mid(t_fill + h) - px) / px`` in
bps with ``mid(t)`` the mid of the newest tradeable target-venue book at or before t on the fill model's clock (a
fill whose t + h is past the data is not counted). Hit rate: round trips (flat -> position -> flat) whose PnL net
of fees is > 0, over round trips. Turnover: traded notional (USD). Drawdown: the largest fall of the equity curve
(marked PnL, sampled at every fill and on a regular grid) from its running peak.
"""

from __future__ import annotations

import math

import numpy as np

from caerus.research.backtest.engine import RunOutput
from caerus.research.backtest.fills import FILLED, NOT_FILLED, PARTIAL, FillRules
from caerus.strategy.latency_arb import GUARD_NAMES
from caerus.wire import OrderReason

MARKOUT_MS = (0.0, 10.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2000.0, 5000.0, 10000.0)
CURVE_POINTS = 400
_OUTCOMES = {FILLED: "filled", PARTIAL: "partial", NOT_FILLED: "not_filled"}


def _mid_at(t_book: np.ndarray, mid: np.ndarray, t: np.ndarray) -> np.ndarray:
    i = np.searchsorted(t_book, t, side="right") - 1
    out = np.where(i >= 0, mid[np.maximum(i, 0)], np.nan)
    return out


def _markouts(side: np.ndarray, px: np.ndarray, t_fill: np.ndarray, t_book: np.ndarray,
              mid: np.ndarray) -> dict[str, dict[str, object]]:
    """Fills' markouts (bps, in the fill's direction) against the target venue's mid at each horizon, with n."""
    markouts: dict[str, dict[str, object]] = {}
    for h in MARKOUT_MS:
        t_h = t_fill + int(h * 1e6)
        ok = t_h <= (t_book[-1] if len(t_book) else 0)
        mk = side[ok] * (_mid_at(t_book, mid, t_h[ok]) - px[ok]) / px[ok] * 1e4
        mk = mk[~np.isnan(mk)]
        markouts[f"{h:g}ms"] = {"n": len(mk), "mean_bps": float(mk.mean()) if len(mk) else None}
    return markouts


def _pool(parts: list[dict[str, dict[str, object]]]) -> dict[str, dict[str, object]]:
    """Markouts of several sets of fills as one (means weighted by n)."""
    out: dict[str, dict[str, object]] = {}
    for h in MARKOUT_MS:
        key = f"{h:g}ms"
        n = sum(int(p[key]["n"]) for p in parts)  # type: ignore[call-overload]
        s = sum((p[key]["mean_bps"] or 0.0) * p[key]["n"] for p in parts)  # type: ignore[operator]
        out[key] = {"n": n, "mean_bps": s / n if n else None}
    return out


def arm_metrics(out: RunOutput) -> dict[str, object] | None:
    """signal = "ab": per arm (naive, model) its share of the replayed time, orders, fills and fills' markouts, as
    the live session's report splits them. PnL is not split: a position one arm opened may be closed by the other.
    None without an A/B."""
    if out.ab is None:
        return None
    o = out.orders
    naive_ns, model_ns = out.ab.time_per_arm(out.t_last)
    span = naive_ns + model_ns
    arms: dict[str, object] = {"window_s": out.ab.window_ns / 1e9}
    for name, arm, ns in (("naive", 0, naive_ns), ("model", 1, model_ns)):
        m = o["arm"] == arm if len(o["arm"]) else np.zeros(0, dtype=bool)
        filled = m & (o["fill_qty"] > 0) if len(m) else m
        parts = []
        for sym in np.unique(out.target["symbol"]).tolist():
            f = filled & (o["symbol"] == sym) if len(filled) else filled
            tm = out.target["symbol"] == sym
            parts.append(_markouts(o["side"][f].astype(int), o["fill_px"][f].astype(float),
                                   o["t_match"][f].astype(np.int64), out.target["t"][tm], out.target["mid"][tm]))
        arms[name] = {"time_share": ns / span if span else None, "orders": int(m.sum()), "fills": int(filled.sum()),
                      "markouts": _pool(parts)}
    return arms


def instrument_metrics(out: RunOutput, sym: int, rules: FillRules, target_venue: int) -> dict[str, object]:
    """Metrics of one instrument (its orders, its target-venue mids)."""
    o = out.orders
    m = o["symbol"] == sym if len(o["symbol"]) else np.zeros(0, dtype=bool)
    tm = out.target["symbol"] == sym
    t_book, mid = out.target["t"][tm], out.target["mid"][tm]
    side, reason, outcome = o["side"][m].astype(int), o["reason"][m].astype(int), o["outcome"][m].astype(int)
    px, qty = o["fill_px"][m].astype(float), o["fill_qty"][m].astype(float)
    t_fill = o["t_match"][m].astype(np.int64)
    filled = qty > 0
    fee_rate = rules.fee_bps_of(target_venue) * 1e-4
    fees = px * qty * fee_rate
    # realised PnL on average cost, round trips (fills are few: a Python pass)
    pos = avg = realised = 0.0
    rt_pnl = rt_fees = 0.0
    round_trips = wins = 0
    cash = np.zeros(int(filled.sum()))
    position = np.zeros_like(cash)
    cash_acc = 0.0
    for k, (s, p, q, f) in enumerate(zip(side[filled].tolist(), px[filled].tolist(), qty[filled].tolist(),
                                         fees[filled].tolist(), strict=True)):
        if pos == 0.0 or (pos > 0) == (s > 0):
            new = pos + s * q
            avg = (avg * abs(pos) + p * q) / abs(new)
        else:
            closing = min(q, abs(pos))
            gain = closing * (p - avg) * (1.0 if pos > 0 else -1.0)
            realised += gain
            rt_pnl += gain
            new = pos + s * q
            if abs(new) < 1e-12:
                new = 0.0
                avg = 0.0
            elif (new > 0) != (pos > 0):
                avg = p
        rt_fees += f
        if new == 0.0 and pos != 0.0:
            round_trips += 1
            wins += (rt_pnl - rt_fees) > 0.0
            rt_pnl = rt_fees = 0.0
        pos = new
        cash_acc -= s * p * q + f
        cash[k] = cash_acc
        position[k] = pos
    last_mid = float(mid[-1]) if len(mid) else math.nan
    unrealised = pos * (last_mid - avg) if pos and last_mid == last_mid else 0.0
    total_fees = float(fees.sum())
    marked = realised + unrealised - total_fees
    # equity curve: cash + position * mid at fills and on a grid over the run
    grid = np.linspace(out.t_first, out.t_last, CURVE_POINTS).astype(np.int64) if out.t_last > out.t_first \
        else np.array([out.t_first], dtype=np.int64)
    tf = t_fill[filled]
    t_curve = np.union1d(grid, tf)
    j = np.searchsorted(tf, t_curve, side="right") - 1
    c = np.where(j >= 0, cash[np.maximum(j, 0)] if len(cash) else 0.0, 0.0)
    p_ = np.where(j >= 0, position[np.maximum(j, 0)] if len(position) else 0.0, 0.0)
    mids = _mid_at(t_book, mid, t_curve)
    equity = c + np.where(p_ != 0.0, p_ * np.nan_to_num(mids), 0.0)
    drawdown = float((np.maximum.accumulate(equity) - equity).max()) if len(equity) else 0.0
    markouts = _markouts(side[filled], px[filled], tf, t_book, mid)
    by_reason: dict[str, dict[str, int]] = {}
    for r in np.unique(reason).tolist():
        rm = reason == r
        by_reason[OrderReason(r).name.lower()] = {
            "orders": int(rm.sum()), **{name: int((outcome[rm] == code).sum()) for code, name in _OUTCOMES.items()}}
    n_orders = int(m.sum())
    return {
        "orders": n_orders,
        "fills": int(filled.sum()),
        "fill_rate": float(filled.sum() / n_orders) if n_orders else None,
        "outcomes": {name: int((outcome == code).sum()) for code, name in _OUTCOMES.items()},
        "fills_by_reason": by_reason,
        "pnl": {"realised": realised, "unrealised": unrealised, "fees": total_fees, "marked": marked},
        "position": pos,
        "round_trips": round_trips,
        "hit_rate": wins / round_trips if round_trips else None,
        "turnover": {"qty": float(qty.sum()), "notional": float((px * qty).sum())},
        "max_drawdown": drawdown,
        "markouts": markouts,
        "decisions": out.decisions[sym],
        "guards": {n: g for n, g in zip(GUARD_NAMES, out.guards[sym], strict=True) if g},
        "books": out.books[sym],
        "equity_curve": {"t": t_curve.tolist(), "pnl": equity.tolist()},
    }


def summarise(out: RunOutput, rules: FillRules, target_venue: int, names: list[str]) -> dict[str, object]:
    """Per instrument (by name) and the total."""
    per = {names[k]: instrument_metrics(out, k, rules, target_venue) for k in range(len(out.decisions))}
    total: dict[str, object] = {}
    for key in ("orders", "fills", "round_trips", "decisions", "books"):
        total[key] = sum(int(v[key]) for v in per.values())  # type: ignore[call-overload]
    total["fill_rate"] = total["fills"] / total["orders"] if total["orders"] else None  # type: ignore[operator]
    total["pnl"] = {k: sum(v["pnl"][k] for v in per.values()) for k in ("realised", "unrealised", "fees", "marked")}  # type: ignore[index]
    total["turnover"] = {k: sum(v["turnover"][k] for v in per.values()) for k in ("qty", "notional")}  # type: ignore[index]
    wins = sum((v["hit_rate"] or 0.0) * v["round_trips"] for v in per.values())  # type: ignore[operator]
    total["hit_rate"] = wins / total["round_trips"] if total["round_trips"] else None  # type: ignore[operator]
    total["outcomes"] = {n: sum(v["outcomes"][n] for v in per.values()) for n in _OUTCOMES.values()}  # type: ignore[index]
    reasons: dict[str, dict[str, int]] = {}
    for v in per.values():
        for r, counts in v["fills_by_reason"].items():  # type: ignore[attr-defined]
            acc = reasons.setdefault(r, dict.fromkeys(counts, 0))
            for c, n in counts.items():
                acc[c] += n
    total["fills_by_reason"] = reasons
    total["markouts"] = _pool([v["markouts"] for v in per.values()])  # type: ignore[misc]
    # total equity: each instrument's curve on the union of their times (step interpolation)
    ts = np.unique(np.concatenate([np.asarray(v["equity_curve"]["t"], dtype=np.int64) for v in per.values()]))  # type: ignore[index]
    eq = np.zeros(len(ts))
    for v in per.values():
        t_i = np.asarray(v["equity_curve"]["t"], dtype=np.int64)  # type: ignore[index]
        e_i = np.asarray(v["equity_curve"]["pnl"], dtype=np.float64)  # type: ignore[index]
        j = np.searchsorted(t_i, ts, side="right") - 1
        eq += np.where(j >= 0, e_i[np.maximum(j, 0)], 0.0)
    total["max_drawdown"] = float((np.maximum.accumulate(eq) - eq).max()) if len(eq) else 0.0
    total["equity_curve"] = {"t": ts.tolist(), "pnl": eq.tolist()}
    doc: dict[str, object] = {"total": total, "instruments": per}
    arms = arm_metrics(out)
    if arms is not None:
        doc["arms"] = arms
    return doc


def orders_table(out: RunOutput) -> list[dict[str, object]]:
    """Every order as a JSON-able row (the report's fills table, the consistency test)."""
    cols = out.orders
    n = len(cols["side"])
    return [{c: (cols[c][i].item() if hasattr(cols[c][i], "item") else cols[c][i]) for c in cols} for i in range(n)]
