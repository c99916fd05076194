"""From a DataFrame of captured books (caerus.data.books' columns) to the market model's estimates.

One instrument at a time: Binance (the leader) and Hyperliquid (the follower) rows of one symbol, each turned into
a log-mid series on one clock (``t_exchange`` by default: the emulator schedules on, and stamps, exchange time).
Every estimate carries its standard error and sample size; ``Calibration.cross_checks`` keeps the lead-lag curves'
peaks (Hayashi-Yoshida, cross-correlation) beside the per-move lag law so a reader can see they agree, except on a
fading market (``hl_fade`` estimated above ``FADE_HY_MAX``), where the mid's curves peak at 0 and measure the fade
(they are then not computed at all). A setting the books do not identify is left out of the estimates and named
in ``Calibration.unidentified`` with the reason; market_toml refuses to write a market without it unless told to
carry the preset's value over.

What each estimate comes from (docs/research.md, "Calibration"):

* lag median and dispersion: caerus.research.calibrate.lag_law (each clear jump's largest answer on Hyperliquid's
  unexposed side, a censored lognormal with false answers, bootstrap intervals), or not identified (too few answered
  moves, no peak, a boundary): no fallback (the Hayashi-Yoshida peak reads ~0 on a fading market).
* volatility: realised variance of Binance's mid on a ``vol_step`` grid with jump intervals (and returns beyond a
  jump-robust threshold) left out and the noise's ``2 var(e)`` per return taken off.
* jump rate and size range: the detected jumps (count per minute; uniform bounds of their sizes in bp).
* noise share: Roll's first-order autocorrelation of Binance tick returns.
* flicker share and lifetime: caerus.research.calibrate.moves (direct pairs, near-miss placebo, replacement).
* block cadence and jitter: distinct Hyperliquid update times.
* catch-up fraction: slope of Hyperliquid's move over one block after the lag on Binance's move.

:func:`calibrate_leader` (``caerus calibrate --binance-only``) reads Binance alone, for a capture without a
co-recorded Hyperliquid: the leader's estimates above and the quote arrivals on the receive stamps
(caerus.research.calibrate.arrivals); the Hyperliquid settings are left to the preset.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from caerus.research.calibrate import estimators as est
from caerus.research.calibrate import follower_fit as ff
from caerus.research.calibrate import lag_law
from caerus.research.calibrate import moves as mv
from caerus.research.calibrate import regimes as rg
from caerus.wire import BookFlags

MS = 1_000_000
LEADER, FOLLOWER = "binance", "hyperliquid"
REQUIRED_COLUMNS = ("venue", "symbol", "t_exchange", "t_recv", "bid_px", "ask_px")
CLOCKS = ("t_exchange", "t_recv")
#: above this fade (two SE clear), the mid's lead-lag curves measure the fade, not the lag
FADE_HY_MAX = 0.05


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
    isolation_ms: float = 2500.0  # moves matched for the lag have no other jump this long before them
    min_moves: int = 20  # fewer answered moves: the lag law is not identified (calibrate refuses)
    flicker_window_ms: float = 3000.0  # a jump-sized move that reverts within this is a flicker
    regime_window_s: float = 15.0  # regimes: windows of this length, each labelled calm or volatile
    regime_step_ms: float = 250.0  # grid of the windows' realised variance (and the calm volatility)
    min_slow_basis: float = 0.05  # the basis' slow part must hold this share of its variance at 10 s
    own_step_bps: float = 1.0  # Hyperliquid's own moves: steps of at least this per block ...
    own_size_bps: float = 4.0  # ... adding up to at least this
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
    #: estimate name -> why the books do not identify it (left out of ``estimates``; nothing is put in its place)
    unidentified: dict[str, str] = field(default_factory=dict)

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
    t, bid, ask = _rows(books, venue, clock)
    return Series(t, np.log(0.5 * (bid + ask)))


def _rows(books: pd.DataFrame, venue: str, clock: str,
          keep_same_time: bool = False) -> tuple[est.IntArray, est.FloatArray, est.FloatArray]:
    rows = books[books["venue"].astype(str) == venue]
    if "flags" in rows.columns:
        flags = rows["flags"].to_numpy(dtype=np.int64)
        bad = int(BookFlags.REJECTED | BookFlags.STALE)
        rows = rows[((flags & int(BookFlags.VALID)) != 0) & ((flags & bad) == 0)]
    bid = rows["bid_px"].to_numpy(dtype=np.float64)
    ask = rows["ask_px"].to_numpy(dtype=np.float64)
    t = rows[clock].to_numpy(dtype=np.int64)
    ok = np.isfinite(bid) & np.isfinite(ask) & (bid > 0) & (ask >= bid)
    t, bid, ask = t[ok], bid[ok], ask[ok]
    order = np.argsort(t, kind="stable")
    t, bid, ask = t[order], bid[order], ask[order]
    if keep_same_time:  # every update (the arrival process counts them all)
        return t, bid, ask
    last = np.append(t[1:] != t[:-1], True)[: t.size]  # keep the last row of each time
    return t[last], bid[last], ask[last]


def touch_series(books: pd.DataFrame, venue: str, clock: str) -> ff.Touch:
    """Log bid and ask of ``venue``'s rows, the same rows as :func:`venue_series`."""
    t, bid, ask = _rows(books, venue, clock)
    return ff.Touch(t, np.log(bid), np.log(ask))


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
    touch = touch_series(rows, FOLLOWER, cfg.clock)
    for venue, s in ((LEADER, lead), (FOLLOWER, follow)):
        if s.t.size < 50:
            raise CalibrationError(f"{symbol}: {s.t.size} usable {venue} books, need at least 50")
    start, end = int(max(lead.t[0], follow.t[0])), int(min(lead.t[-1], follow.t[-1]))
    if end - start < 60 * 1_000_000_000:
        raise CalibrationError(f"{symbol}: the venues overlap for {(end - start) / 1e9:.1f} s, need at least 60 s")
    lead, follow = _clip(lead, start, end), _clip(follow, start, end)
    keep = (touch.t >= start) & (touch.t <= end)
    touch = ff.Touch(touch.t[keep], touch.bid[keep], touch.ask[keep])
    notes: list[str] = []
    out: dict[str, est.Estimate] = {}
    checks: dict[str, float] = {}
    minutes = (end - start) / 60e9

    # Hyperliquid's block clock: distinct update times
    cadence = est.block_cadence(follow.t)
    out["block_ms"] = _scaled(cadence.median_gap_ns, 1 / MS)
    out["block_jitter_ms"] = est.Estimate(cadence.jitter_ns / MS, float("nan"), cadence.median_gap_ns.n)

    lf = _leader(lead, cfg)
    out.update(lf.estimates)
    checks.update(lf.checks)
    notes.extend(lf.notes)
    jumps, stats, regimes = lf.jumps, lf.stats, lf.regimes

    # the moves Hyperliquid answered, read on its unexposed side (catch-up and fading from these); the threshold a
    # move must cross is half the catch-up found on a first pass (a fixed half would miss every move below it)
    block_ns = int(out["block_ms"].value * MS)
    alone = est.isolated(jumps, int(cfg.isolation_ms * MS))
    share = cfg.move_share
    matched = ff.match_unexposed(lead.t, lead.x, alone, touch, share, int(cfg.lag_max_ms * MS))
    if int(matched.matched.sum()) >= 3:
        first = ff.early_response(alone, matched, touch, block_ns)
        if np.isfinite(first.value):
            share = float(np.clip(first.value / 2.0, 0.15, 0.8))
            matched = ff.match_unexposed(lead.t, lead.x, alone, touch, share, int(cfg.lag_max_ms * MS))
    checks["match_share"] = share
    n_matched = int(matched.matched.sum())
    checks["moves_matched_share"] = n_matched / alone.index.size if alone.index.size else float("nan")
    q99 = float(np.nanpercentile(matched.hi, 99)) if n_matched >= 3 else cfg.lag_max_ms * MS

    # the lag law: each jump clear of others, its largest answer (lag_law's docstring), or why not
    law = lag_law.estimate(jumps, touch, share, int(cfg.lag_max_ms * MS), int(cfg.isolation_ms * MS),
                           cfg.min_moves, cfg.n_boot // 2, cfg.seed)
    checks["lag_moves_clear"], checks["lag_moves_answered"] = float(law.moves_clear), float(law.moves_answered)
    if np.isfinite(law.peak_lr):
        checks["lag_peak_lr"] = law.peak_lr
    unidentified: dict[str, str] = {}
    if law.why_not is None:
        out["lag_median_ms"], out["lag_sd_ms"] = law.median, law.sd
        checks["lag_false_share"] = law.false_share.value
    else:
        unidentified["lag_median_ms"] = unidentified["lag_sd_ms"] = law.why_not
        notes.append(f"lag law not identified: {law.why_not}")

    # the basis' slow part: arbitrage half-life
    half, slow_share = ff.basis_half_life(lead.t, lead.x, touch)
    checks["basis_slow_share"] = slow_share
    if np.isfinite(half.value) and slow_share >= cfg.min_slow_basis and half.value < 0.5 * minutes * 60:
        out["basis_half_life_s"] = half
    else:
        notes.append(f"the basis has no slow part that decays within the session (slow share {slow_share:.3g}, "
                     f"half-life {half.value:.3g} s): hl_basis_half_life_s not estimated")

    # catch-up now (each move's own first response) and later (the curve after it), then fading
    late_ms = 0.0
    fading = False
    if n_matched >= 3:
        c = ff.early_response(alone, matched, touch, block_ns)
        out["catch_up"] = c
        h = out["basis_half_life_s"].value if "basis_half_life_s" in out else 0.0
        late = ff.late_curve(jumps, matched_all := ff.match_unexposed(lead.t, lead.x, jumps, touch, share,
                                                                        int(cfg.lag_max_ms * MS)),
                             touch, block_ns, int(cfg.isolation_ms * MS), h, n_boot=cfg.n_boot // 4,
                             seed=cfg.seed)
        checks["late_moves"] = float(late.moves)
        a = late.late
        pending = c.value
        if np.isfinite(a.value) and c.value < 0.98:
            g = a.value / (1.0 - c.value)
            out["catch_up_late"] = est.Estimate(g, a.se / (1.0 - c.value), a.n)  # market_toml clips, once
            pending = c.value + a.value
            if a.value > 0.02:
                out["catch_up_late_ms"] = late.delay_ms
                late_ms = late.delay_ms.value
            else:
                notes.append("no late part to time: catch_up_late_ms not estimated")
        else:
            notes.append(f"{late.moves} moves clear of other jumps, or catch-up whole: late part not estimated")
        f = ff.fade(jumps, matched_all, touch, pending)
        if np.isfinite(f.value):
            out["fade"] = f  # market_toml clips it to the model's range, once, for the body and the header
        fading = bool(np.isfinite(f.value) and f.value - 2.0 * f.se > FADE_HY_MAX)

    # lead-lag curves (cross-checks). Fading moves Hyperliquid's mid at once by half the faded share of every
    # pending move, so the mid's curves peak at 0 (5/0/0 ms on the default market for a 650 ms lag): not a lag,
    # so on a fading market they are not computed (they were most of calibrate's time)
    if fading:
        notes.append(f"hl_fade more than two SE above {FADE_HY_MAX}: Hyperliquid's mid moves at once with fading "
                     "quotes, so the Hayashi-Yoshida and cross-correlation peaks are not a lag and are not reported")
    else:
        lags = np.arange(0, int(cfg.lag_max_ms * MS) + 1, int(cfg.lag_step_ms * MS), dtype=np.int64)
        _, hy = est.hayashi_yoshida(lead.t, lead.x, follow.t, follow.x, lags)
        checks["hy_peak_ms"] = est.peak_lag(lags, hy) / MS
        checks["hy_peak_corr"] = float(np.nanmax(hy))
        cc = est.cross_correlation(lead.t, lead.x, follow.t, follow.x, lags, int(cfg.cc_step_ms * MS))
        if bool(np.any(np.isfinite(cc))):
            checks["cc_peak_ms"] = est.peak_lag(lags, cc) / MS

    # Hyperliquid's own moves: in time clear of every Binance jump's lag and late part
    clean_after = int(min(max(q99 + 2.0 * late_ms * MS, 2e9), 8e9))
    weight = np.where(regimes.volatile, regimes.jump_mult.value if regimes.two else 1.0, 1.0)
    own = ff.own_moves(jumps.t, touch, block_ns, clean_after, cfg.own_step_bps / 1e4, cfg.own_size_bps / 1e4,
                       (stats.start, weight))
    checks["own_clean_min"] = own.clean_min
    out["own_per_min"] = own.rate_per_clean_min
    if own.rate_per_clean_min.n >= 2:
        out["own_bps_min"], out["own_bps_max"], out["own_blocks"] = own.bps_min, own.bps_max, own.blocks
    else:
        notes.append(f"{own.rate_per_clean_min.n} own move(s) of Hyperliquid: their sizes not estimated")
    return Calibration(symbol, cfg.clock, start, end, {LEADER: int(lead.t.size), FOLLOWER: int(follow.t.size)},
                       out, checks, notes, unidentified)


@dataclass(frozen=True)
class _LeaderFit:
    """What the leader's price alone gives: its estimates, cross-checks and notes, and what the follower's
    estimators read from it (the jumps, the regime windows and their labels)."""

    estimates: dict[str, est.Estimate]
    checks: dict[str, float]
    notes: list[str]
    jumps: est.Jumps
    stats: rg.WindowStats
    regimes: rg.Regimes


def _leader(lead: Series, cfg: FitSettings) -> _LeaderFit:
    """Binance's settings from its mid alone: noise, jumps and flickers, regimes, flicker lifetime, volatility."""
    out: dict[str, est.Estimate] = {}
    checks: dict[str, float] = {}
    notes: list[str] = []
    # Binance's noise (Roll) on tick returns below the jump threshold: a cross-check and the variance's correction
    # (the model's jump-sized noise is its flickers, left out here and classified below)
    threshold = _jump_threshold(lead, cfg)
    small = np.diff(lead.x)
    noise = est.roll_noise(small[np.abs(small) <= threshold])
    out["noise_share"] = noise.share
    checks["noise_sd_bps"] = noise.noise_sd * 1e4

    # large moves: information jumps (persist) and flickers (revert within the window)
    checks["jump_threshold_bps"] = threshold * 1e4
    classes = mv.classify_moves(lead.t, lead.x, threshold, int(cfg.flicker_window_ms * MS),
                                dead_ns=int(cfg.jump_dead_ms * MS))
    jumps = classes.jumps
    n_flick = int(classes.flicker_t.size)
    out["flicker_share"] = mv.share(n_flick, n_flick + classes.raw_jumps)

    # regimes: windows split by realised variance (large moves left out)
    stats = rg.window_stats(lead.t, lead.x, int(cfg.regime_step_ms * MS), int(cfg.regime_window_s * 1e9),
                            classes.candidates_t)
    regimes = rg.split(stats, seed=cfg.seed)
    out["regime_vol_mult"], out["regime_jump_mult"] = regimes.vol_mult, regimes.jump_mult
    checks["regime_bic_gain"] = regimes.bic_gain
    if regimes.two:
        out["regime_calm_s"], out["regime_volatile_s"] = regimes.calm_s, regimes.volatile_s
        checks["volatile_time_share"] = regimes.volatile_share
    else:
        notes.append("one volatility regime (two do not describe the windows better): multipliers 1, spell "
                     "lengths not estimated")
    calm = ~regimes.volatile

    # flicker lifetime: direct pairs, false pairs (near-miss placebo) and replacement (the flicker arrival rate in
    # each pair's regime) taken out
    hazard = _replace_hazard(classes, stats, regimes.volatile, int(cfg.regime_window_s * 1e9))
    checks["flicker_replace_per_s"] = hazard * 1e9
    try:
        out["flicker_ms"] = _scaled(mv.flicker_lifetime(classes.direct, classes.near_miss, classes.near_miss_scale,
                                                        cfg.flicker_window_ms * MS, hazard), 1 / MS)
    except ValueError as exc:
        notes.append(f"flicker_ms not estimated: {exc}")
    calm_min = float(calm.sum()) * stats.seconds / 60.0
    jump_w = np.clip((jumps.t - stats.start[0]) // int(cfg.regime_window_s * 1e9), 0, calm.size - 1)
    n_calm_jumps = int(calm[jump_w].sum())
    out["jumps_per_min"] = est.Estimate(n_calm_jumps / calm_min, np.sqrt(max(n_calm_jumps, 1)) / calm_min,
                                        n_calm_jumps)
    if jumps.index.size >= 5:
        lo, hi = mv.uniform_bounds_robust(np.expm1(np.abs(jumps.size)) * 1e4)
        out["jump_bps_min"], out["jump_bps_max"] = lo, hi
    else:
        notes.append(f"{jumps.index.size} jump(s) above {threshold * 1e4:.1f} bp: jump sizes not estimated")

    # diffusion volatility (calm windows): mean square of grid returns, noise taken off
    sq, n_ret = float(stats.sum_sq[calm].sum()), int(stats.n_ret[calm].sum())
    per_year = 1e9 / (cfg.regime_step_ms * MS) * est.SECONDS_PER_YEAR
    var = max(sq / n_ret - 2.0 * noise.noise_sd**2, 0.0) * per_year
    sigma = float(np.sqrt(var))
    out["annual_vol"] = est.Estimate(sigma, sigma * float(np.sqrt(0.5 / n_ret)), n_ret)
    return _LeaderFit(out, checks, notes, jumps, stats, regimes)


#: the note a Binance-only calibration carries (market_toml writes the preset's follower settings)
BINANCE_ONLY_NOTE = ("Binance only: no follower read; every Hyperliquid setting is carried over from the preset "
                     "(no co-recorded Hyperliquid capture)")


def calibrate_leader(books: pd.DataFrame, settings: FitSettings | None = None,
                     arrival_clock: str | None = "t_recv") -> Calibration:
    """Binance's settings alone, from the leader's books (for a capture of Binance without a co-recorded
    Hyperliquid: no follower is read and every Hyperliquid setting is left to the preset, a note says so): the
    price's settings as :func:`calibrate` estimates them (volatility, jumps, flickers, regimes) and, on
    ``arrival_clock`` (receive stamps by default; None: not estimated), the quote-arrival settings
    (caerus.research.calibrate.arrivals: rate, rate bursts, batches)."""
    cfg = settings or FitSettings()
    cfg.validate()
    missing = [c for c in REQUIRED_COLUMNS if c not in books.columns]
    if missing:
        raise CalibrationError(f"books lack column(s) {', '.join(missing)} (expected caerus.data.books' columns)")
    if arrival_clock is not None and arrival_clock not in CLOCKS:
        raise CalibrationError(f"arrival clock must be one of {', '.join(CLOCKS)}, got {arrival_clock!r}")
    if "session" in books.columns and books["session"].nunique() > 1:
        names = sorted(str(v) for v in books["session"].unique())
        raise CalibrationError(f"the books come from {len(names)} sessions ({', '.join(names[:5])}): choose one")
    symbol, rows = _pick_symbol(books, cfg.symbol)
    lead = venue_series(rows, LEADER, cfg.clock)
    if lead.t.size < 50:
        raise CalibrationError(f"{symbol}: {lead.t.size} usable {LEADER} books, need at least 50")
    start, end = int(lead.t[0]), int(lead.t[-1])
    if end - start < 60 * 1_000_000_000:
        raise CalibrationError(f"{symbol}: {LEADER}'s books span {(end - start) / 1e9:.1f} s, need at least 60 s")
    lf = _leader(lead, cfg)
    out, checks, notes = dict(lf.estimates), dict(lf.checks), list(lf.notes)
    if arrival_clock is not None:
        from caerus.research.calibrate import arrivals

        t, _, _ = _rows(rows, LEADER, arrival_clock, keep_same_time=True)
        try:
            arr = arrivals.estimate(t, seed=cfg.seed + 1)
        except ValueError as exc:
            notes.append(f"quote arrivals not estimated: {exc}")
        else:
            out.update(arr.estimates())
            checks.update({f"arrivals_{k}": v for k, v in arr.cross_checks.items()})
            notes.extend(arr.notes)
    notes.append(BINANCE_ONLY_NOTE)
    return Calibration(symbol, cfg.clock, start, end, {LEADER: int(lead.t.size)}, out, checks, notes)


def _scaled(e: est.Estimate, k: float) -> est.Estimate:
    return est.Estimate(e.value * k, e.se * k, e.n)


def _replace_hazard(classes: mv.MoveClasses, stats: rg.WindowStats, volatile: np.ndarray, window_ns: int) -> float:
    """The flicker arrival rate (per ns) in each direct pair's regime, averaged over the pairs: the hazard of a
    flicker being replaced by the next one (the model keeps one at a time)."""
    if classes.direct_t.size == 0:
        return 0.0
    w_of = np.clip((classes.flicker_t - stats.start[0]) // window_ns, 0, volatile.size - 1)
    rate = []
    for label in (False, True):
        span = float((volatile == label).sum()) * window_ns
        rate.append(float((volatile[w_of] == label).sum()) / span if span > 0 else 0.0)
    w_d = np.clip((classes.direct_t - stats.start[0]) // window_ns, 0, volatile.size - 1)
    return float(np.mean(np.where(volatile[w_d], rate[1], rate[0])))


def _jump_threshold(lead: Series, cfg: FitSettings) -> float:
    if cfg.jump_threshold_bps is not None:
        return cfg.jump_threshold_bps / 1e4
    grid = np.arange(lead.t[0], lead.t[-1] + 1, 100 * MS, dtype=np.int64)
    r = np.diff(est.previous_tick(lead.t, lead.x, grid))
    # a robust scale: flickers are two jump-sized moves a few hundred ms apart, so neighbouring 100 ms returns are
    # both large and a bipower scale (|r_i||r_{i-1}|) grows with them; the MAD ignores them (and the floor keeps a
    # quiet tick, where the MAD is 0, from calling every tick a jump)
    scale = est.robust_sd(r) if r.size > 2 else 0.0
    return max(8.0 * scale, 3e-4)
