"""Binance's quote-arrival process from update times: the market model's ``binance_rate_hz``, ``burst_*`` and
``binance_batch_*`` settings (caerus/sim/core/market.py, ``_BinanceProcess``).

The model: batches of updates start at a Poisson rate that a two-state chain multiplies by ``burst_multiplier``
during rate bursts (``burst_prob_per_s`` of them per second outside one, ``burst_len_s`` long); a batch holds N
updates, ``P(N >= k) = k^-alpha`` up to ``binance_batch_max``, spaced by exponential gaps of mean
``binance_batch_gap_us``; ``binance_rate_hz`` is updates per second outside bursts (batch starts x E[N]).

The estimators, on one stream's own times (a real capture's receive stamps; the emulator's schedule):

* batches: a run of updates each less than ``BATCH_GAP_NS`` (1 ms) after the previous one, the rule the
  goodness-of-fit report measures bursts with (caerus.research.fit_stats);
* activity (the rate bursts): updates counted per 1 s window, a two-component Gaussian mixture on the log counts
  (scikit-learn) labels each window quiet or busy; ``burst_multiplier`` = busy / quiet mean count; the spells from
  the labels' transition counts read as a continuous-time chain seen every window (as
  caerus.research.calibrate.regimes reads volatility spells): ``burst_len_s`` = the mean busy spell,
  ``burst_prob_per_s`` = 1 / the mean quiet spell. Real activity is not two-state (its per-second counts are one
  broad lognormal-like law, and their variance keeps growing with the window up to minutes), so this is the
  two-state chain closest to the per-second spread, always split in two, not a test that there are two states;
* ``binance_batch_gap_us``: the mean of the gaps below ``TOGETHER_NS`` (20 us), frames sent together (the
  exponential's maximum likelihood), SE sd / sqrt(n). A real stream's gaps under 1 ms are bimodal: most of a few
  us, the rest 0.3-1 ms (the next millisecond's update, early); the model makes the latter by chance, batches
  starting within 1 ms of each other, and the within-1 ms share is matched through alpha (below);
* ``binance_batch_alpha`` and ``binance_rate_hz`` by indirect inference through the model's own generator
  (``caerus.sim.core.market.binance_update_times``, seeded, ``SIM_S`` simulated seconds): alpha is the value at which
  the model's share of updates within 1 ms of the previous one equals the stream's (bisection: the share rises with
  the tail), and the rate is scaled once so the model's mean updates per second equal the stream's. The direct
  estimate of alpha (maximum likelihood of the capped power law on the measured batch sizes) is kept as a
  cross-check: it reads low for the model, because two batches that start within 1 ms by chance are measured as
  one.

What the model cannot reproduce, whatever its settings: the real 0.3-1 ms gaps bunch towards 1 ms (a
millisecond cadence: the venue's event times are whole ms), the model's chance gaps do not; and real activity has
memory at every scale, which two states do not (the per-second spread comes out narrower).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from scipy import optimize

from caerus.research.calibrate.estimators import Estimate
from caerus.sim.core.market import binance_update_times
from caerus.sim.core.market_config import MarketConfig

#: an update less than this after the previous one belongs to its batch (ns)
BATCH_GAP_NS = 1_000_000
#: gaps below this are frames sent together (ns): real streams' gaps under 1 ms are bimodal, ~1-3 us (85 % on
#: USD-M and spot BTCUSDT) and 0.3-1 ms, with a valley between 10 and 100 us
TOGETHER_NS = 20_000
#: activity windows (ns): the rate bursts are read from updates per window
WINDOW_NS = 1_000_000_000
#: the largest batch the law allows (the model's binance_batch_max default)
BATCH_MAX = 100
#: simulated seconds per indirect-inference evaluation (the stream's own length when longer)
SIM_S = 3000.0
#: the bisection's bracket of alpha (1: the mean is ~ln(BATCH_MAX); 8: almost every batch a single update)
ALPHA_RANGE = (1.02, 8.0)


@dataclass(frozen=True)
class Arrivals:
    """The arrival settings' estimates (the market model's names), the cross-checks, and what they came from."""

    binance_rate_hz: Estimate
    burst_prob_per_s: Estimate
    burst_multiplier: Estimate
    burst_len_s: Estimate
    binance_batch_alpha: Estimate
    binance_batch_gap_us: Estimate
    updates: int
    seconds: float
    cross_checks: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def estimates(self) -> dict[str, Estimate]:
        """Setting name -> estimate (the market model's names)."""
        return {"binance_rate_hz": self.binance_rate_hz, "burst_prob_per_s": self.burst_prob_per_s,
                "burst_multiplier": self.burst_multiplier, "burst_len_s": self.burst_len_s,
                "binance_batch_alpha": self.binance_batch_alpha, "binance_batch_gap_us": self.binance_batch_gap_us}

    def settings(self) -> dict[str, float]:
        """Setting name -> value, for ``dataclasses.replace(MarketConfig, ...)`` (NaN estimates left out)."""
        return {k: e.value for k, e in self.estimates().items() if math.isfinite(e.value)}


def batches(t: npt.ArrayLike, gap_ns: int = BATCH_GAP_NS) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(index of each batch's first update, each batch's size) of sorted update times ``t``: a batch is a run of
    updates each less than ``gap_ns`` after the previous one."""
    times = np.asarray(t, dtype=np.int64)
    if times.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if bool(np.any(np.diff(times) < 0)):
        raise ValueError("update times must be sorted")
    first = np.flatnonzero(np.r_[True, np.diff(times) >= gap_ns]).astype(np.int64)
    return first, np.diff(np.r_[first, times.size]).astype(np.int64)


def within_share(t: npt.ArrayLike, gap_ns: int = BATCH_GAP_NS) -> float:
    """Share of updates (after the first) less than ``gap_ns`` after the previous one."""
    g = np.diff(np.asarray(t, dtype=np.int64))
    return float(np.mean(g < gap_ns)) if g.size else math.nan


def power_law_alpha(sizes: npt.ArrayLike, most: int = BATCH_MAX) -> Estimate:
    """Maximum likelihood of alpha in ``P(N >= k) = k^-alpha`` (k <= ``most``; a size at ``most`` or above counts as
    ``most``, the law's cap) on batch sizes >= 1; SE from the log-likelihood's curvature at the maximum."""
    n = np.minimum(np.asarray(sizes, dtype=np.int64), most)
    if n.size < 10 or bool(np.any(n < 1)):
        raise ValueError(f"the batch size law needs at least 10 sizes >= 1, got {n.size}")
    counts = np.bincount(n, minlength=most + 1)[1:].astype(np.float64)  # counts[k - 1]: batches of size k
    if counts[0] == counts.sum():
        return Estimate(math.inf, math.nan, int(n.size))  # every batch a single update: no tail at all
    k = np.arange(1, most + 1, dtype=np.float64)

    def nll(a: float) -> float:
        p = k**-a - np.r_[k[1:] ** -a, 0.0]  # P(N = k); at the cap, P(N >= most)
        return -float(np.dot(counts, np.log(np.maximum(p, 1e-300))))

    a = float(optimize.minimize_scalar(nll, bounds=(0.05, 20.0), method="bounded", options={"xatol": 1e-7}).x)
    h = 1e-3 * max(a, 0.1)
    curv = (nll(a + h) - 2.0 * nll(a) + nll(a - h)) / (h * h)
    return Estimate(a, 1.0 / math.sqrt(curv) if curv > 0 else math.nan, int(n.size))


@dataclass(frozen=True)
class Activity:
    """Updates per window split in two: quiet and busy means (per s), the busy share, the spells (s)."""

    quiet_hz: float
    busy_hz: float
    busy_share: float
    busy_len_s: Estimate
    quiet_len_s: Estimate
    windows: int
    bic_gain: float  # BIC(one component) - BIC(two): > 0 when two describe the counts better


def activity(t: npt.ArrayLike, window_ns: int = WINDOW_NS, seed: int = 0) -> Activity:
    """Quiet and busy windows of update counts (see the module docstring)."""
    from sklearn.mixture import GaussianMixture  # imported here: the [research] extra, seconds to import

    times = np.asarray(t, dtype=np.int64)
    n_win = int((times[-1] - times[0]) // window_ns) if times.size else 0
    if n_win < 10:
        raise ValueError(f"activity needs at least 10 windows of {window_ns / 1e9:g} s, got {n_win}")
    counts = np.bincount((times - times[0]) // window_ns, minlength=n_win)[:n_win].astype(np.float64)
    z = np.log1p(counts).reshape(-1, 1)
    one = GaussianMixture(1, random_state=seed).fit(z)
    two = GaussianMixture(2, random_state=seed, n_init=3).fit(z)
    busy = two.predict(z) == int(np.argmax(two.means_.ravel()))
    w_s = window_ns / 1e9
    nan = math.nan
    if not 0 < int(busy.sum()) < n_win:
        q = float(counts.mean()) / w_s
        return Activity(q, q, 0.0, Estimate(nan, nan, 0), Estimate(nan, nan, 0), n_win,
                        float(one.bic(z) - two.bic(z)))
    a, b = busy[:-1], busy[1:]
    n01, n10 = int((~a & b).sum()), int((a & ~b).sum())
    p01, p10 = n01 / max(int((~a).sum()), 1), n10 / max(int(a.sum()), 1)
    total = -math.log(max(1.0 - p01 - p10, 1e-9)) / w_s
    share = p01 / (p01 + p10) if p01 + p10 > 0 else float(busy.mean())
    q01, q10 = total * share, total * (1.0 - share)
    quiet_len = 1.0 / q01 if q01 > 0 else nan
    busy_len = 1.0 / q10 if q10 > 0 else nan
    return Activity(float(counts[~busy].mean()) / w_s, float(counts[busy].mean()) / w_s, float(busy.mean()),
                    Estimate(busy_len, busy_len / math.sqrt(max(n10, 1)), n10),
                    Estimate(quiet_len, quiet_len / math.sqrt(max(n01, 1)), n01), n_win,
                    float(one.bic(z) - two.bic(z)))


def estimate(t: npt.ArrayLike, base: MarketConfig | None = None, seed: int = 1, sim_s: float = SIM_S) -> Arrivals:
    """Every arrival setting from one stream's sorted update times ``t`` (ns); ``base``: the market whose other
    settings the simulations keep (``MarketConfig()`` when None; only the arrival settings matter to them);
    ``sim_s``: simulated seconds per evaluation through the model (the stream's own length when longer)."""
    times = np.asarray(t, dtype=np.int64)
    if times.size < 100:
        raise ValueError(f"arrival estimates need at least 100 updates, got {times.size}")
    if bool(np.any(np.diff(times) < 0)):
        raise ValueError("update times must be sorted")
    seconds = (int(times[-1]) - int(times[0])) / 1e9
    mean_hz = (times.size - 1) / seconds
    _, sizes = batches(times)
    act = activity(times)
    gaps = np.diff(times)
    inner = gaps[gaps < TOGETHER_NS] / 1e3  # frames sent together; the rest of the gaps under 1 ms: chance
    gap = (Estimate(float(inner.mean()), float(inner.std() / math.sqrt(inner.size)), int(inner.size))
           if inner.size else Estimate(math.nan, math.nan, 0))
    target = within_share(times)
    mle = power_law_alpha(sizes) if sizes.size >= 10 else Estimate(math.nan, math.nan, int(sizes.size))
    notes: list[str] = []
    nan = math.nan
    two = act.busy_share > 0 and math.isfinite(act.busy_len_s.value) and math.isfinite(act.quiet_len_s.value)
    mult, prob, length = ((act.busy_hz / act.quiet_hz, 1.0 / act.quiet_len_s.value, act.busy_len_s.value) if two
                          else (1.0, 0.0, 0.3))
    if not two:
        notes.append("activity not split in two (no quiet/busy spells): no rate bursts")
    cfg = dataclasses.replace(base or MarketConfig(), binance_rate_hz=act.quiet_hz, binance_batch_max=BATCH_MAX,
                              binance_batch_gap_us=gap.value if math.isfinite(gap.value) and gap.value > 0 else 100.0,
                              burst_multiplier=mult, burst_prob_per_s=prob, burst_len_s=length)
    sim_s = max(sim_s, seconds)

    def model_within(alpha: float) -> float:
        return within_share(binance_update_times(dataclasses.replace(cfg, binance_batch_alpha=alpha), sim_s, seed))

    lo, hi = ALPHA_RANGE
    if not model_within(hi) <= target <= model_within(lo):
        notes.append(f"the within-1 ms share {target:.3f} is outside what alpha in {lo}..{hi} gives: alpha from "
                     "the batch sizes' maximum likelihood")
        alpha_v = min(max(mle.value, lo), hi) if math.isfinite(mle.value) else hi
    else:
        alpha_v = float(optimize.brentq(lambda a: model_within(a) - target, lo, hi, xtol=1e-3))
    cfg = dataclasses.replace(cfg, binance_batch_alpha=alpha_v)
    sim = np.asarray(binance_update_times(cfg, sim_s, seed), dtype=np.int64)
    sim_hz = (sim.size - 1) / ((int(sim[-1]) - int(sim[0])) / 1e9)
    rate_v = cfg.binance_rate_hz * mean_hz / sim_hz
    # SE: the spread of the per-second counts over the windows (taken as independent: optimistic, activity has
    # memory), carried to the rate in proportion
    counts = np.bincount((times - times[0]) // WINDOW_NS)[: act.windows]
    rel_se = float(counts.std(ddof=1) / counts.mean() / math.sqrt(counts.size)) if counts.mean() > 0 else math.nan
    rate = Estimate(rate_v, rate_v * rel_se, int(times.size))
    return Arrivals(
        binance_rate_hz=rate,
        burst_prob_per_s=(Estimate(prob, act.quiet_len_s.se / act.quiet_len_s.value ** 2, act.quiet_len_s.n) if two
                          else Estimate(0.0, nan, act.windows)),
        burst_multiplier=Estimate(mult, nan, act.windows),
        burst_len_s=act.busy_len_s if two else Estimate(nan, nan, 0),
        binance_batch_alpha=Estimate(alpha_v, nan, int(sizes.size)),
        binance_batch_gap_us=gap,
        updates=int(times.size), seconds=seconds,
        cross_checks={"within_1ms_share": target, "batch_alpha_mle": mle.value, "batch_alpha_mle_se": mle.se,
                      "mean_updates_per_s": mean_hz, "activity_bic_gain": act.bic_gain,
                      "busy_window_share": act.busy_share},
        notes=notes)
