"""FeatureState's hot-path form computes what its plainer reference form computes, bit for bit: the vector after
every book (the reference's schema-1 vector without the features schema 2 removed) and every piece of state the two
share, over the default market's books, with invalid books mixed in, and through a burst of more Binance books
within a horizon than the ring keeps (the pointers' clamp)."""

from __future__ import annotations

import random

import pytest

from caerus.research.backtest import engine
from caerus.research.backtest.fills import FillRules
from caerus.research.backtest.latency import LatencyDraws, LatencyModel
from caerus.strategy.config import StrategyConfig
from caerus.strategy.feature_vector import NAMES, REMOVED, RING, SCHEMA_VERSION, FeatureState
from caerus.wire import BookFlags, Venue
from tests.unit.research.models.conftest import line
from tests.unit.strategy.reference_features import NAMES_V1, ReferenceFeatureState

BN = int(Venue.BINANCE)
_SHARED = [s for s in ReferenceFeatureState.__slots__ if s in FeatureState.__slots__ and s != "x"]  # x: per book
_V1_COLUMNS = [NAMES_V1.index(n) for n in NAMES]  # where each of this schema's features is in the reference's vector


def test_this_schema_is_schema_1_without_the_removed_features() -> None:
    # what lets the schema-1 reference check this schema: nothing added, nothing renamed, order kept
    assert SCHEMA_VERSION == 2
    assert REMOVED[2] == ("bn_ofi", "hl_block_phase")
    assert tuple(n for n in NAMES_V1 if n not in REMOVED[2]) == NAMES


def _books(seed: int) -> tuple[list[tuple], list[int]]:
    ln = line(seed)
    lat = LatencyModel.constant(0, 300_000)
    spec = engine.RunSpec(StrategyConfig(), ln.loaded.instruments, lat, FillRules(), seed)
    _, recs, seen, _ = engine.prepare(ln.loaded.events, spec, LatencyDraws(lat, seed))
    return list(recs), list(seen)


def _invalidate(recs: list[tuple], share: float, seed: int) -> list[tuple]:
    """``share`` of the books made untradeable (flags 0 or STALE), as a feed's rejects and stale marks are."""
    rng = random.Random(seed)
    out = []
    for r in recs:
        u = rng.random()
        if u < share:
            r = (r[0], int(BookFlags.VALID | BookFlags.STALE) if u < share / 2 else 0, *r[2:])
        out.append(r)
    return out


def _compare(recs: list[tuple], seen: list[int]) -> int:
    """Feed both forms; assert equality after every book; the number of full vectors compared."""
    ref, fast = ReferenceFeatureState(), FeatureState()
    full = 0
    for k, (r, t) in enumerate(zip(recs, seen, strict=True)):
        a = ref.update(r, t)
        b = fast.update(r, t)
        assert a == b, k
        if a:
            want = [ref.x[i] for i in _V1_COLUMNS]
            assert fast.x == want, (k, [NAMES[i] for i, (u, v) in enumerate(zip(want, fast.x, strict=True)) if u != v])
            full += 1
    for s in _SHARED:
        assert getattr(fast, s) == getattr(ref, s), s
    return full


@pytest.mark.parametrize("seed", [1, 2])
def test_hot_path_form_equals_the_reference_bit_for_bit(seed: int) -> None:
    recs, seen = _books(seed)
    assert _compare(recs, seen) > 20_000
    assert _compare(_invalidate(recs, 0.03, seed), seen) > 20_000


@pytest.mark.parametrize("venue", [int(Venue.BINANCE), int(Venue.HYPERLIQUID)])
def test_a_burst_longer_than_the_ring_moves_the_pointers_as_the_reference_does(venue: int) -> None:
    recs, seen = _books(1)
    burst = [r for r in recs if r[0] == venue][: RING + 1500]
    cut = 3000
    # RING + 1500 books of one venue 5 us apart (7.5 ms in all, inside every horizon), then the rest of the session
    burst_t = [seen[cut] + 5_000 * k for k in range(len(burst))]
    shift = burst_t[-1] - seen[cut] + 1
    recs2 = recs[:cut] + burst + recs[cut:]
    seen2 = seen[:cut] + burst_t + [t + shift for t in seen[cut:]]
    assert len(burst) == RING + 1500
    assert _compare(recs2, seen2) > 20_000
    fast = FeatureState()
    for r, t in zip(recs2[: cut + len(burst)], seen2[: cut + len(burst)], strict=True):
        fast.update(r, t)
    # the clamp ran: the oldest pointer is inside the ring
    assert (fast._p1000 >= fast._bn_n - RING) if venue == BN else (fast._ph >= fast._hl_n - RING)
