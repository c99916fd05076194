"""The live feed's book rules applied to imported candidates: which are stored VALID, stored REJECTED, or refused.

The rules and their order are the feed loops' (caerus.venues.binance.feed, caerus.venues.hyperliquid.feed), kept per
instrument, over whole columns instead of one frame at a time:

* ``update_id`` (Binance: bookTicker ``u``, event time ``E``): ``u`` equal to the newest accepted one is DUPLICATE,
  lower is SEQ_NOT_INCREASING; ``E`` below the newest accepted one is TIME_BACKWARDS. Only an accepted update moves
  the state. A row without a venue time (spot bookTicker) is checked on ``u`` alone.
* ``time`` (Hyperliquid, and sources without update ids: Tardis quotes): venue time below the newest is
  TIME_BACKWARDS (equal is normal); the record's ``seq`` is the import's own counter per instrument, as the feed's.

Then, on what the ordering let through: a null side is NULL_SIDE, and the levels go through
:func:`caerus.venuekit.book_rules.check_levels_many` (the same rules as the feed's ``check_levels``). A data frame
the typed decoder refused is MALFORMED (it never touches the ordering state). As in the feed, a refusal that
withdraws the quote (caerus.venuekit.book_rules.WITHDRAWS_QUOTE) is stored as a REJECTED row carrying the reason
(prices as sent, NaN for a null side or an unreadable frame); an ordering refusal is counted only. Nothing refused
goes uncounted.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from caerus.venuekit.book_rules import (
    DUPLICATE,
    MALFORMED,
    NULL_SIDE,
    SEQ_NOT_INCREASING,
    TIME_BACKWARDS,
    WITHDRAWS_QUOTE,
    check_levels_many,
)
from caerus.wire import BookFlags, RejectReason

from .records import MISSING, Chunk

RULES = ("update_id", "time")
VALID = int(BookFlags.VALID)
DEPTH = int(BookFlags.DEPTH)
REJECTED = int(BookFlags.REJECTED)
_WITHDRAWS = np.array([r in WITHDRAWS_QUOTE for r in range(256)], dtype=bool)
#: derive codes of a stored row (import.py turns them into SQL): 1 = t_exchange from t_recv, 2 = t_recv from t_exchange
DERIVE_T_EXCHANGE = 1
DERIVE_T_RECV = 2


class _State:
    __slots__ = ("last_key", "last_t", "own_seq")

    def __init__(self) -> None:
        self.last_key = -1  # the newest accepted update id (Binance u); the feed starts at -1 too
        self.last_t = 0  # the newest accepted venue time (ns)
        self.own_seq = 0  # records numbered by the import (time rule)


@dataclass
class Rows:
    """Rows to store (columns of the staging table, in file order) for one chunk."""

    sym: np.ndarray
    flags: np.ndarray
    reason: np.ndarray
    seq: np.ndarray
    t_exchange: np.ndarray
    t_recv: np.ndarray
    bid_px: np.ndarray
    bid_qty: np.ndarray
    ask_px: np.ndarray
    ask_qty: np.ndarray
    derive: np.ndarray

    def __len__(self) -> int:
        return len(self.sym)

    def columns(self) -> dict[str, np.ndarray]:
        return dict(self.__dict__)


def _ffill_time(t: np.ndarray, start: int) -> np.ndarray:
    """Venue times with each MISSING replaced by the one before it (``start`` before the first): a row without a
    time never trips or moves the time rule."""
    have = t != MISSING
    if have.all():
        return t
    idx = np.where(have, np.arange(len(t)), -1)
    np.maximum.accumulate(idx, out=idx)
    out = np.where(idx >= 0, t[np.maximum(idx, 0)], start)
    return out.astype(np.int64)


def order_update_id(seq: np.ndarray, t: np.ndarray, st: _State) -> np.ndarray:
    """Binance ordering over one instrument's rows in order: the reason per row (0 = accepted); moves ``st``.

    Exact sequential semantics, vectorised: a window is checked as if every row were accepted; rows up to the first
    one that fails are accepted (the chain of previous rows *is* the state there), that row is decided against the
    true state, and the scan resumes after it."""
    n = len(seq)
    reason = np.zeros(n, dtype=np.uint8)
    i = 0
    window = 4096
    key, last_t = st.last_key, st.last_t
    while i < n:
        j = min(n, i + window)
        s = seq[i:j]
        tt = t[i:j]
        prev_s = np.empty_like(s)
        prev_s[0] = key
        prev_s[1:] = s[:-1]
        prev_t = np.empty_like(tt)
        prev_t[0] = last_t
        prev_t[1:] = tt[:-1]
        bad = (s <= prev_s) | (tt < prev_t)
        k = int(np.argmax(bad)) if bad.any() else len(s)
        if k:
            key, last_t = int(s[k - 1]), int(tt[k - 1])
        i += k
        if i < j:
            u, ti = int(seq[i]), int(t[i])
            if u <= key:
                reason[i] = DUPLICATE if u == key else SEQ_NOT_INCREASING
            elif ti < last_t:
                reason[i] = TIME_BACKWARDS
            else:  # not reached (the row failed against its predecessor, which is the state), kept for safety
                key, last_t = u, ti
            i += 1
            window = 64  # refusals come in runs: look ahead a little until a clean stretch
        else:
            window = min(window * 2, 1 << 16)
    st.last_key, st.last_t = key, last_t
    return reason


def order_time(t: np.ndarray, st: _State) -> np.ndarray:
    """Hyperliquid ordering: venue time below the newest accepted is TIME_BACKWARDS. A refused row is older than the
    newest accepted, so the state before each row is the running maximum of everything before it."""
    if not len(t):
        return np.zeros(0, dtype=np.uint8)
    prev = np.empty_like(t)
    prev[0] = st.last_t
    prev[1:] = t[:-1]
    np.maximum.accumulate(prev, out=prev)
    prev = np.maximum(prev, st.last_t)
    reason = np.where(t < prev, TIME_BACKWARDS, 0).astype(np.uint8)
    st.last_t = max(st.last_t, int(t.max()))
    return reason


class Checker:
    """Per-instrument state of one file's import and the counts of what it refused, by reason."""

    def __init__(self, rule: str) -> None:
        if rule not in RULES:
            raise ValueError(f"unknown ordering rule {rule!r} (known: {', '.join(RULES)})")
        self.rule = rule
        self.states: dict[int, _State] = {}
        self.refused: Counter[str] = Counter()
        self.stored_valid = 0
        self.stored_rejected = 0

    def apply(self, chunk: Chunk) -> Rows:
        """The rows of ``chunk`` to store; counts refusals by reason."""
        n = len(chunk)
        reason = np.zeros(n, dtype=np.uint8)
        seq_out = chunk.seq.copy()
        t_ex_out = chunk.t_ex.copy()
        for sym in np.unique(chunk.sym):
            idx = np.flatnonzero(chunk.sym == sym)
            st = self.states.setdefault(int(sym), _State())
            self._instrument(chunk, idx, st, reason, seq_out, t_ex_out)
        for r, c in zip(*np.unique(reason[reason > 0], return_counts=True), strict=True):
            self.refused[RejectReason(int(r)).name.lower()] += int(c)
        stored = (reason == 0) | _WITHDRAWS[reason]
        rej = reason[stored]
        valid = rej == 0
        self.stored_valid += int(valid.sum())
        self.stored_rejected += int((~valid).sum())
        flags = np.where(valid, VALID | (chunk.depth[stored] * DEPTH), REJECTED).astype(np.uint8)
        # a refusal that withdraws the quote carries the prices as sent, NaN for a null side or an unreadable frame
        blank = (rej == NULL_SIDE) | (rej == MALFORMED)
        px = {k: np.where(blank, np.nan, getattr(chunk, k)[stored]) for k in ("bp", "bq", "ap", "aq")}
        t_recv = chunk.t_recv[stored]
        t_ex = t_ex_out[stored]
        derive = np.where(t_ex == MISSING, DERIVE_T_EXCHANGE, np.where(t_recv == MISSING, DERIVE_T_RECV, 0))
        return Rows(sym=chunk.sym[stored], flags=flags, reason=rej, seq=seq_out[stored], t_exchange=t_ex,
                    t_recv=t_recv, bid_px=px["bp"], bid_qty=px["bq"], ask_px=px["ap"], ask_qty=px["aq"],
                    derive=derive.astype(np.uint8))

    def _instrument(self, chunk: Chunk, idx: np.ndarray, st: _State, reason: np.ndarray, seq_out: np.ndarray,
                    t_ex_out: np.ndarray) -> None:
        pre = chunk.pre[idx]
        bad = np.flatnonzero(pre == MALFORMED)
        # segments between unreadable frames (rare): each unreadable one is decided against the state at that point
        start = 0
        for b in [*bad.tolist(), len(idx)]:
            seg = idx[start:b]
            if len(seg):
                self._segment(chunk, seg, st, reason, seq_out)
            if b < len(idx):
                row = idx[b]
                reason[row] = MALFORMED
                # the feed's REJECTED record carries the newest venue time it knew (none yet: derived like the rest)
                t_ex_out[row] = st.last_t if st.last_t > 0 else MISSING
                if self.rule == "update_id":
                    seq_out[row] = max(st.last_key, 0)
                else:
                    st.own_seq += 1
                    seq_out[row] = st.own_seq
            start = b + 1

    def _segment(self, chunk: Chunk, seg: np.ndarray, st: _State, reason: np.ndarray, seq_out: np.ndarray) -> None:
        t = _ffill_time(chunk.t_ex[seg], st.last_t)
        r = order_update_id(chunk.seq[seg], t, st) if self.rule == "update_id" else order_time(t, st)
        ok = r == 0
        r[ok & (chunk.pre[seg] == NULL_SIDE)] = NULL_SIDE
        ok = r == 0
        if ok.any():
            s = seg[ok]
            r[ok] = check_levels_many(chunk.bp[s], chunk.bq[s], chunk.ap[s], chunk.aq[s])
        reason[seg] = r
        if self.rule == "time":
            # the feed numbers every record it publishes (VALID, or REJECTED withdrawing the quote) per instrument
            published = (r == 0) | _WITHDRAWS[r]
            numbers = st.own_seq + np.cumsum(published)
            seq_out[seg] = np.where(published, numbers, 0)
            st.own_seq = int(numbers[-1]) if len(numbers) else st.own_seq
