"""Training data: the strategy's own incremental features (caerus.strategy.feature_vector, the one definition) run over
book events, with the target each row is trained to predict.

Books are replayed in the order and at the times the backtest feeds them to the strategy (caerus.research.backtest
.engine.prepare: t_seen from the latency model), one :class:`FeatureState` per instrument, so a row is exactly the
vector the live model signal would have computed at that book. Rows are taken at tradeable Binance books (where
entries are decided) once both venues have a book.

Target: the move an order sent at the row's time could trade, on the venue's clock: Hyperliquid's mid over the
next ``horizon_ms`` in bps, ``(mid(t + H) - mid(t)) / mid(t)``, with ``t`` the row's t_seen plus the order's way
to the venue (``order_ns``) and ``mid(T)`` the book an order reaching the venue at ``T`` meets: the venue's own book
(``t_exchange``), and on Hyperliquid the book after the next block (``block_ns``; the backtest's fill rule,
caerus.research.backtest.fills.book_met). It is not the mid the strategy had *seen*: Hyperliquid's public book
reaches us ~0.2-0.3 s late, and a target on that delayed view, or on the book between two blocks, would score moves
that were already made when the order arrived.

Costs, per row, on the same venue clock: ``entry_half_spread`` (bps) at ``t`` and ``exit_half_spread`` at
``t + H`` (what crossing in and out of Hyperliquid's spread costs); training adds both legs' taker fees
(caerus.research.models.train). ``half_spread`` is the half spread the strategy *saw*, which the live signal nets
its prediction of (as caerus.strategy.model_signal does). ``shift_ms`` moves the target's window later
(``[t + shift, t + shift + H]``): the look-ahead check (a shifted target must leave no edge). Rows whose window
starts before the first or ends after the last Hyperliquid book are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from caerus.instruments import InstrumentSet
from caerus.research.backtest import engine
from caerus.research.backtest.events import BookEvents
from caerus.research.backtest.fills import FillRules, book_met
from caerus.research.backtest.latency import LatencyDraws, LatencyModel
from caerus.strategy.config import StrategyConfig
from caerus.strategy.feature_vector import F_BASIS_DEV, N_FEATURES, NAMES, SCHEMA_VERSION, FeatureState, schema
from caerus.wire import TRADEABLE, TRADEABLE_MASK, Venue

__all__ = ["NAMES", "SCHEMA_VERSION", "Dataset", "dataset", "schema"]
_BN = int(Venue.BINANCE)
_HL = int(Venue.HYPERLIQUID)
_ROW_COLUMNS = ("X", "y", "t", "symbol", "half_spread", "naive", "entry_half_spread", "exit_half_spread")


@dataclass(frozen=True)
class Dataset:
    """Rows in time order: features ``X`` (n x len(NAMES)), target ``y`` (bps), time ``t`` (t_seen ns), ``symbol``,
    ``half_spread`` (Hyperliquid half spread the strategy saw, bps), ``naive`` (the naive rule's signal, basis -
    EWMA, bps) and the venue's half spreads at the target window's start and end (``entry_half_spread``,
    ``exit_half_spread``, bps: the spread a round trip crosses)."""

    X: np.ndarray
    y: np.ndarray
    t: np.ndarray
    symbol: np.ndarray
    half_spread: np.ndarray
    naive: np.ndarray
    entry_half_spread: np.ndarray
    exit_half_spread: np.ndarray
    horizon_ms: float
    source: str

    def __len__(self) -> int:
        return len(self.y)

    def take(self, idx: np.ndarray) -> Dataset:
        return Dataset(self.X[idx], self.y[idx], self.t[idx], self.symbol[idx], self.half_spread[idx],
                       self.naive[idx], self.entry_half_spread[idx], self.exit_half_spread[idx], self.horizon_ms,
                       self.source)

    @staticmethod
    def concat(parts: list[Dataset]) -> Dataset:
        """Several sources (seeds) one after another; each keeps its own times (folds split each by time)."""
        cols = {c: np.concatenate([getattr(p, c) for p in parts])
                for c in _ROW_COLUMNS}
        return Dataset(**cols, horizon_ms=parts[0].horizon_ms, source="; ".join(p.source for p in parts))


def dataset(events: BookEvents, instruments: InstrumentSet, *, horizon_ms: float = 1000.0,
            latency: LatencyModel | None = None, seed: int = 1, ewma_half_life_s: float = 3.0,
            shift_ms: float = 0.0, source: str = "", order_ns: int = 0, block_ns: int = 0) -> Dataset:
    """Features at every tradeable Binance book and the target over the next ``horizon_ms`` (see the module).
    ``order_ns``: how long an order takes to reach the venue (the window's ends move that much later); ``block_ns``:
    Hyperliquid's block interval, so each end is the book the order would meet (caerus.research.backtest.fills.
    book_met; 0: continuous matching)."""
    latency = latency if latency is not None else LatencyModel.constant(0, 300_000)
    spec = engine.RunSpec(StrategyConfig(), instruments, latency, FillRules(), seed)
    _, recs, seen, _ = engine.prepare(events, spec, LatencyDraws(latency, seed))
    states = [FeatureState(ewma_half_life_s) for _ in range(max(len(instruments), 1))]
    n_inst = len(states)
    rows: list[list[float]] = []
    meta: list[tuple[int, float]] = []  # (symbol, seen half spread)
    times: list[int] = []  # t_seen, kept as integers (a float64 holds epoch ns to ~256 ns only)
    for rec, now in zip(recs, seen, strict=True):
        sym = rec[2]
        if sym >= n_inst:
            continue
        st = states[sym]
        ready = st.update(rec, now)
        if ready and rec[0] == _BN and (rec[1] & TRADEABLE_MASK) == TRADEABLE:
            rows.append(list(st.x))
            times.append(now)
            meta.append((sym, st.hl_half_spread_bps))
    X = np.asarray(rows, dtype=np.float64).reshape(-1, N_FEATURES)
    m = np.asarray(meta, dtype=np.float64).reshape(-1, 2)
    t_seen = np.asarray(times, dtype=np.int64)
    t = t_seen + int(order_ns)
    symbol = m[:, 0].astype(np.int64)
    y = np.full(len(t), np.nan)
    entry_hs = np.full(len(t), np.nan)
    exit_hs = np.full(len(t), np.nan)
    h0 = int(shift_ms * 1e6)
    h1 = h0 + int(horizon_ms * 1e6)
    for k in range(n_inst):
        ts, mids, half = venue_book(events, _HL, k)
        rows_k = np.flatnonzero(symbol == k)
        if not len(ts) or not len(rows_k):
            continue
        a, b = t[rows_k] + h0, t[rows_k] + h1
        ia = book_met(ts, a, block_ns)
        ib = book_met(ts, b, block_ns)
        inside = (ia >= 0) & (b <= ts[-1])
        ia, ib = np.maximum(ia, 0), np.maximum(ib, 0)
        y[rows_k] = np.where(inside, (mids[ib] - mids[ia]) / mids[ia] * 1e4, np.nan)
        entry_hs[rows_k] = half[ia]
        exit_hs[rows_k] = half[ib]
    ok = ~np.isnan(y)
    return Dataset(X[ok], y[ok], t_seen[ok], symbol[ok], m[ok, 1], X[ok, F_BASIS_DEV], entry_hs[ok],
                   exit_hs[ok], horizon_ms, source)


def venue_book(events: BookEvents, venue: int, symbol: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t_exchange, mid, half spread in bps) of ``venue``'s tradeable books of ``symbol``, in venue time order:
    the book as the venue itself had it (what an order arriving then would meet)."""
    sel = np.flatnonzero((events.venue == venue) & (events.symbol == symbol)
                         & ((events.flags & TRADEABLE_MASK) == TRADEABLE))
    sel = sel[np.argsort(events.t_exchange[sel], kind="stable")]
    bid, ask = events.bid_px[sel], events.ask_px[sel]
    mid = (bid + ask) * 0.5
    return events.t_exchange[sel].astype(np.int64), mid, (ask - bid) * 0.5 / mid * 1e4
