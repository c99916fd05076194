"""Shared data for the model tests: the default market model offline, a few simulated minutes per seed."""

from __future__ import annotations

import functools

from caerus.research.models.data import Timeline, market_events, timeline


@functools.lru_cache(maxsize=8)
def line(seed: int, minutes: float = 8.0, train_fraction: float = 0.75) -> Timeline:
    return timeline(f"seed {seed}", market_events("default", seed, minutes * 60.0), train_fraction)
