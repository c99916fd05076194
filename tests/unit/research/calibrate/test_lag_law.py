"""caerus.research.calibrate.lag_law on synthetic followers with known lags: the largest answer, the censored
lognormal with false answers, and the rules that say the lag is not identified."""

from __future__ import annotations

import numpy as np
import pytest

from caerus.research.calibrate import estimators as est
from caerus.research.calibrate import lag_law
from caerus.research.calibrate.fit import calibrate
from caerus.research.calibrate.follower_fit import Touch, match_unexposed
from caerus.research.calibrate.market_toml import NotIdentified, render
from caerus.sim.core.market_config import load_market
from tests.fixtures.research_books import offline_books

MS = 1_000_000
WINDOW = 2000 * MS


def lognormal(rng: np.random.Generator, median: float, sd: float, n: int) -> np.ndarray:
    s = np.sqrt(np.log((1 + np.sqrt(1 + 4 * (sd / median) ** 2)) / 2))  # the model's parametrisation
    return np.exp(rng.normal(np.log(median), s, n))


def follower(rng: np.random.Generator, lags_ms: np.ndarray, decoy: float = 0.0, chance: float = 0.0,
             catch: float = 0.6, size: float = 20e-4) -> tuple[est.Jumps, Touch]:
    """Jumps every 5 s; Hyperliquid on a 70 +- 15 ms block clock moves ``catch`` of each at the first block after
    its lag. ``decoy``: an earlier step of that share of the move the same way (an own move's block) somewhere
    before the arrival; ``chance``: that share of moves answered at a time uniform over the window instead."""
    n = lags_ms.size
    t_jump = ((np.arange(n) + 1) * 5e9).astype(np.int64)
    sign = rng.choice([-1.0, 1.0], n)
    end = int(t_jump[-1] + 10e9)
    blocks = np.cumsum(rng.uniform(55.0, 85.0, end // (55 * MS) + 10) * MS).astype(np.int64)
    blocks = blocks[blocks < end]
    steps = np.zeros(blocks.size)
    false = rng.random(n) < chance
    for k in range(n):
        at = t_jump[k] + (rng.uniform(0, 2000.0) if false[k] else lags_ms[k]) * MS
        steps[np.searchsorted(blocks, at, side="left")] += catch * sign[k] * size
        if decoy:
            early = t_jump[k] + rng.uniform(0.0, max(lags_ms[k] - 140.0, 1.0)) * MS
            steps[np.searchsorted(blocks, early, side="left")] += decoy * sign[k] * size
    mid = np.log(100.0) + np.cumsum(steps)
    # the jumps' index: into the leader's series, a tick 1 ms before each jump and the jump's own
    return est.Jumps(2 * np.arange(n, dtype=np.int64) + 1, t_jump, sign * size), Touch(blocks, mid - 1e-5, mid + 1e-5)


def leader(moves: est.Jumps) -> tuple[np.ndarray, np.ndarray]:
    """Binance's log mid as :func:`follower`'s jumps index it: flat, then each jump."""
    t = np.column_stack([moves.t - MS, moves.t]).ravel()
    x = np.log(100.0) + np.column_stack([np.zeros(moves.t.size), moves.size]).ravel().cumsum()
    return t, x


def test_the_answer_is_the_arrival_not_an_earlier_smaller_step() -> None:
    rng = np.random.default_rng(1)
    lags = lognormal(rng, 650.0, 300.0, 80)
    moves, touch = follower(rng, lags, decoy=0.4)
    ans = lag_law.largest_step(moves, touch, WINDOW)
    assert np.all((ans.lo < lags * MS) & (lags * MS <= ans.hi))  # every interval holds its move's lag
    # the earlier rule (the first update crossing the share in one step) takes the decoy for the answer
    first = match_unexposed(*leader(moves), moves, touch, 0.3, WINDOW)
    assert np.mean(first.hi < lags * MS) > 0.5


@pytest.mark.parametrize(("median", "sd"), [(650.0, 300.0), (300.0, 300.0), (50.0, 300.0), (20.0, 10.0)])
def test_the_law_is_recovered_through_the_block_clock(median: float, sd: float) -> None:
    # (50, 300): the default market's spread at a 50 ms median, a long tail; (20, 10): a lag shorter than a block
    rng = np.random.default_rng(2)
    moves, touch = follower(rng, lognormal(rng, median, sd, 150))
    law = lag_law.estimate(moves, touch, 0.3, WINDOW, 2500 * MS, 20, n_boot=200)
    assert law.why_not is None
    lo, hi = law.median.interval()
    assert lo <= median <= hi, f"median {law.median}"
    assert 0 < lo < law.median.value < hi < 3 * median  # an interval, and an informative one
    assert law.sd.interval()[0] <= sd <= law.sd.interval()[1], f"sd {law.sd}"


def test_false_answers_are_a_share_of_the_mixture_not_a_bias() -> None:
    rng = np.random.default_rng(3)
    moves, touch = follower(rng, lognormal(rng, 50.0, 30.0, 200), chance=0.2)
    law = lag_law.estimate(moves, touch, 0.3, WINDOW, 2500 * MS, 20, n_boot=200)
    assert law.why_not is None
    assert law.median.interval()[0] <= 50.0 <= law.median.interval()[1]
    assert law.false_share.interval()[0] <= 0.2 <= law.false_share.interval()[1]
    ans = lag_law.largest_step(moves, touch, WINDOW)
    assert np.median(0.5 * (ans.lo + ans.hi)) / MS > 60.0  # the midpoints' median, pulled up by the false answers


@pytest.mark.parametrize(("case", "why"), [
    ("few", "7 answered moves (need 20; 7 jumps clear of others 2.5 s before and 2 s after)"),
    ("flat", "answers are no more concentrated than chance over the 2000 ms window (likelihood ratio"),
    ("edge", "of the fitted lag law lies past the searched window's end (2000 ms; median"),
    ("zero", "below the books' 1 ms clock: not told from no lag"),
])
def test_a_lag_the_answers_do_not_identify_is_refused_with_the_reason(case: str, why: str) -> None:
    rng = np.random.default_rng(4)
    lags = {"few": np.full(7, 300.0), "flat": np.full(60, 300.0), "zero": np.zeros(60),
            "edge": lognormal(rng, 1900.0, 100.0, 60)}[case]
    moves, touch = follower(rng, lags, chance=1.0 if case == "flat" else 0.0)
    law = lag_law.estimate(moves, touch, 0.3, WINDOW, 2500 * MS, 20, n_boot=100)
    assert law.why_not is not None and why in law.why_not


def test_clear_moves_have_no_other_move_before_or_within_the_window_after() -> None:
    t = np.array([0, 1000, 5000, 6500, 12000, 20000], dtype=np.int64) * MS
    moves = est.Jumps(np.arange(6, dtype=np.int64) + 1, t, np.full(6, 1e-3))
    kept = lag_law.clear_moves(moves, moves, 2500 * MS, 2000 * MS)
    assert kept.t.tolist() == [t[4], t[5]]  # 0: a move 1 s after; 1000: one before; 5000: after; 6500: before


def test_bad_input_is_named() -> None:
    with pytest.raises(ValueError, match="at least 3 answered moves"):
        lag_law.lognormal_law([0.0, 1.0], [1.0, 2.0], [5.0, 5.0], WINDOW)
    with pytest.raises(ValueError, match="3 lower bounds, 3 upper bounds, 2 window ends"):
        lag_law.lognormal_law([0.0, 1.0, 2.0], [1.0, 2.0, 3.0], [5.0, 5.0], WINDOW)
    with pytest.raises(ValueError, match="search window must be > 0"):
        lag_law.lognormal_law([0.0, 1.0, 2.0], [1.0, 2.0, 3.0], [5.0, 5.0, 5.0], 0)


def test_two_minutes_of_the_default_market_do_not_identify_the_lag_and_nothing_is_written() -> None:
    # issue 45: this wrote hl_lag_ms = 0 (the Hayashi-Yoshida peak under fading) with SE 1.4 ms
    # (7 answered moves before the default market's quote arrivals were refit, issue 46: 6 since)
    cal = calibrate(offline_books(load_market("default", seed=1), 2.0))
    assert "lag_median_ms" not in cal.estimates and "lag_sd_ms" not in cal.estimates
    assert cal.unidentified["lag_median_ms"].startswith("6 answered moves (need 20;")
    with pytest.raises(NotIdentified, match=r"^hl_lag_ms, hl_lag_sd_ms not identified: 6 answered moves"):
        render(cal, "offline")
