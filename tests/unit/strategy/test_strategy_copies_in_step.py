"""The strategy's deliberate hot-path copies stay in step: ModelArb's entry guards are LatencyArb's, and
FeatureState tracks the books (touch, times, basis, EWMA) exactly as LatencyArb does.

Each copy is inlined on purpose (a call per book costs more than the work it saves writing twice) and says so in a
comment naming the test here that fails when one copy is edited without the other."""

from __future__ import annotations

import random

from caerus.strategy.config import StrategyConfig
from caerus.strategy.feature_vector import FeatureState
from caerus.strategy.latency_arb import LatencyArb
from caerus.strategy.model_signal import ModelArb
from caerus.wire import BookFlags, Venue
from tests.fixtures.pipeline import make_book
from tests.kit.in_step import block

MS = 1_000_000
T0 = 1_700_000_000_000_000_000

# the slots FeatureState shares with LatencyArb: the books as a signal tracks them, the basis and its EWMA
SHARED = ("basis", "bn_ask", "bn_bid", "bn_mid", "bn_ok", "bn_seen", "bn_t_recv", "ewma", "ewma_t", "hl_ask",
          "hl_bid", "hl_mid", "hl_ok", "hl_seen", "hl_t_exchange", "hl_t_recv", "start_t")


def test_model_arb_entry_guards_are_latency_arb_s() -> None:
    # the cooldown and worst-case position guards, inlined in both on_book paths (deliberate copies)
    first, last = "if now - self.last_fire_t < self._cooldown:", "self.guards[G_POSITION] += 1"
    naive = block(LatencyArb.on_book, first, last)
    assert len(naive) == 7
    assert block(ModelArb.on_book, first, last) == naive


def test_feature_state_tracks_the_books_as_latency_arb_does() -> None:
    # the same books, some not tradeable, both venues, at uneven times: every shared slot the same after each
    arb = LatencyArb(StrategyConfig())
    feat = FeatureState(StrategyConfig().ewma_half_life_s)
    rng = random.Random(7)
    assert set(SHARED) <= set(LatencyArb.__slots__) & set(FeatureState.__slots__)
    now = T0
    for k in range(2000):
        now += rng.randrange(1, 40) * MS
        venue = Venue.BINANCE if rng.random() < 0.8 else Venue.HYPERLIQUID
        flags = int(BookFlags.VALID) if rng.random() < 0.9 else int(BookFlags.STALE | BookFlags.VALID)
        bid = 95_000.0 + rng.uniform(-50.0, 50.0) + (0.0 if venue == Venue.BINANCE else rng.uniform(-5.0, 5.0))
        book = make_book(venue, bid, bid + rng.choice((0.1, 0.5, 1.0)), now - rng.randrange(0, 3) * MS,
                         flags=flags, t_exchange=now - 2 * MS)
        arb.on_book(book, now)
        feat.update(book, now)
        for name in SHARED:
            assert getattr(arb, name) == getattr(feat, name), (k, name)
    assert arb.start_t and arb.hl_seen and arb.bn_seen and arb.ewma != 0.0  # the walk reached every branch
