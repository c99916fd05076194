"""The emulated Binance order book: a persistent set of price levels every depth stream and snapshot is cut from.

Each bookTicker quote from the market model becomes one book update (same update id): the top levels are set
to the quote, levels the quote crossed are removed, a few levels deeper change size, and the book is refilled /
trimmed to ``levels`` per side. Every update records exactly which levels changed (size 0: removed), so:

* the diff stream (``@depth``, ``@depth@100ms``, ``@depth@500ms``) is the merged changes since the stream's last
  event, chained ``pu`` = previous ``u``, ``U`` = ``pu + 1`` (a client applying them to a ``GET /fapi/v1/depth``
  snapshot ends up with exactly this book);
* the partial streams (``@depth5/10/20``) and the REST snapshot are the top of the same book.

Pure and seeded: no sockets, no clock.
"""

from __future__ import annotations

import collections
import random
from dataclasses import dataclass

from caerus.sim.core.market import BINANCE_QTY_STEP, BINANCE_TICK, BinanceQuote, round_to

LEVELS = 50  # per side; the REST snapshot serves at most this many
LOG_UPDATES = 4096  # recent updates kept for batched diff streams (a 500 ms batch holds ~50-200)

Level = tuple[float, float]


@dataclass(frozen=True, slots=True)
class DepthUpdate:
    """One book update: the quote's id, the id before it, and the levels it changed (size 0 = removed)."""

    update_id: int
    prev_id: int
    t_ns: int
    bids: tuple[Level, ...]
    asks: tuple[Level, ...]


@dataclass(frozen=True, slots=True)
class DepthEvent:
    """What one diff-stream event carries: ``U``/``u``/``pu`` and the merged level changes."""

    first_id: int
    last_id: int
    prev_id: int
    t_ns: int
    bids: tuple[Level, ...]
    asks: tuple[Level, ...]


class DepthBook:
    """One Binance symbol's book (the driver keeps one per emulated symbol)."""

    def __init__(self, seed: int, levels: int = LEVELS, tick: float = BINANCE_TICK,
                 step: float = BINANCE_QTY_STEP) -> None:
        self.levels = levels
        self.tick, self.step = tick, step  # the symbol's price grid and quantity step (BTCUSDT's by default)
        self.bids: dict[float, float] = {}
        self.asks: dict[float, float] = {}
        self.update_id = 0
        self.t_ns = 0
        self.log: collections.deque[DepthUpdate] = collections.deque(maxlen=LOG_UPDATES)
        self._best: dict[int, float] = {}  # side -> best price
        self._rng = random.Random(seed * 7919 + 3)

    # -- updates ---------------------------------------------------------------------------------------------
    def apply(self, q: BinanceQuote, rebuild: bool = False) -> DepthUpdate:
        """Move the book to quote ``q`` and record what changed. ``rebuild``: start a fresh book at ``q`` (every
        old level is recorded as removed), used when the book was not kept up while nobody read it."""
        changed_b: dict[float, float] = {}
        changed_a: dict[float, float] = {}
        if rebuild:
            changed_b = dict.fromkeys(self.bids, 0.0)
            changed_a = dict.fromkeys(self.asks, 0.0)
            self.bids.clear()
            self.asks.clear()
            self._best.clear()
        self._side(self.bids, q.bid, q.bid_qty, -1, changed_b)
        self._side(self.asks, q.ask, q.ask_qty, +1, changed_a)
        prev = self.update_id or q.update_id - 1
        self.update_id, self.t_ns = q.update_id, q.t_ns
        upd = DepthUpdate(q.update_id, prev, q.t_ns, tuple(sorted(changed_b.items(), reverse=True)),
                          tuple(sorted(changed_a.items())))
        self.log.append(upd)
        return upd

    def _side(self, book: dict[float, float], best: float, qty: float, side: int, changed: dict[float, float]) -> None:
        """Move one side (``side`` -1 bids, +1 asks) to a new best level. Kept cheap (~20 us): the driver runs it
        per quote between sends, so only a price move scans the side."""
        rng = self._rng
        old_best = self._best.get(side)
        if old_best is None or best != old_best:
            if old_best is not None and (old_best - best) * side < 0:
                # The new best crossed levels: they are gone (bids above the new best bid, asks below the ask).
                for px in [p for p in book if (p - best) * side < 0]:
                    del book[px]
                    changed[px] = 0.0
            # Levels left far behind by a big move are stale: a book spans about 3 ticks per level.
            span = self.levels * 3 * self.tick
            for px in [p for p in book if abs(p - best) > span]:
                del book[px]
                changed[px] = 0.0
            # The new best is away from the next level: fill some of the gap behind it.
            nxt = min(book, key=lambda p: p * side) if book else None
            if nxt is not None and nxt != best:
                for k in range(1, min(round(abs(nxt - best) / self.tick), 6)):
                    if rng.random() < 0.5:
                        px = round_to(best + side * k * self.tick, self.tick)
                        book[px] = changed[px] = self._qty()
            self._best[side] = best
        book[best] = qty
        changed[best] = qty
        # A couple of deeper levels change size, as other traders add and cancel.
        keys = list(book)
        for _ in range(2):
            px = keys[rng.randrange(len(keys))]
            if px != best:
                book[px] = changed[px] = self._qty()
        # Refill to ``levels`` outward from the deepest level, then trim anything beyond.
        if len(book) < self.levels:
            deepest = max(book, key=lambda p: p * side)
            while len(book) < self.levels:
                deepest = round_to(deepest + side * self.tick * (1 if rng.random() < 0.7 else rng.randint(2, 3)),
                                   self.tick)
                if deepest <= 0:
                    break
                book[deepest] = changed[deepest] = self._qty()
        elif len(book) > self.levels:
            for px in sorted(book, key=lambda p: p * side)[self.levels:]:
                del book[px]
                changed[px] = 0.0

    def _qty(self) -> float:
        return round_to(max(self.step, self._rng.lognormvariate(0.0, 1.0)), self.step)

    # -- reading ---------------------------------------------------------------------------------------------
    def top(self, n: int) -> tuple[list[Level], list[Level]]:
        """The best ``n`` levels per side: bids high to low, asks low to high."""
        return (sorted(self.bids.items(), reverse=True)[:n], sorted(self.asks.items())[:n])

    def changes_since(self, after_id: int | None) -> DepthEvent | None:
        """Merged changes of every update after ``after_id`` (None: just the newest update); None if none."""
        if not self.log:
            return None
        if after_id is None:
            batch = [self.log[-1]]
        else:
            batch = []
            for upd in reversed(self.log):
                if upd.update_id <= after_id:
                    break
                batch.append(upd)
            if not batch:
                return None
            batch.reverse()
        bids: dict[float, float] = {}
        asks: dict[float, float] = {}
        for upd in batch:
            bids.update(upd.bids)
            asks.update(upd.asks)
        prev = batch[0].prev_id
        return DepthEvent(prev + 1, batch[-1].update_id, prev, batch[-1].t_ns,
                          tuple(sorted(bids.items(), reverse=True)), tuple(sorted(asks.items())))
