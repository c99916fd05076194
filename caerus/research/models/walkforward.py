"""Walk-forward splits by time (never shuffled), with a purge between training and validation rows.

The data's time span (per source: each seed's market is its own timeline) is cut into ``n_folds + 1`` equal blocks;
fold k trains on blocks 0..k and validates on block k + 1 (an expanding window). A training row's target looks
``horizon`` ahead, so training rows whose target window reaches into the validation block (t > val_start -
horizon - embargo) are purged; the embargo (default: one horizon more) also covers the features' memory of the
last second. Validation rows are never used to fit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Fold:
    k: int
    train: np.ndarray  # row indices
    val: np.ndarray
    val_start: int  # ns (per-source time: see ``source`` in :func:`folds`)
    val_end: int
    purged: int  # training rows dropped for touching the validation block


def folds(t: np.ndarray, n_folds: int, horizon_ns: int, embargo_ns: int | None = None,
          source: np.ndarray | None = None) -> list[Fold]:
    """Expanding walk-forward folds over rows at times ``t``; rows of each ``source`` are split on their own span
    and fold k gathers fold k of every source."""
    if n_folds < 1:
        raise ValueError(f"n_folds must be >= 1, got {n_folds}")
    embargo = horizon_ns if embargo_ns is None else embargo_ns
    src = np.zeros(len(t), dtype=np.int64) if source is None else np.asarray(source)
    out: list[Fold] = []
    for k in range(n_folds):
        train_parts, val_parts = [], []
        purged = 0
        v0 = v1 = 0
        for s in np.unique(src).tolist():
            idx = np.flatnonzero(src == s)
            ts = t[idx]
            edges = np.linspace(ts.min(), ts.max() + 1, n_folds + 2).astype(np.int64)
            v0, v1 = int(edges[k + 1]), int(edges[k + 2])
            in_val = (ts >= v0) & (ts < v1)
            before = ts < v0
            keep = before & (ts + horizon_ns + embargo <= v0)
            purged += int((before & ~keep).sum())
            train_parts.append(idx[keep])
            val_parts.append(idx[in_val])
        out.append(Fold(k, np.concatenate(train_parts), np.concatenate(val_parts), v0, v1, purged))
    return out
