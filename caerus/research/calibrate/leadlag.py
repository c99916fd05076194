"""Which of two co-recorded markets leads, and by how much, with an interval: the Hayashi-Yoshida lead-lag of their
log mids, resampled by blocks of time.

The Hayashi & Yoshida (2005) covariance needs no common grid, and the lag that maximises it estimates the lead-lag
(Hoffmann, Rosenbaum & Yoshida 2013); caerus.research.calibrate.estimators computes it. Covariance adds over disjoint
stretches of time, so the span is cut into ``window_s`` windows, each window's covariance curve is computed on its own
books, and the estimate is the peak of their sum. The interval resamples windows with replacement (a block bootstrap
over time: a window is much longer than any lag searched, so the pairs a cut separates are few) and takes the
percentiles of the resampled peaks, widened by half the lag grid's step (the peak's resolution: with little noise
the resampled peaks agree closer than the grid can place them). Fewer than ``min_windows`` windows: no interval
(NaN), said so.

A positive lag: the follower trails the leader. Either clock can be used: the venues' event times (``t_exchange``),
or receive times (``t_recv``: one recorder's clock, so the lead includes each market's network path; a store read
through caerus.research.backtest.sources has them on the venues' clock).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from caerus.research.backtest.events import BookEvents
from caerus.research.calibrate.estimators import hayashi_yoshida, peak_lag
from caerus.wire import TRADEABLE, TRADEABLE_MASK

#: lags searched: +-2 s in 5 ms steps (longer than any lag between Binance's products, shorter than a window)
LAGS_NS = np.arange(-2_000_000_000, 2_000_000_001, 5_000_000)
WINDOW_S = 30.0
MIN_WINDOWS = 8


@dataclass(frozen=True)
class LeadLag:
    lag_ms: float  # peak of the summed covariance; > 0: the follower trails
    lo_ms: float  # 95 % block-bootstrap interval (NaN: too few windows)
    hi_ms: float
    corr_peak: float  # Hayashi-Yoshida correlation at the peak and at lag 0
    corr_zero: float
    n_leader: int
    n_follower: int
    windows: int
    clock: str

    def describe(self) -> dict[str, object]:
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in self.__dict__.items()}

    def text(self) -> str:
        ci = (f"no interval: fewer than {MIN_WINDOWS} windows" if math.isnan(self.lo_ms)
              else f"95% CI [{self.lo_ms:+.1f}, {self.hi_ms:+.1f}] ms")
        return (f"lag {self.lag_ms:+.1f} ms ({ci}; {self.windows} windows of {WINDOW_S:g} s), HY correlation "
                f"{self.corr_peak:.3f} at the peak vs {self.corr_zero:.3f} at 0, on {self.clock} times; n = "
                f"{self.n_leader} leader / {self.n_follower} follower books")


def _series(events: BookEvents, venue: int, symbol: int, clock: str) -> tuple[np.ndarray, np.ndarray]:
    sel = np.flatnonzero((events.venue == venue) & (events.symbol == symbol)
                         & ((events.flags & TRADEABLE_MASK) == TRADEABLE))
    t = (events.t_exchange if clock == "exchange" else events.t_recv)[sel].astype(np.int64)
    order = np.argsort(t, kind="stable")
    sel, t = sel[order], t[order]
    return t, np.log((events.bid_px[sel] + events.ask_px[sel]) * 0.5)


def lead_lag(events: BookEvents, leader: int, follower: int, symbol: int = 0, *, clock: str = "exchange",
             window_s: float = WINDOW_S, n_boot: int = 1000, seed: int = 0,
             min_windows: int = MIN_WINDOWS) -> LeadLag:
    """The follower's lag behind the leader, with its block-bootstrap interval (see the module)."""
    if clock not in ("exchange", "recv"):
        raise ValueError(f"lead-lag clock must be exchange or recv, got {clock!r}")
    ta, xa = _series(events, leader, symbol, clock)
    tb, xb = _series(events, follower, symbol, clock)
    if len(ta) < 10 or len(tb) < 10:
        raise ValueError(f"lead-lag needs books of both markets: {len(ta)} leader, {len(tb)} follower")
    w_ns = int(window_s * 1e9)
    t0, t1 = max(ta[0], tb[0]), min(ta[-1], tb[-1])
    edges = np.arange(t0, t1 + 1, w_ns, dtype=np.int64)
    curves = []
    for a, b in itertools.pairwise(edges.tolist()):
        ia = slice(*np.searchsorted(ta, [a, b]))
        ib = slice(*np.searchsorted(tb, [a, b]))
        if ia.stop - ia.start < 3 or ib.stop - ib.start < 3:
            continue
        cov, _ = hayashi_yoshida(ta[ia], xa[ia], tb[ib], xb[ib], LAGS_NS)
        curves.append(cov)
    if not curves:
        raise ValueError(f"lead-lag: no {window_s:g} s window holds books of both markets")
    c = np.asarray(curves)
    total = c.sum(axis=0)
    norm = float(np.sqrt(np.dot(np.diff(xa), np.diff(xa)) * np.dot(np.diff(xb), np.diff(xb))))
    lag = peak_lag(LAGS_NS, total)
    i0 = int(np.searchsorted(LAGS_NS, 0))
    lo = hi = float("nan")
    if len(c) >= min_windows:
        rng = np.random.default_rng(seed)
        draws = rng.integers(0, len(c), size=(n_boot, len(c)))
        peaks = [peak_lag(LAGS_NS, c[d].sum(axis=0)) for d in draws]
        lo, hi = (float(v) / 1e6 for v in np.quantile(peaks, [0.025, 0.975]))
        half_step = float(LAGS_NS[1] - LAGS_NS[0]) / 2e6  # the peak's own resolution on the grid
        lo, hi = lo - half_step, hi + half_step
    i_peak = int(np.argmin(np.abs(LAGS_NS - lag)))
    return LeadLag(lag / 1e6, lo, hi, float(total[i_peak] / norm) if norm else float("nan"),
                   float(total[i0] / norm) if norm else float("nan"), len(ta), len(tb), len(c), clock)
