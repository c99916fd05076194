"""A backtest run cut into time buckets: the PnL, fees, round trips and markouts each bucket holds, so intervals can
resample time (caerus.research.verdict.bootstrap) and every statistic adds up to the run's own numbers.

Accounting, per instrument (the paper account's conventions, caerus.research.backtest.results): average cost; a round
trip (flat -> position -> flat) is booked in the bucket where it closes, a win when its PnL net of fees is > 0. PnL
is net of everything trading costs: fills at the touch (the spread is paid), the taker fee on every fill, and at the
end of the data an open position is closed at the side it would have to cross (the bid for a long, the ask for a
short) paying the fee again -- so no PnL is left in a position the run never had to unwind. Each bucket's PnL is the
change of that equity across it (marked at the mid inside the run).

Markouts at 100 ms, 1 s and 5 s: ``side * (mid(t_fill + h) - px) / px`` in bps against the same instrument's mid
(the fill model's clock), summed with their count per bucket of the fill.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from caerus.research.backtest.engine import RunOutput

MARKOUT_MS = (100.0, 1000.0, 5000.0)
PNL, NOTIONAL, FEES, ROUND_TRIPS, WINS = range(5)
MARK0 = 5  # markout j: its sum in column MARK0 + 2j, its count in MARK0 + 2j + 1
N_COLUMNS = MARK0 + 2 * len(MARKOUT_MS)


@dataclass(frozen=True)
class Buckets:
    """One rule over one timeline's test range."""

    orders: int
    fills: int
    round_trips: int
    pnl: float  # net, USD (the buckets' PnL column summed)
    table: np.ndarray  # (buckets, N_COLUMNS)

    @classmethod
    def empty(cls, n_buckets: int) -> Buckets:
        """A rule that placed no order (a model training declined): nothing earned, nothing paid."""
        return cls(0, 0, 0, 0.0, np.zeros((n_buckets, N_COLUMNS)))


def n_buckets(t0: int, t_end: int, bucket_ns: int) -> int:
    return max(1, math.ceil((t_end - t0) / bucket_ns))


def buckets(out: RunOutput, t0: int, t_end: int, fee_rate: float, bucket_ns: int,
            close: dict[int, tuple[float, float]]) -> Buckets:
    """``out``'s fills from ``t0`` to ``t_end`` in buckets of ``bucket_ns``; ``close[symbol]`` = (bid, ask) where an
    open position is closed at the end; ``fee_rate`` the taker fee as a fraction of notional."""
    o = out.orders
    nb = n_buckets(t0, t_end, bucket_ns)
    b = np.zeros((nb, N_COLUMNS))
    qty_all = np.asarray(o["fill_qty"], dtype=float)
    filled = qty_all > 0
    sym_all = np.asarray(o["symbol"], dtype=np.int64)[filled]
    side_all = np.asarray(o["side"], dtype=float)[filled]
    px_all = np.asarray(o["fill_px"], dtype=float)[filled]
    q_all = qty_all[filled]
    tf_all = np.asarray(o["t_match"], dtype=np.int64)[filled]
    edges = np.minimum(t0 + bucket_ns * np.arange(nb + 1), t_end)
    equity = np.zeros(nb + 1)
    rts_total = 0
    for sym in np.unique(sym_all).tolist():
        m = sym_all == sym
        side, px, qty, tf = side_all[m], px_all[m], q_all[m], tf_all[m]
        blk = np.clip((tf - t0) // bucket_ns, 0, nb - 1)
        fees = px * qty * fee_rate
        np.add.at(b[:, NOTIONAL], blk, px * qty)
        np.add.at(b[:, FEES], blk, fees)
        tm = out.target["symbol"] == sym
        t_book, mid = out.target["t"][tm], out.target["mid"][tm]
        for j, h in enumerate(MARKOUT_MS):
            th = tf + int(h * 1e6)
            ok = th <= (t_book[-1] if len(t_book) else -1)
            i = np.searchsorted(t_book, th[ok], side="right") - 1
            good = i >= 0
            mk = side[ok][good] * (mid[i[good]] - px[ok][good]) / px[ok][good] * 1e4
            np.add.at(b[:, MARK0 + 2 * j], blk[ok][good], mk)
            np.add.at(b[:, MARK0 + 2 * j + 1], blk[ok][good], 1.0)
        cash, position, rts = _walk(side, px, qty, fees, blk, b)
        rts_total += rts
        jf = np.searchsorted(tf, edges, side="right") - 1
        ce = np.where(jf >= 0, cash[np.maximum(jf, 0)], 0.0)
        pe = np.where(jf >= 0, position[np.maximum(jf, 0)], 0.0)
        im = np.searchsorted(t_book, edges, side="right") - 1
        me = np.where(im >= 0, mid[np.maximum(im, 0)] if len(mid) else 0.0, 0.0)
        eq = ce + np.where(pe != 0.0, pe * me, 0.0)
        last = float(pe[-1])
        if last != 0.0:  # close what is still open at the side it crosses, paying the fee
            bid, ask = close[sym]
            px_close = bid if last > 0 else ask
            eq[-1] = ce[-1] + last * px_close - abs(last) * px_close * fee_rate
        equity += eq
    b[:, PNL] = np.diff(equity)
    return Buckets(len(qty_all), int(filled.sum()), rts_total, float(equity[-1]), b)


def _walk(side: np.ndarray, px: np.ndarray, qty: np.ndarray, fees: np.ndarray, blk: np.ndarray,
          b: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Average-cost walk of one instrument's fills: cash and position after each, round trips into ``b``."""
    pos = avg = rt = 0.0
    rts = 0
    cash = np.zeros(len(px))
    position = np.zeros(len(px))
    c = 0.0
    for k, (s, p, q, f, bk) in enumerate(zip(side.tolist(), px.tolist(), qty.tolist(), fees.tolist(),
                                             blk.tolist(), strict=True)):
        new = pos + s * q
        if pos == 0.0 or (pos > 0) == (s > 0):
            avg = (avg * abs(pos) + p * q) / abs(new)
        else:
            rt += min(q, abs(pos)) * (p - avg) * (1.0 if pos > 0 else -1.0)
            if abs(new) < 1e-12:
                new = avg = 0.0
            elif (new > 0) != (pos > 0):
                avg = p
        rt -= f
        if new == 0.0 and pos != 0.0:
            rts += 1
            b[bk, ROUND_TRIPS] += 1.0
            b[bk, WINS] += 1.0 if rt > 0.0 else 0.0
            rt = 0.0
        pos = new
        c -= s * p * q + f
        cash[k] = c
        position[k] = pos
    return cash, position, rts


def statistics(w: np.ndarray, table: np.ndarray) -> dict[str, np.ndarray]:
    """Each statistic for every weight row of ``w`` (replicates x buckets): PnL, fees, turnover, hit rate and the
    markouts' means."""
    s = w @ table
    with np.errstate(invalid="ignore", divide="ignore"):
        out = {"pnl": s[:, PNL], "fees": s[:, FEES], "turnover": s[:, NOTIONAL],
               "hit_rate": s[:, WINS] / s[:, ROUND_TRIPS]}
        for j, h in enumerate(MARKOUT_MS):
            out[f"markout_{h:g}ms"] = s[:, MARK0 + 2 * j] / s[:, MARK0 + 2 * j + 1]
    return out
