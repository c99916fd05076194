"""The feature vector: its incremental state allocates nothing per book, it is what the live decision object and
the training data both compute, and a shifted target leaves no edge (no look-ahead)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from caerus.research.backtest import engine
from caerus.research.backtest.events import BookEvents
from caerus.research.backtest.fills import FillRules
from caerus.research.backtest.latency import LatencyDraws, LatencyModel
from caerus.research.training_data import dataset
from caerus.strategy.config import StrategyConfig
from caerus.strategy.feature_vector import F_BASIS_DEV, NAMES, FeatureState
from caerus.strategy.latency_arb import LatencyArb
from caerus.wire import Venue
from tests.unit.research.models.conftest import line

BN = int(Venue.BINANCE)
HL = int(Venue.HYPERLIQUID)


def _records(seed: int = 1) -> tuple[list[tuple], list[int]]:
    ln = line(seed)
    lat = LatencyModel.constant(0, 300_000)
    spec = engine.RunSpec(StrategyConfig(), ln.loaded.instruments, lat, FillRules(), seed)
    _, recs, seen, _ = engine.prepare(ln.loaded.events, spec, LatencyDraws(lat, seed))
    return recs, seen


@pytest.mark.slow
def test_feature_updates_allocate_nothing_per_book() -> None:
    recs, seen = _records()
    st = FeatureState()
    later = seen[-1] - seen[0] + 1  # the same books again, later: time keeps moving forward
    for r, t in zip(recs, seen, strict=True):  # warm-up: both venues' rings filled (they hold RING mids) ...
        st.update(r, t)
    tracemalloc.start()  # traced from here: what the measured pass frees was allocated under tracing
    for r, t in zip(recs, seen, strict=True):  # ... with times owned by the rings alone, as in a live loop
        st.update(r, t + later)
    assert st._hl_n > 4096 and st._bn_n > 4096
    x_id = id(st.x)
    n = len(recs)
    later *= 2
    base = tracemalloc.take_snapshot()
    for r, t in zip(recs, seen, strict=True):
        st.update(r, t + later)
    grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(base, "filename") if s.size_diff > 0)
    tracemalloc.stop()
    assert id(st.x) == x_id and len(st.x) == len(NAMES)  # the same list, rewritten in place
    assert n > 20_000
    assert grown < 16 * 1024, grown  # a float kept per book would be > 480 KB


@pytest.mark.slow
def test_training_rows_are_the_live_vector_and_the_naive_signal() -> None:
    """The dataset's rows are what a live FeatureState holds at those books, and its basis_dev is exactly the
    naive LatencyArb's signal at the same books."""
    ln = line(1)
    ds = dataset(ln.loaded.events, ln.loaded.instruments, horizon_ms=1000.0)
    recs, seen = _records()
    st = FeatureState()
    arb = LatencyArb(StrategyConfig())
    live, naive = [], []
    for r, t in zip(recs, seen, strict=True):
        ready = st.update(r, t)
        arb.on_book(r, t)
        if ready and r[0] == BN:
            live.append(list(st.x))
            naive.append(arb.signal)
    n = len(ds)  # rows in order; the last second's rows have no target yet and are dropped
    assert n > 10_000 and len(live) - n < 200
    assert np.array_equal(np.asarray(live)[:n], ds.X)
    assert np.array_equal(np.asarray(naive)[:n], ds.X[:, F_BASIS_DEV])


@pytest.mark.slow
def test_shifting_the_target_makes_the_edge_vanish() -> None:
    """Features predict the next second's Hyperliquid move; the same features against a move 5-6 s later (beyond
    what they can know) have no correlation: the features hold no future information."""
    ln = line(2, minutes=6.0)
    now = dataset(ln.loaded.events, ln.loaded.instruments, horizon_ms=1000.0)
    later = dataset(ln.loaded.events, ln.loaded.instruments, horizon_ms=1000.0, shift_ms=5000.0)
    n_now, n_later = len(now), len(later)
    c_now = abs(np.corrcoef(now.naive, now.y)[0, 1])
    c_later = abs(np.corrcoef(later.naive, later.y)[0, 1])
    assert n_now > 20_000 and n_later > 20_000
    assert c_now > 0.2
    # 6 minutes hold ~360 independent 1 s targets: a correlation with none has an SE of ~0.05, so the bound is 3 SE
    # (it was 0.05, one SE: on the default market before its quote arrivals were refit, issue 46, seeds 1-4 read
    # 0.026-0.045, and the same market with other arrival settings 0.001-0.124; the refit market reads 0.05-0.18 on
    # seeds 1-4, this seed 0.087) and well below the real target's
    assert c_later < 0.16
    assert c_later < c_now / 2


@pytest.mark.slow
def test_the_target_is_the_move_an_order_could_trade_not_the_one_it_saw() -> None:
    """A Binance book at 10 ms, a Hyperliquid block at 40 ms moving the mid 100 -> 110 and nothing after: an order
    reaching the venue 5 ms after the decision lands in that block, so the move is not tradeable (y = 0); without the
    block clock (continuous matching) the same row scores the whole 1,000 bps move."""
    rows = [(HL, 0, 99.0, 101.0), (BN, 10, 99.0, 101.0), (HL, 40, 109.0, 111.0), (BN, 1500, 109.0, 111.0),
            (HL, 2500, 109.0, 111.0), (BN, 3000, 109.0, 111.0)]
    cols = {"venue": [r[0] for r in rows], "flags": [1] * len(rows), "symbol": [0] * len(rows),
            "seq": list(range(len(rows))), "t_exchange": [r[1] * 1_000_000 for r in rows],
            "t_recv": [r[1] * 1_000_000 for r in rows], "bid_px": [r[2] for r in rows], "bid_qty": [1.0] * len(rows),
            "ask_px": [r[3] for r in rows], "ask_qty": [1.0] * len(rows)}
    ev = BookEvents.from_columns(cols)
    lat = LatencyModel.constant(0, 0)
    insts = line(1).loaded.instruments
    blocked = dataset(ev, insts, horizon_ms=1000.0, latency=lat, order_ns=5_000_000, block_ns=70_000_000)
    free = dataset(ev, insts, horizon_ms=1000.0, latency=lat, order_ns=5_000_000, block_ns=0)
    assert len(blocked) >= 1 and len(free) == len(blocked)
    first = blocked.t == 10_000_000
    assert blocked.y[first].tolist() == [0.0]
    assert free.y[first].tolist() == [pytest.approx(1000.0)]
