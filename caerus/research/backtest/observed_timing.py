"""A session's captured strategy timing (:class:`ObservedTiming`): the plain data a replay as observed reads.

Its own module so that the latency model (caerus.research.backtest.latency), which carries one, and the replay as
observed (caerus.research.backtest.observed), which builds and reads it, both import it without importing each
other.
"""

from __future__ import annotations

from dataclasses import dataclass

Key = tuple[int, int, int]  # (venue, instrument, seq) of a book


@dataclass(frozen=True)
class ObservedTiming:
    """A session's captured strategy timing: per triggering book, when the strategy read it and its order's path."""

    seen: dict[Key, int]  # trigger book -> t_seen
    paths: dict[Key, tuple[int, int, int]]  # trigger book -> (seen_to_decision, queue_transit, pickup_to_sent)
    hop_ns: int  # every other book (and the EXEC record) is read at most this long after publish
    fallback: tuple[int, int, int]  # the path of an order the session did not send (each segment's median)
    # (from, until): the strategy read nothing from ``from`` until ``until`` (consistency.reconcile finds them); of
    # the books published in between (both ends included) only the newest per venue and instrument is read, at
    # ``until`` at the earliest
    stalls: tuple[tuple[int, int], ...] = ()
    # None: every other book read the quickest hop after publish; a seed: each read its own hop drawn from the
    # session's book_hop histogram (capped at the next trigger's read), read times the session could have had
    jitter_seed: int | None = None

    @classmethod
    def from_orders(cls, rows: list[tuple[int, int, int, int, int, int, int]], hop_ns: int,
                    fallback: tuple[int, int, int]) -> ObservedTiming:
        """From (trigger_venue, symbol, trigger_seq, t_seen, t_decision, t_pickup, t_sent) per order."""
        seen: dict[Key, int] = {}
        paths: dict[Key, tuple[int, int, int]] = {}
        for venue, sym, seq, t_seen, t_dec, t_pick, t_sent in rows:
            key = (int(venue), int(sym), int(seq))
            seen[key] = int(t_seen)
            paths[key] = (int(t_dec - t_seen), int(t_pick - t_dec), int(max(t_sent - t_pick, 0)))
        return cls(seen, paths, int(hop_ns), fallback)
