"""Where training and test rows come from: the market model offline per seed, or a captured session, cut by time
into a training range (the first ``train_fraction`` of each timeline) and a held-out test range (the rest).

Every split is by time; the training range of each source is written into the model file, and the out-of-sample
comparison (caerus.research.models.oos) replays only the test range (and seeds never trained on).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from caerus.research.backtest import sources
from caerus.research.backtest.latency import LatencyModel
from caerus.research.training_data import Dataset, dataset
from caerus.sim.core.market_config import load_market


@dataclass(frozen=True)
class Timeline:
    """One source's books and where its training range ends."""

    name: str
    loaded: sources.Loaded
    t_split: int  # exchange-time ns: [start, t_split) trains, [t_split, end] tests

    @property
    def t_first(self) -> int:
        return int(self.loaded.events.t_exchange.min())

    @property
    def t_last(self) -> int:
        return int(self.loaded.events.t_exchange.max())


def market_events(market: str, seed: int, duration_s: float) -> sources.Loaded:
    """The market model ``market`` (preset or TOML) offline for ``duration_s`` simulated seconds."""
    cfg = load_market(market, seed=seed)
    ev = sources.offline_events(cfg, duration_s)
    insts = sources._catalogue_instruments(tuple(cfg.symbols))
    return sources.Loaded(ev, insts, f"market {market} seed {seed}, {duration_s:g} s simulated")


def timeline(name: str, loaded: sources.Loaded, train_fraction: float) -> Timeline:
    t = loaded.events.t_exchange
    t0, t1 = int(t.min()), int(t.max())
    return Timeline(name, loaded, t0 + int((t1 - t0) * train_fraction))


def session_events(path: Path) -> sources.Loaded:
    return sources.from_session(path)


def training_rows(lines: list[Timeline], horizon_ms: float, shift_ms: float = 0.0, *,
                  latency: LatencyModel | None = None, seed: int = 1, order_ns: int = 0,
                  block_ns: int = 0) -> tuple[Dataset, np.ndarray]:
    """Rows of every timeline's training range (targets that end past the split are dropped: no row looks into
    the test range), and each row's timeline index (folds split each timeline on its own). ``latency``: when the
    strategy sees each book (default: the dataset's own, caerus.research.training_data), as the backtest it is scored
    with draws it; ``order_ns`` and ``block_ns``: where the target's window opens and closes (the dataset's)."""
    parts, src = [], []
    for k, line in enumerate(lines):
        ev = line.loaded.events
        train_ev = ev.take(np.flatnonzero(ev.t_exchange < line.t_split))
        ds = dataset(train_ev, line.loaded.instruments, horizon_ms=horizon_ms, shift_ms=shift_ms, source=line.name,
                     latency=latency, seed=seed + k, order_ns=order_ns, block_ns=block_ns)
        parts.append(ds)
        src.append(np.full(len(ds), k))
    return Dataset.concat(parts), np.concatenate(src)
