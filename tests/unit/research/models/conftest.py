"""Shared data for the model tests: a market model offline, a few simulated minutes per seed -- the ``default``
market, or ``known-edge`` (an edge that survives costs by construction) where a test needs a tradeable model."""

from __future__ import annotations

import functools
import json
from pathlib import Path

from caerus.research.models.data import Timeline, market_events, timeline, training_rows
from caerus.research.models.train import TrainOptions, train


@functools.lru_cache(maxsize=8)
def line(seed: int, minutes: float = 8.0, train_fraction: float = 0.75, market: str = "default") -> Timeline:
    return timeline(f"seed {seed}", market_events(market, seed, minutes * 60.0), train_fraction)


def known_edge_model(folder: Path) -> Path:
    """A tradeable linear model trained on the known-edge market, written as ``folder/model.json``."""
    ds, src = training_rows([line(1, market="known-edge")], 1000.0)
    doc = train(ds, src, TrainOptions(n_folds=3, kinds=("linear",)), {"source": "test"})
    assert doc["tradeable"], doc["decline"]
    p = folder / "model.json"
    p.write_text(json.dumps(doc))
    return p
