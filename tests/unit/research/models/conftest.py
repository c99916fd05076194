"""Shared data for the model tests: a market model offline, a few simulated minutes per seed -- the ``default``
market, or ``known-edge`` (an edge that survives costs by construction) where a test needs a tradeable model."""

from __future__ import annotations

import functools

from caerus.research.models.data import Timeline, market_events, timeline


@functools.lru_cache(maxsize=8)
def line(seed: int, minutes: float = 8.0, train_fraction: float = 0.75, market: str = "default") -> Timeline:
    return timeline(f"seed {seed}", market_events(market, seed, minutes * 60.0), train_fraction)
