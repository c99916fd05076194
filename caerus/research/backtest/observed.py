"""Replay as observed: a session replayed with its own timing wherever the session captured it (the consistency
check against the fleet), instead of timing drawn from its histograms (research).

Why: drawn timing cannot reproduce a session that ran under CPU load. The strategy's book hop (t_publish ->
t_seen) then has a millisecond tail, and a draw from that tail lands on random books: the replay reads a book
milliseconds after a book of the other venue that was published after it (an order priced off the wrong
Hyperliquid book), or sees a trigger late and moves a cooldown's end onto a neighbouring book, and one divergent
order shifts every later one. The live strategy had its tail on *other* books.

What a session captures of the strategy's timing, and how it is used here:

* Every order (the capture store's ``orders`` table): its triggering book (venue, symbol, seq) and when the
  strategy read it (t_seen), decided (t_decision), and when execution picked it up (t_pickup) and sent it
  (t_sent). A triggering book is read at its observed t_seen; an order the replay fires on the same book takes
  that order's observed path (t_seen -> t_decision -> t_pickup -> t_sent), so its cooldown and its paper fill
  (the book execution had read at pickup) are the live ones.
* Every other book: not captured per book (only the ``book_hop`` histogram), so it is read the quickest hop the
  session showed after its publish time (the histogram's lowest bucket, never more than any trigger's own hop).
* One reader polls both rings (caerus.strategy.app): books are read in publish order, never a later one first
  (t_seen is the running maximum over publish order: a book published while the strategy was late on an earlier
  one waits for it), and of the books of one venue and instrument waiting at the same moment only the newest is
  read (latest-value reads: the rest of the burst is skipped), as the live single-instrument loop does.
* Where the strategy was held up and skipped books that triggered nothing, the session cannot say: ``stalls``
  (from, until) make every book published in between read at ``until`` (caerus.research.backtest.consistency
  finds the minimal ones a comparison needs). Nor when exactly it read them: ``jitter_seed`` draws each such read
  from the session's own book hop histogram (the EWMA weighs each book by the time since the previous read, so an
  entry or exit a hundredth of a bps from its threshold can depend on them).
* The EXEC record: not captured when the strategy read it; it comes back that quickest hop after the venue's
  answer. Orders the session did not send take every segment's median. Nothing is drawn: no seed matters.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from caerus.capture.store import ChdbStore
from caerus.research.backtest.latency import ORDER_SEGMENTS, LatencyDraws, LatencyError, LatencyModel
from caerus.research.backtest.observed_timing import Key, ObservedTiming

_REPLY = 0x80  # caerus.wire.OrderFlags: the engine's second record of an order (its result), not an order
_SHADOW = 0x01  # shadow orders rehearse the fire path and never reach the strategy's state

def model_from_session(session: Path, wire_ns: int = 0) -> LatencyModel:
    """The session's latency as observed: its histograms (quickest and median values) and its orders' captured
    timing."""
    session = Path(session)
    model = LatencyModel.from_session(session, 0, wire_ns)
    store_dir = session / "capture"
    if not (store_dir / "chdb").is_dir():
        raise LatencyError(f"--latency-observed {session}: no capture store (the orders' timing is captured there)")
    store = ChdbStore(store_dir)
    try:
        df = store.query_df(
            "SELECT toUInt8(trigger_venue) AS v, symbol, trigger_seq, t_seen, t_decision, t_pickup, t_sent "
            f"FROM caerus.orders FINAL WHERE bitAnd(flags, {_REPLY | _SHADOW}) = 0 ORDER BY seq")
    finally:
        store.close()
    segs = model.segments
    dec, qt, ps = (segs[s].p50 for s in ORDER_SEGMENTS[:3])
    rows = [(int(v), int(y), int(q), int(a), int(b), int(c), int(d)) for v, y, q, a, b, c, d in
            df.itertuples(index=False)]
    timing = ObservedTiming.from_orders(rows, int(segs["book_hop"].values[0]), (dec, qt, ps))
    return LatencyModel(model.segments, f"observed: session {session.name} ({len(timing.seen)} orders' trigger "
                        f"reads and paths; other books read the quickest book hop, <= {timing.hop_ns} ns, after "
                        "publish)", 0, model.missing, observed=timing)


class ObservedDraws(LatencyDraws):
    """:class:`LatencyDraws` with the session's observed timing instead of draws (see the module docstring)."""

    __slots__ = ("_obs", "_pub", "hop_ns")

    def __init__(self, model: LatencyModel, seed: int) -> None:
        super().__init__(model, seed)
        if model.observed is None:
            raise LatencyError("ObservedDraws needs a LatencyModel with observed timing (model_from_session)")
        self._obs: ObservedTiming = model.observed
        self.hop_ns = model.observed.hop_ns
        self._pub = np.zeros(0, dtype=np.int64)

    def t_seen(self, venue: np.ndarray, t_exchange: np.ndarray, t_recv: np.ndarray, t_publish: np.ndarray,
               *, have_recv: bool = True, symbol: np.ndarray | None = None,
               seq: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if symbol is None or seq is None or not have_recv or not bool((t_publish != 0).all()):
            raise LatencyError("replay as observed needs captured books (t_recv and t_publish measured)")
        pub = t_publish.astype(np.int64, copy=True)
        rows = self._trigger_rows(venue, symbol, seq)
        observed = [self._obs.seen[(int(venue[i]), int(symbol[i]), int(seq[i]))] for i in rows]
        # the quickest read the session showed: never later than any trigger's (the running maximum below must
        # not move an observed read)
        hop = max(0, min([self._obs.hop_ns, *(t - int(pub[i]) for i, t in zip(rows, observed, strict=True))]))
        self.hop_ns = hop
        if self._obs.jitter_seed is None:
            seen = pub + hop
        else:  # read times the session could have had: its own book hops, drawn
            seen = pub + self.model.segments["book_hop"].draw(np.random.default_rng(self._obs.jitter_seed), len(pub))
        seen[rows] = observed
        by_pub = np.lexsort((seq, venue, pub))
        # no book is read after a trigger published later than it was (the session read that trigger then)
        later = np.full(len(pub), np.iinfo(np.int64).max, dtype=np.int64)
        later[rows] = observed
        later[by_pub] = np.minimum.accumulate(later[by_pub][::-1])[::-1]
        seen = np.minimum(seen, later)
        for t0, t1 in self._obs.stalls:
            held = (pub >= t0) & (pub <= t1)
            seen[held] = np.maximum(seen[held], t1)
        self._pub = pub
        # one reader: nothing published later is read earlier
        seen[by_pub] = np.maximum.accumulate(seen[by_pub])
        return t_recv.astype(np.int64, copy=True), pub, seen

    def _trigger_rows(self, venue: np.ndarray, symbol: np.ndarray, seq: np.ndarray) -> list[int]:
        want = {k[2] for k in self._obs.seen}
        rows = np.nonzero(np.isin(seq, np.fromiter(want, dtype=np.int64, count=len(want))))[0]
        return [int(i) for i in rows if (int(venue[i]), int(symbol[i]), int(seq[i])) in self._obs.seen]

    def reads(self, venue: np.ndarray, symbol: np.ndarray, seq: np.ndarray, seen: np.ndarray,
              order: np.ndarray) -> np.ndarray:
        """The books the latest-value reader reads, in the order it reads them (``order``: t_seen order). Books
        read at the same moment (all waiting when the strategy got the CPU back) go ring by ring, Binance's before
        Hyperliquid's, as one pass of the live loop reads them (caerus.session starts the strategy with the
        Binance ring first); of one venue and instrument only the newest is read, unless a book triggered an
        order (the session read it)."""
        order = order[np.lexsort((np.arange(len(order)), venue[order], seen[order]))]
        keep = np.ones(len(venue), dtype=bool)
        key = venue[order].astype(np.int64) << 16 | symbol[order]
        by_key = np.lexsort((np.arange(len(order)), key))  # per venue and instrument, in read order
        rows = order[by_key]
        same_next = np.zeros(len(rows), dtype=bool)
        same_next[:-1] = (key[by_key][1:] == key[by_key][:-1]) & (seen[rows][1:] == seen[rows][:-1])
        keep[rows[same_next]] = False
        pub = self._pub
        for t0, t1 in self._obs.stalls:  # a book with a newer one of its venue and instrument in the same stall
            held = np.nonzero((pub >= t0) & (pub <= t1))[0]
            k = venue[held].astype(np.int64) << 16 | symbol[held]
            held = held[np.lexsort((pub[held], k))]
            k = venue[held].astype(np.int64) << 16 | symbol[held]
            keep[held[:-1][k[1:] == k[:-1]]] = False
        keep[self._trigger_rows(venue, symbol, seq)] = True
        return order[keep[order]]

    def order_path(self, key: Key) -> tuple[int, int, int, int, int]:
        """(decision, queue transit, pickup to sent, wire out, answer back): the session's own for an order it
        sent on the same book, the medians otherwise; the answer is read the quickest book hop later."""
        dec, qt, ps = self._obs.paths.get(key, self._obs.fallback)
        wire = self.model.segments["wire"].p50 + self._add
        return dec, qt, ps, wire, wire + self.hop_ns
