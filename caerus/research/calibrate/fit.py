"""From a DataFrame of captured books (caerus.data.books' columns) to the market model's estimates.

One instrument at a time: Binance (the leader) and Hyperliquid (the follower) rows of one symbol, each turned into
a log-mid series on one clock (``t_exchange`` by default: the emulator schedules on, and stamps, exchange time).
Every estimate carries its standard error and sample size; ``Calibration.cross_checks`` keeps the lead-lag curves'
peaks (Hayashi-Yoshida, cross-correlation) beside the per-move lag law so a reader can see they agree.

What each estimate comes from (docs/research.md, "Calibration"):

* lag median and dispersion: per-move matching (estimators.match_moves) on Binance's persistent jumps; the
  Hayashi-Yoshida peak is the median's fallback when too few moves were matched.
* volatility: realised variance of Binance's mid on a ``vol_step`` grid with jump intervals (and returns beyond a
  jump-robust threshold) left out and the noise's ``2 var(e)`` per return taken off.
* jump rate and size range: the detected jumps (count per minute; uniform bounds of their sizes in bp).
* noise share: Roll's first-order autocorrelation of Binance tick returns.
* block cadence and jitter: distinct Hyperliquid update times.
* catch-up fraction: slope of Hyperliquid's move over one block after the lag on Binance's move.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from caerus.research.calibrate import estimators as est
from caerus.wire import BookFlags

MS = 1_000_000
LEADER, FOLLOWER = "binance", "hyperliquid"
REQUIRED_COLUMNS = ("venue", "symbol", "t_exchange", "t_recv", "bid_px", "ask_px")
CLOCKS = ("t_exchange", "t_recv")


class CalibrationError(ValueError):
    """The books cannot be calibrated (missing columns or venues, too few rows or moves); the text says which."""


@dataclass(frozen=True)
class FitSettings:
    """How the estimators are run. Defaults suit BTC on the real venues and the emulator alike."""

    symbol: str | None = None  # None: the frame must hold one symbol
    clock: str = "t_exchange"
    lag_max_ms: float = 2000.0  # lead-lag curves and move matching look this far
    lag_step_ms: float = 5.0
    cc_step_ms: float = 50.0  # previous-tick grid of the cross-correlation
    vol_step_s: float = 1.0  # realised-variance grid: coarse enough for tick noise to be a small correction
    jump_threshold_bps: float | None = None  # None: 8 robust sd of 100 ms returns, at least 3 bp
    move_share: float = 0.5  # a move is matched when Hyperliquid has gone this share of it
    jump_dead_ms: float = 50.0  # tick moves closer than this after a jump are the same jump finishing
    isolation_ms: float = 1000.0  # moves matched for the lag have no other jump this long before them
    min_moves: int = 20  # fewer matched moves: the HY peak gives the median and the dispersion is unknown
    n_boot: int = 400
    seed: int = 0

    def validate(self) -> None:
        if self.clock not in CLOCKS:
            raise CalibrationError(f"clock must be one of {', '.join(CLOCKS)}, got {self.clock!r}")
        for name in ("lag_max_ms", "lag_step_ms", "cc_step_ms", "vol_step_s"):
            if not getattr(self, name) > 0:
                raise CalibrationError(f"{name} must be > 0, got {getattr(self, name)!r}")
        if self.jump_threshold_bps is not None and not self.jump_threshold_bps > 0:
            raise CalibrationError(f"jump threshold must be > 0 bp, got {self.jump_threshold_bps!r}")
        if not 0 < self.move_share <= 1:
            raise CalibrationError(f"move share must be in (0, 1], got {self.move_share!r}")


@dataclass(frozen=True)
class Series:
    """One venue's log mid on the chosen clock (sorted, int64 ns)."""

    t: est.IntArray
    x: est.FloatArray


@dataclass(frozen=True)
class Calibration:
    """Estimates (name -> Estimate, in the units their names say) and what they were computed from."""

    symbol: str
    clock: str
    start_ns: int
    end_ns: int
    rows: dict[str, int]  # venue -> rows used
    estimates: dict[str, est.Estimate]
    cross_checks: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def minutes(self) -> float:
        return (self.end_ns - self.start_ns) / 60e9


def _pick_symbol(books: pd.DataFrame, symbol: str | None) -> tuple[str, pd.DataFrame]:
    names = sorted({str(s) for s in books["symbol"].unique()})
    if symbol is None:
        if len(names) != 1:
            raise CalibrationError(f"the books hold {len(names)} symbols ({', '.join(names[:10])}): choose one")
        symbol = names[0]
    rows = books[books["symbol"].astype(str) == symbol]
    if rows.empty:
        raise CalibrationError(f"no books for symbol {symbol!r} (the source has {', '.join(names[:10])})")
    return symbol, rows


def venue_series(books: pd.DataFrame, venue: str, clock: str) -> Series:
    """Log mid of ``venue``'s rows on ``clock``: rows the feed did not mark VALID (or marked REJECTED or STALE,
    when a ``flags`` column is there) and rows without a two-sided positive book are dropped; rows with the same
    time keep the last (several updates in one millisecond or block end at the last state, and a book repeated
    by a second connection of the pool or a rotation collapses into one)."""
    rows = books[books["venue"].astype(str) == venue]
    if "flags" in rows.columns:
        flags = rows["flags"].to_numpy(dtype=np.int64)
        bad = int(BookFlags.REJECTED | BookFlags.STALE)
        rows = rows[((flags & int(BookFlags.VALID)) != 0) & ((flags & bad) == 0)]
    bid = rows["bid_px"].to_numpy(dtype=np.float64)
    ask = rows["ask_px"].to_numpy(dtype=np.float64)
    t = rows[clock].to_numpy(dtype=np.int64)
    ok = np.isfinite(bid) & np.isfinite(ask) & (bid > 0) & (ask >= bid)
    t, mid = t[ok], 0.5 * (bid[ok] + ask[ok])
    order = np.argsort(t, kind="stable")
    t, mid = t[order], mid[order]
    last = np.append(t[1:] != t[:-1], True)[: t.size]  # keep the last row of each time
    return Series(t[last], np.log(mid[last]))


def _clip(s: Series, lo: int, hi: int) -> Series:
    keep = (s.t >= lo) & (s.t <= hi)
    return Series(s.t[keep], s.x[keep])


def calibrate(books: pd.DataFrame, settings: FitSettings | None = None) -> Calibration:
    """Every estimate of the market model from ``books`` (see the module docstring for what comes from what)."""
    cfg = settings or FitSettings()
    cfg.validate()
    missing = [c for c in REQUIRED_COLUMNS if c not in books.columns]
    if missing:
        raise CalibrationError(f"books lack column(s) {', '.join(missing)} (expected caerus.data.books' columns)")
    if "session" in books.columns and books["session"].nunique() > 1:
        names = sorted(str(v) for v in books["session"].unique())
        raise CalibrationError(f"the books come from {len(names)} sessions ({', '.join(names[:5])}): choose one")
    symbol, rows = _pick_symbol(books, cfg.symbol)
    lead, follow = (venue_series(rows, v, cfg.clock) for v in (LEADER, FOLLOWER))
    for venue, s in ((LEADER, lead), (FOLLOWER, follow)):
        if s.t.size < 50:
            raise CalibrationError(f"{symbol}: {s.t.size} usable {venue} books, need at least 50")
    start, end = int(max(lead.t[0], follow.t[0])), int(min(lead.t[-1], follow.t[-1]))
    if end - start < 60 * 1_000_000_000:
        raise CalibrationError(f"{symbol}: the venues overlap for {(end - start) / 1e9:.1f} s, need at least 60 s")
    lead, follow = _clip(lead, start, end), _clip(follow, start, end)
    notes: list[str] = []
    out: dict[str, est.Estimate] = {}
    checks: dict[str, float] = {}
    minutes = (end - start) / 60e9

    # Hyperliquid's block clock: distinct update times
    cadence = est.block_cadence(follow.t)
    out["block_ms"] = _scaled(cadence.median_gap_ns, 1 / MS)
    out["block_jitter_ms"] = est.Estimate(cadence.jitter_ns / MS, float("nan"), cadence.median_gap_ns.n)

    # Binance's noise (Roll) on tick returns
    noise = est.roll_noise(np.diff(lead.x))
    out["noise_share"] = noise.share
    checks["noise_sd_bps"] = noise.noise_sd * 1e4

    # jumps: persistent large tick moves
    threshold = _jump_threshold(lead, cfg)
    checks["jump_threshold_bps"] = threshold * 1e4
    jumps = est.detect_jumps(lead.t, lead.x, threshold, dead_ns=int(cfg.jump_dead_ms * MS))
    n_jumps = int(jumps.index.size)
    out["jumps_per_min"] = est.Estimate(n_jumps / minutes, np.sqrt(max(n_jumps, 1)) / minutes, n_jumps)  # Poisson
    if n_jumps >= 2:
        lo, hi = est.uniform_bounds(np.abs(jumps.size) * 1e4)
        out["jump_bps_min"], out["jump_bps_max"] = lo, hi
    else:
        notes.append(f"{n_jumps} jump(s) above {threshold * 1e4:.1f} bp: jump sizes not estimated")

    # diffusion volatility: jump intervals out, noise taken off
    out["annual_vol"] = est.realised_vol(lead.t, lead.x, int(cfg.vol_step_s * 1e9), jumps.t, noise.noise_sd**2)

    # lead-lag curves (cross-checks and the median's fallback)
    lags = np.arange(0, int(cfg.lag_max_ms * MS) + 1, int(cfg.lag_step_ms * MS), dtype=np.int64)
    _, hy = est.hayashi_yoshida(lead.t, lead.x, follow.t, follow.x, lags)
    checks["hy_peak_ms"] = est.peak_lag(lags, hy) / MS
    checks["hy_peak_corr"] = float(np.nanmax(hy))
    cc = est.cross_correlation(lead.t, lead.x, follow.t, follow.x, lags, int(cfg.cc_step_ms * MS))
    if bool(np.any(np.isfinite(cc))):
        checks["cc_peak_ms"] = est.peak_lag(lags, cc) / MS

    # the lag law from the moves Hyperliquid answered
    alone = est.isolated(jumps, int(cfg.isolation_ms * MS))
    matched = est.match_moves(lead.t, lead.x, alone, follow.t, follow.x, cfg.move_share, int(cfg.lag_max_ms * MS))
    n_matched = int(matched.matched.sum())
    checks["moves_matched_share"] = n_matched / alone.index.size if alone.index.size else float("nan")
    if n_matched >= max(cfg.min_moves, 3):
        law = est.censored_location_scale(matched.lo, matched.hi, cfg.n_boot, cfg.seed)
        out["lag_median_ms"] = _scaled(law.median, 1 / MS)
        out["lag_sd_ms"] = _scaled(law.sd, 1 / MS)
    else:
        notes.append(f"{n_matched} matched moves (< {cfg.min_moves}): lag median from the HY peak, "
                     "its dispersion not estimated")
        out["lag_median_ms"] = est.Estimate(checks["hy_peak_ms"], cfg.lag_step_ms / np.sqrt(12), int(lead.t.size))

    # catch-up: how much of a move Hyperliquid shows one block after the lag
    if alone.index.size >= 2:
        window = int((out["lag_median_ms"].value + out["block_ms"].value) * MS)
        out["catch_up"] = est.catch_up(alone, follow.t, follow.x, window)
    return Calibration(symbol, cfg.clock, start, end, {LEADER: int(lead.t.size), FOLLOWER: int(follow.t.size)},
                       out, checks, notes)


def _scaled(e: est.Estimate, k: float) -> est.Estimate:
    return est.Estimate(e.value * k, e.se * k, e.n)


def _jump_threshold(lead: Series, cfg: FitSettings) -> float:
    if cfg.jump_threshold_bps is not None:
        return cfg.jump_threshold_bps / 1e4
    grid = np.arange(lead.t[0], lead.t[-1] + 1, 100 * MS, dtype=np.int64)
    r = np.diff(est.previous_tick(lead.t, lead.x, grid))
    # bipower-style scale (|r_i||r_{i-1}|) ignores the jumps it is meant to find; MAD would be 0 on a quiet tick
    scale = float(np.sqrt(np.pi / 2 * np.mean(np.abs(r[1:]) * np.abs(r[:-1])))) if r.size > 2 else 0.0
    return max(8.0 * scale, 3e-4)
