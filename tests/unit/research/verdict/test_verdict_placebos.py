"""Placebo markets keep the follower's own behaviour and remove only what flows from the leader: a known 500 ms lag
is found in the pair, and is gone from each placebo built from it."""

from __future__ import annotations

import numpy as np
import pytest

from caerus.research.backtest.events import BookEvents
from caerus.research.calibrate.estimators import hayashi_yoshida
from caerus.research.verdict import placebos
from caerus.sim.core.market_config import load_market
from caerus.wire import BookFlags, Venue

BN, HL = int(Venue.BINANCE), int(Venue.HYPERLIQUID)
LAG_NS = 500_000_000
S = 1_000_000_000


def _pair(seconds: float = 600.0, recv_offset_ns: int = 0) -> BookEvents:
    """A leader quoted every 10 ms (a random walk with jumps, on a 0.1 tick) and a follower showing the leader's
    price 500 ms later on 70 ms blocks (1.0 tick); receive times ``recv_offset_ns`` after the venue's (0: none)."""
    rng = np.random.default_rng(5)
    t_bn = np.arange(0, int(seconds * S), 10_000_000, dtype=np.int64)
    steps = rng.normal(0, 2e-5, len(t_bn)) + rng.choice([0, 1], len(t_bn), p=[0.995, 0.005]) * rng.normal(
        0, 1.5e-3, len(t_bn))
    px = 95_000.0 * np.exp(np.cumsum(steps))
    t_hl = np.arange(LAG_NS, int(seconds * S), 70_000_000, dtype=np.int64)
    hl_px = np.round(px[np.searchsorted(t_bn, t_hl - LAG_NS, side="right") - 1])
    cols = {
        "venue": np.r_[np.full(len(t_bn), BN), np.full(len(t_hl), HL)],
        "flags": np.full(len(t_bn) + len(t_hl), int(BookFlags.VALID)),
        "symbol": np.zeros(len(t_bn) + len(t_hl), dtype=int),
        "seq": np.r_[np.arange(len(t_bn)), np.arange(len(t_hl))],
        "t_exchange": np.r_[t_bn, t_hl],
        "t_recv": np.r_[t_bn, t_hl] + recv_offset_ns if recv_offset_ns else np.zeros(len(t_bn) + len(t_hl)),
        "bid_px": np.r_[np.round(px, 1) - 0.1, hl_px - 1.0], "ask_px": np.r_[np.round(px, 1), hl_px],
        "bid_qty": np.ones(len(t_bn) + len(t_hl)), "ask_qty": np.ones(len(t_bn) + len(t_hl)),
    }
    order = np.argsort(cols["t_exchange"], kind="stable")
    return BookEvents.from_columns({k: np.asarray(v)[order] for k, v in cols.items()}, sort=bool(recv_offset_ns))


def _mids(ev: BookEvents, venue: int) -> tuple[np.ndarray, np.ndarray]:
    idx = np.flatnonzero(ev.venue == venue)
    idx = idx[np.argsort(ev.t_exchange[idx], kind="stable")]
    return ev.t_exchange[idx], np.log((ev.bid_px[idx] + ev.ask_px[idx]) * 0.5)


def _corr_at(ev: BookEvents, lag_ns: int) -> float:
    (ta, xa), (tb, xb) = _mids(ev, BN), _mids(ev, HL)
    return float(hayashi_yoshida(ta, xa, tb, xb, [lag_ns])[1][0])


def test_the_pair_has_the_lag_the_estimator_finds() -> None:
    ev = _pair()
    assert placebos.lead_lag_ns(ev, BN, HL) == pytest.approx(LAG_NS, abs=40_000_000)
    assert _corr_at(ev, LAG_NS) > 0.5


def test_decoupled_keeps_the_followers_moves_and_removes_the_leaders() -> None:
    ev = _pair()
    dec = placebos.decoupled(ev)
    t0, x0 = _mids(ev, HL)
    t1, x1 = _mids(dec, HL)
    assert len(t1) == len(t0) and bool((np.diff(t1) > 0).all())
    r0, r1 = np.diff(np.exp(x0)), np.diff(np.exp(x1))  # price changes (the seam carries the level, not the moves)
    moves0, moves1 = np.sort(np.round(r0, 6)), np.sort(np.round(r1, 6))
    assert len(np.setdiff1d(moves1, moves0)) <= 1  # the same moves but at the seam
    assert np.abs(r1).max() <= np.abs(r0).max() + 1e-6  # the seam adds no jump
    assert np.std(r1) == pytest.approx(np.std(r0), rel=0.02)
    assert abs(_corr_at(dec, LAG_NS)) < 0.1 * _corr_at(ev, LAG_NS)
    # the leader is untouched
    assert np.array_equal(_mids(dec, BN)[1], _mids(ev, BN)[1])


def test_the_delayed_leader_arrives_after_the_follower() -> None:
    ev = _pair(recv_offset_ns=3_000_000)
    late = placebos.leader_delayed(ev)
    bn0, bn1 = ev.venue == BN, late.venue == BN
    assert np.array_equal(np.sort(late.t_exchange[bn1]), np.sort(ev.t_exchange[bn0]) + 5 * S)
    age0, age1 = ev.t_recv[bn0] - ev.t_exchange[bn0], late.t_recv[bn1] - late.t_exchange[bn1]
    assert np.array_equal(np.sort(age1), np.sort(age0))  # each book keeps its information age
    assert np.array_equal(late.t_exchange[~bn1], ev.t_exchange[~bn0])
    assert bool((np.diff(late.t_recv) >= 0).all())  # still in receive order
    assert abs(_corr_at(late, LAG_NS)) < 0.1 * _corr_at(ev, LAG_NS)


def test_moving_the_follower_back_by_the_estimated_lag_leaves_none() -> None:
    ev = _pair()
    lag = placebos.lead_lag_ns(ev, BN, HL, t_end=int(360 * S))  # estimated on the first part only
    zero = placebos.shift_venue(ev, HL, -int(lag))
    assert abs(placebos.lead_lag_ns(zero, BN, HL)) < 40_000_000


def test_the_models_lag_zero_market_has_no_lag_and_whole_catch_up() -> None:
    cfg = placebos.lag_zero_market(load_market("default", seed=3))
    assert (cfg.hl_lag_ms, cfg.hl_lag_sd_ms, cfg.catch_up, cfg.catch_up_late) == (0.0, 0.0, 1.0, 0.0)
    assert cfg.hl_own_jumps_per_min == load_market("default").hl_own_jumps_per_min  # the rest is the market's
    cfg.validate()


def test_a_start_outside_the_span_is_refused() -> None:
    with pytest.raises(ValueError, match="inside the span"):
        placebos.decoupled(_pair(60.0), at=1.0)
