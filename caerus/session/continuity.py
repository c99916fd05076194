"""What a session with deaths and restarts (``--chaos``, or real crashes) proves: how long each restarted process
took to do useful work again, and that no order was lost without being counted or doubled.

**Recovery** (:class:`RecoveryClock`): for each death the supervisor restarted, the time from the death to the
restarted process's first valid book (a feed's ``books``, the strategy's or the engine's books read) and first
order (the strategy's orders fired, the engine's orders consumed), read from the new incarnation's counter block
(its writer pid is the new pid). Resolution: the session's watch period (``WATCH_PERIOD_S``).

**Order continuity** (:class:`OrderContinuity`): every EXEC record of every execution incarnation is read
exactly once (caerus.session.progress follows restarts). An order is identified by (strategy id, producer
sequence); the sequence adds one per pushed order and starts at the strategy's start-up time in ns, so one
strategy incarnation's orders form one run of consecutive numbers, and incarnations lie far apart
(``GENERATION_GAP``). Then:

* ``duplicates``: an order consumed twice (must be 0: the engine refuses a re-delivered slot);
* ``gaps``: numbers missing inside a run: orders pushed and never consumed (not the run's tail: orders pushed
  after the last consumed one are in flight when the session stops, or were never pushed);
* ``counted_lost``: what the strategy counted as lost (orders left in the ring of an execution that restarted);
* ``engine_deaths``: an engine killed between taking an order and publishing its record loses at most that one
  order, so ``gaps - counted_lost`` may be at most this;
* ``unexplained = max(0, gaps - counted_lost - engine_deaths)``: must be 0.
"""

from __future__ import annotations

import collections
import itertools
from typing import Any

from caerus.records.exec import EXEC_FLAGS, EXEC_ORDER_ID, EXEC_SEQ, EXEC_STRATEGY_ID
from caerus.wire import ExecFlags

WATCH_PERIOD_S = 0.25
#: a jump in producer sequence this large starts another strategy incarnation (their bases are start-up times in
#: ns, at least a process start-up -- ~1e8 ns -- apart; one incarnation never pushes a million orders here)
GENERATION_GAP = 1_000_000
_REPLY = int(ExecFlags.REPLY)
_BOOK_COUNTERS = ("books", "books.binance", "books.hyperliquid")
_ORDER_COUNTERS = ("orders",)


class OrderContinuity:
    """Fed every EXEC record once (``add``); ``summary`` proves or disproves continuity."""

    def __init__(self) -> None:
        self.consumed = 0
        self._seqs: dict[int, list[int]] = collections.defaultdict(list)  # strategy id -> sequences consumed
        self._order_ids: collections.Counter[int] = collections.Counter()

    def add(self, rec: tuple) -> None:
        if rec[EXEC_FLAGS] & _REPLY:
            return  # a later reply for an order already counted
        self.consumed += 1
        self._seqs[rec[EXEC_STRATEGY_ID]].append(rec[EXEC_SEQ])
        self._order_ids[rec[EXEC_ORDER_ID]] += 1

    def gaps_and_duplicates(self) -> tuple[int, int, int]:
        """(missing numbers inside runs, orders consumed more than once, runs = strategy incarnations seen)."""
        gaps = dups = runs = 0
        for seqs in self._seqs.values():
            ordered = sorted(seqs)
            runs += 1 if ordered else 0
            for prev, cur in itertools.pairwise(ordered):
                if cur == prev:
                    dups += 1
                elif cur - prev > GENERATION_GAP:
                    runs += 1
                else:
                    gaps += cur - prev - 1
        dups = max(dups, sum(n - 1 for n in self._order_ids.values() if n > 1))
        return gaps, dups, runs

    def summary(self, strategy_counts: list[dict[str, Any]], engine_deaths: int) -> dict[str, Any]:
        """``strategy_counts``: the final counters of every strategy incarnation (earlier ones and the last)."""
        gaps, dups, runs = self.gaps_and_duplicates()
        fired = sum(int(c.get("orders", 0)) for c in strategy_counts)
        counted = sum(int(c.get("orders_lost_to_restart", 0)) for c in strategy_counts)
        return {"fired": fired, "consumed": self.consumed, "gaps": gaps, "counted_lost": counted,
                "engine_deaths": engine_deaths, "duplicates": dups, "strategy_runs": runs,
                "unexplained": max(0, gaps - counted - engine_deaths), "watch_period_s": WATCH_PERIOD_S}


class RecoveryClock:
    """Stamps each restarted death with the time to the new incarnation's first book and first order."""

    def __init__(self, session_start_mono: float) -> None:
        self.start_mono = session_start_mono

    def tick(self, tracks: dict[str, Any], snapshots: dict[str, dict[str, Any]], writer_pids: dict[str, int],
             now: float) -> None:
        """``tracks``: the supervisor's per-process deaths; ``snapshots``/``writer_pids``: the live counters."""
        for name, track in tracks.items():
            if not track.deaths:
                continue
            death = track.deaths[-1]
            new_pid = death.get("new_pid")
            if new_pid is None or writer_pids.get(name) != new_pid:
                continue  # not restarted yet, or its new counter block is not there yet
            snap = snapshots.get(name, {})
            after = round(now - self.start_mono - death["at_s"], 3)
            if "first_book_after_s" not in death and sum(int(snap.get(k, 0)) for k in _BOOK_COUNTERS) > 0:
                death["first_book_after_s"] = after
            if "first_order_after_s" not in death and sum(int(snap.get(k, 0)) for k in _ORDER_COUNTERS) > 0:
                death["first_order_after_s"] = after
