"""Training data: the strategy's own incremental features (caerus.strategy.features, the one definition) run over
book events, with the target each row is trained to predict.

Books are replayed in the order and at the times the backtest feeds them to the strategy (caerus.research.backtest
.engine.prepare: t_seen from the latency model), one :class:`FeatureState` per instrument, so a row is exactly the
vector the live model signal would have computed at that book. Rows are taken at tradeable Binance books (where
entries are decided) once both venues have a book.

Target: Hyperliquid's mid move over the next ``horizon_ms`` in bps, ``(mid(t + H) - mid(t)) / mid(t)``, with
``mid`` the newest tradeable Hyperliquid book the strategy had seen (on the same t_seen clock). The decision nets it
of the half spread it pays to cross (``hl_half_spread_bps`` is kept per row). ``shift_ms`` moves the target's
window later (``[t + shift, t + shift + H]``): the look-ahead check (a shifted target must leave no edge). Rows
whose window passes the last Hyperliquid book are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from caerus.instruments import InstrumentSet
from caerus.research.backtest import engine
from caerus.research.backtest.events import BookEvents
from caerus.research.backtest.fills import FillRules
from caerus.research.backtest.latency import LatencyDraws, LatencyModel
from caerus.strategy.config import StrategyConfig
from caerus.strategy.features import F_BASIS_DEV, N_FEATURES, NAMES, SCHEMA_VERSION, FeatureState, schema
from caerus.wire import TRADEABLE, TRADEABLE_MASK, Venue

__all__ = ["NAMES", "SCHEMA_VERSION", "Dataset", "dataset", "schema"]
_BN = int(Venue.BINANCE)
_HL = int(Venue.HYPERLIQUID)


@dataclass(frozen=True)
class Dataset:
    """Rows in time order: features ``X`` (n x len(NAMES)), target ``y`` (bps), time ``t`` (t_seen ns), ``symbol``,
    ``half_spread`` (Hyperliquid half spread, bps) and ``naive`` (the naive rule's signal, basis - EWMA, bps)."""

    X: np.ndarray
    y: np.ndarray
    t: np.ndarray
    symbol: np.ndarray
    half_spread: np.ndarray
    naive: np.ndarray
    horizon_ms: float
    source: str

    def __len__(self) -> int:
        return len(self.y)

    def take(self, idx: np.ndarray) -> Dataset:
        return Dataset(self.X[idx], self.y[idx], self.t[idx], self.symbol[idx], self.half_spread[idx],
                       self.naive[idx], self.horizon_ms, self.source)

    @staticmethod
    def concat(parts: list[Dataset]) -> Dataset:
        """Several sources (seeds) one after another; each keeps its own times (folds split each by time)."""
        cols = {c: np.concatenate([getattr(p, c) for p in parts])
                for c in ("X", "y", "t", "symbol", "half_spread", "naive")}
        return Dataset(**cols, horizon_ms=parts[0].horizon_ms, source="; ".join(p.source for p in parts))


def dataset(events: BookEvents, instruments: InstrumentSet, *, horizon_ms: float = 1000.0,
            latency: LatencyModel | None = None, seed: int = 1, ewma_half_life_s: float = 3.0,
            shift_ms: float = 0.0, source: str = "") -> Dataset:
    """Features at every tradeable Binance book and the target over the next ``horizon_ms`` (see the module)."""
    latency = latency if latency is not None else LatencyModel.constant(0, 300_000)
    spec = engine.RunSpec(StrategyConfig(), instruments, latency, FillRules(), seed)
    _, recs, seen, _ = engine.prepare(events, spec, LatencyDraws(latency, seed))
    states = [FeatureState(ewma_half_life_s) for _ in range(max(len(instruments), 1))]
    n_inst = len(states)
    rows: list[list[float]] = []
    meta: list[tuple[int, int, float, float]] = []  # (t, symbol, hl mid, half spread)
    hl_t: list[list[int]] = [[] for _ in states]
    hl_mid: list[list[float]] = [[] for _ in states]
    for rec, now in zip(recs, seen, strict=True):
        sym = rec[2]
        if sym >= n_inst:
            continue
        st = states[sym]
        ready = st.update(rec, now)
        tradeable = (rec[1] & TRADEABLE_MASK) == TRADEABLE
        if rec[0] == _HL and tradeable:
            hl_t[sym].append(now)
            hl_mid[sym].append(st.hl_mid)
        if ready and rec[0] == _BN and tradeable:
            rows.append(list(st.x))
            meta.append((now, sym, st.hl_mid, st.hl_half_spread_bps))
    X = np.asarray(rows, dtype=np.float64).reshape(-1, N_FEATURES)
    m = np.asarray(meta, dtype=np.float64).reshape(-1, 4)
    t = m[:, 0].astype(np.int64)
    symbol = m[:, 1].astype(np.int64)
    y = np.full(len(t), np.nan)
    h0 = int(shift_ms * 1e6)
    h1 = h0 + int(horizon_ms * 1e6)
    for k in range(n_inst):
        rows_k = symbol == k
        ts = np.asarray(hl_t[k], dtype=np.int64)
        mids = np.asarray(hl_mid[k], dtype=np.float64)
        if not len(ts):
            continue
        tk = t[rows_k]
        inside = tk + h1 <= ts[-1]
        start = mids[np.searchsorted(ts, tk + h0, side="right") - 1] if h0 else m[rows_k, 2]
        end = mids[np.clip(np.searchsorted(ts, tk + h1, side="right") - 1, 0, None)]
        y[rows_k] = np.where(inside, (end - start) / m[rows_k, 2] * 1e4, np.nan)
    ok = ~np.isnan(y)
    return Dataset(X[ok], y[ok], t[ok], symbol[ok], m[ok, 3], X[ok, F_BASIS_DEV], horizon_ms, source)
