"""The market model run offline (no sockets, no clock): the books a feed would have received, as fast as the model
can make them -- for backtests, market checks and calibration round trips.

What the feeds see of the emulator (caerus.sim.core.driver): every Binance quote (bookTicker), and a Hyperliquid coin's
block only when its top changed (the bbo channel). The venues stamp event times in milliseconds (Binance ``E``,
Hyperliquid ``time``), so ``t_exchange`` is ``epoch_ns`` + the scheduled time floored to the ms; ``t_ns`` keeps the
scheduled time itself. Hyperliquid's ``seq`` counts the coin's books (1, 2, ...), Binance's is the update id.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from caerus.sim.core.market import BinanceQuote, MarketConfig, MarketModel
from caerus.wire import Venue

#: 2026-01-01T00:00:00Z: exchange times of an offline run count from here
OFFLINE_EPOCH_NS = 1_767_225_600_000_000_000
_MS = 1_000_000
_BINANCE = int(Venue.BINANCE)
_HYPERLIQUID = int(Venue.HYPERLIQUID)


class OfflineBook(NamedTuple):
    """One top of book as a feed would publish it (venue: caerus.wire.Venue code; symbol: index in cfg.symbols)."""

    venue: int
    symbol: int
    seq: int
    t_ns: int  # scheduled time, from the start of the run
    t_exchange: int  # what the venue stamps: epoch + t_ns floored to the millisecond
    bid_px: float
    bid_qty: float
    ask_px: float
    ask_qty: float


def books(cfg: MarketConfig, duration_s: float, epoch_ns: int = OFFLINE_EPOCH_NS) -> Iterator[OfflineBook]:
    """Every book of the first ``duration_s`` seconds of the model ``cfg``, in time order."""
    if not duration_s > 0:
        raise ValueError(f"offline market duration must be > 0 s, got {duration_s!r}")
    end = int(duration_s * 1e9)
    hl_seq = [0] * len(cfg.symbols)
    for ev in MarketModel(cfg).events():
        if ev.t_ns >= end:
            return
        t_exchange = (epoch_ns + ev.t_ns) // _MS * _MS
        if isinstance(ev, BinanceQuote):
            yield OfflineBook(_BINANCE, ev.symbol, ev.update_id, ev.t_ns, t_exchange, ev.bid, ev.bid_qty, ev.ask,
                              ev.ask_qty)
        elif ev.changed and ev.bid is not None and ev.ask is not None:
            hl_seq[ev.symbol] += 1
            yield OfflineBook(_HYPERLIQUID, ev.symbol, hl_seq[ev.symbol], ev.t_ns, t_exchange, ev.bid.px, ev.bid.sz,
                              ev.ask.px, ev.ask.sz)


def columns(cfg: MarketConfig, duration_s: float, epoch_ns: int = OFFLINE_EPOCH_NS) -> dict[str, list]:
    """The same books as columns (``OfflineBook``'s field names, one list each): what a columnar store or
    caerus.research.backtest's BookEvents.from_columns takes."""
    rows = list(books(cfg, duration_s, epoch_ns))
    if not rows:
        return {f: [] for f in OfflineBook._fields}
    return {f: list(col) for f, col in zip(OfflineBook._fields, zip(*rows, strict=True), strict=True)}
