"""Placebo markets: the same books with the lead-lag taken out, built by code so a verdict can be checked against
markets that must say NO.

A verdict that a model makes money means little unless the same pipeline, run on a market with no edge to find,
says it does not. Each placebo keeps what could fool a careless test (the follower's own volatility, spreads, update
cadence, bursts; the leader's moves) and removes only the information flow from leader to follower:

* :func:`decoupled`: the follower's own path, started a third of the span later and wrapped around (its level
  carried over at the seam): the follower moves as much and as often as before, but not after the leader.
* :func:`shift_venue` with the leader and a positive shift (:func:`leader_delayed`): every leader book arrives
  ``shift`` later (several seconds, longer than any lag): the follower has already moved when the strategy sees why.
* a lag of 0: for the market model, the same market with every Binance move reaching Hyperliquid whole at its next
  block (:func:`lag_zero_market`); for captured books, the follower moved earlier by the lead-lag estimated on the
  training range (:func:`lead_lag_ns`, Hayashi-Yoshida; :func:`shift_venue` with a negative shift).

Times move together (``t_exchange``, and ``t_recv`` / ``t_publish`` where measured, so each book keeps its
information age); rows are put back in the order the source had (receive time, or venue time for the model's books,
which have no receive time yet).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from caerus.research.backtest.events import COLUMNS, BookEvents
from caerus.research.calibrate.estimators import hayashi_yoshida, peak_lag
from caerus.sim.core.market_config import MarketConfig
from caerus.wire import TRADEABLE, TRADEABLE_MASK, Venue

#: how far the leader's clock is moved in the delayed-leader placebo: longer than any lag worth trading (the study's
#: 600-700 ms, the emulator's lognormal lag with its 1.5 s late part) and than the target horizon
LEADER_DELAY_S = 5.0
#: where the decoupled follower's path starts, as a share of the span (far from 0 and 1: no overlap with itself)
DECOUPLE_AT = 1.0 / 3.0
#: lags searched for a capture's lead-lag (the lag-0 placebo): +-3 s in 10 ms steps
LAG_SEARCH_NS = np.arange(-3_000_000_000, 3_000_000_001, 10_000_000)


def _resorted(cols: dict[str, np.ndarray]) -> BookEvents:
    """Rows in the source's order: receive time when the source measured one, else venue time."""
    if bool((cols["t_recv"] != 0).any()):
        order = np.lexsort((cols["seq"], cols["venue"], cols["t_recv"]))
    else:
        order = np.lexsort((cols["seq"], cols["venue"], cols["t_exchange"]))
    return BookEvents(**{c: np.ascontiguousarray(cols[c][order]) for c in COLUMNS})


def _cols(events: BookEvents) -> dict[str, np.ndarray]:
    return {c: getattr(events, c).copy() for c in COLUMNS}


def shift_venue(events: BookEvents, venue: int, shift_ns: int) -> BookEvents:
    """Every book of ``venue`` ``shift_ns`` later (earlier when negative); receive and publish times that were
    measured move with it."""
    cols = _cols(events)
    rows = cols["venue"] == venue
    for c in ("t_exchange", "t_recv", "t_publish"):
        measured = rows & (cols[c] != 0) if c != "t_exchange" else rows
        cols[c][measured] += int(shift_ns)
    return _resorted(cols)


def leader_delayed(events: BookEvents, leader: int = int(Venue.BINANCE), shift_s: float = LEADER_DELAY_S) -> BookEvents:
    """The leader's books ``shift_s`` later: its moves reach the strategy after the follower made them."""
    return shift_venue(events, leader, int(shift_s * 1e9))


def decoupled(events: BookEvents, follower: int = int(Venue.HYPERLIQUID), at: float = DECOUPLE_AT) -> BookEvents:
    """The follower's own path from ``at`` of its span on, then its beginning, per instrument: the same moves, the
    same cadence, unrelated to the leader's. The wrapped part's prices are carried by the level difference across
    the seam (rounded to the follower's own price step), so the path has no jump there."""
    if not 0.0 < at < 1.0:
        raise ValueError(f"decoupled: the start must be inside the span (0 < at < 1), got {at}")
    cols = _cols(events)
    for sym in np.unique(cols["symbol"][cols["venue"] == follower]).tolist():
        rows = np.flatnonzero((cols["venue"] == follower) & (cols["symbol"] == sym))
        rows = rows[np.argsort(cols["t_exchange"][rows], kind="stable")]
        if len(rows) < 3:
            continue
        t = cols["t_exchange"][rows]
        t0, t1 = int(t[0]), int(t[-1])
        k = int(np.searchsorted(t, t0 + int((t1 - t0) * at)))
        if not 0 < k < len(rows):
            continue
        gap = int(np.median(np.diff(t))) or 1
        new_t = np.concatenate([t[k:] - (int(t[k]) - t0), t[:k] + (t1 - int(t[k])) + gap])
        src = np.concatenate([rows[k:], rows[:k]])
        mid = (cols["bid_px"][rows] + cols["ask_px"][rows]) * 0.5
        step = _price_step(cols["bid_px"][rows], cols["ask_px"][rows])
        carry = np.round((float(mid[-1]) - float(mid[0])) / step) * step
        new = {c: cols[c][src].copy() for c in COLUMNS}
        for c in ("bid_px", "ask_px"):
            new[c][len(rows) - k:] += carry
        # receive and publish times keep each book's own distance from its venue time
        for c in ("t_recv", "t_publish"):
            measured = new[c] != 0
            new[c][measured] += (new_t - new["t_exchange"])[measured]
        new["t_exchange"] = new_t
        new["seq"] = cols["seq"][rows]  # sequence numbers stay increasing in the new order
        for c in COLUMNS:
            cols[c][rows] = new[c]
    return _resorted(cols)


def _price_step(bid: np.ndarray, ask: np.ndarray) -> float:
    """The smallest price change the follower's quotes show (its tick, as far as the data tells)."""
    d = np.abs(np.diff(np.concatenate([bid, ask])))
    d = d[d > 1e-9]
    return float(d.min()) if len(d) else 1e-9


def lag_zero_market(cfg: MarketConfig) -> MarketConfig:
    """The market model with every Binance move reaching Hyperliquid whole at its next block: no lag, no partial or
    late catch-up (whose late part would be a lag of its own), nothing pending to fade."""
    return dataclasses.replace(cfg, hl_lag_ms=0.0, hl_lag_sd_ms=0.0, hl_lag_ms_by_symbol=(), catch_up=1.0,
                               catch_up_late=0.0)


def lead_lag_ns(events: BookEvents, leader: int, follower: int, symbol: int = 0,
                t_end: int | None = None) -> float:
    """How long the follower's mid trails the leader's (ns, on the venues' clocks): the Hayashi-Yoshida peak over
    +-3 s, from books before ``t_end`` only (the training range). NaN when either venue has too few books."""
    out = []
    for v in (leader, follower):
        sel = ((events.venue == v) & (events.symbol == symbol)
               & ((events.flags & TRADEABLE_MASK) == TRADEABLE))
        if t_end is not None:
            sel &= events.t_exchange < t_end
        idx = np.flatnonzero(sel)
        idx = idx[np.argsort(events.t_exchange[idx], kind="stable")]
        if len(idx) < 10:
            return float("nan")
        mid = (events.bid_px[idx] + events.ask_px[idx]) * 0.5
        out.append((events.t_exchange[idx], np.log(mid)))
    (ta, xa), (tb, xb) = out
    _, corr = hayashi_yoshida(ta, xa, tb, xb, LAG_SEARCH_NS)
    return peak_lag(LAG_SEARCH_NS, corr) if np.isfinite(corr).any() else float("nan")
