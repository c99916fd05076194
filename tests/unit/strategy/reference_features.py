"""The oracle for caerus.strategy.feature_vector.FeatureState's hot-path rewrites: the feature update in its earlier,
plainer form (every ring pointer walked on every book, fields read by index), frozen here. A faster FeatureState must
give the same vector and state, bit for bit (test_strategy_features_reference.py); a change of a feature's
*definition* is a new SCHEMA_VERSION and a new reference, not an edit of this one.

It computes feature schema 1 (``NAMES_V1``, its indices and constants kept here, as they were in
caerus.strategy.feature_vector then). Schema 2 only removed two features (``bn_ofi``, ``hl_block_phase``) and defined no
other anew, so this oracle still checks it: FeatureState's vector is this one's without those two columns."""

from __future__ import annotations

from caerus.records.book import (
    BOOK_ASK_PX,
    BOOK_ASK_QTY,
    BOOK_BID_PX,
    BOOK_BID_QTY,
    BOOK_FLAGS,
    BOOK_T_EXCHANGE,
    BOOK_T_RECV,
    BOOK_VENUE,
)
from caerus.strategy.feature_vector import (
    _BINANCE,
    _HYPERLIQUID,
    _LN2,
    _MASK,
    _UNWRITTEN,
    CATCH_UP_MIN_BPS,
    RING,
    _exp,
)
from caerus.wire import TRADEABLE, TRADEABLE_MASK

NAMES_V1 = ("bn_ret_50ms", "bn_ret_200ms", "bn_ret_1000ms", "basis_dev", "bn_imbalance", "hl_imbalance", "bn_ofi",
            "bn_micro_dev", "hl_micro_dev", "bn_spread", "hl_spread", "hl_book_age_ms", "hl_block_phase",
            "hl_ret_1000ms", "catch_up")
N_FEATURES = len(NAMES_V1)
(F_BN_RET_50, F_BN_RET_200, F_BN_RET_1000, F_BASIS_DEV, F_BN_IMB, F_HL_IMB, F_BN_OFI, F_BN_MICRO, F_HL_MICRO,
 F_BN_SPREAD, F_HL_SPREAD, F_HL_AGE, F_HL_PHASE, F_HL_RET_1000, F_CATCH_UP) = range(N_FEATURES)
OFI_HALF_LIFE_MS = 200.0
_BLOCK_MS_START = 70.0  # Hyperliquid's block interval before any gap is measured



def _walk(ts: list[int], p: int, lo: int, limit: int) -> int:
    """A Binance horizon's pointer walked on: from ``p`` (at least the oldest kept, ``lo``) to the newest index whose
    time is at or before ``limit`` (the newest mid, at now, always stops the walk)."""
    if p < lo:
        p = lo
    while ts[(p + 1) & _MASK] <= limit:
        p += 1
    return p


class ReferenceFeatureState:
    """FeatureState as it was before its due-time walks (commit 6c67a14): every pointer walked on every book."""

    __slots__ = (
        "_bn_m",
        "_bn_n",
        "_bn_t",
        "_depth",
        "_hl_m",
        "_hl_n",
        "_hl_t",
        "_k_basis",
        "_k_ofi",
        "_ofi",
        "_p50",
        "_p200",
        "_p1000",
        "_ph",
        "_prev_hl_tx",
        "_t_ofi",
        "basis",
        "block_ms",
        "bn_ask",
        "bn_ask_qty",
        "bn_bid",
        "bn_bid_qty",
        "bn_mid",
        "bn_ok",
        "bn_seen",
        "bn_t_exchange",
        "bn_t_recv",
        "ewma",
        "ewma_t",
        "hl_ask",
        "hl_bid",
        "hl_half_spread_bps",
        "hl_mid",
        "hl_ok",
        "hl_seen",
        "hl_t_exchange",
        "hl_t_recv",
        "start_t",
        "x",
    )  # fmt: skip

    def __init__(self, ewma_half_life_s: float = 3.0) -> None:
        self.x = [0.0] * N_FEATURES
        self._k_basis = _LN2 / (ewma_half_life_s * 1e9)  # as LatencyArb: weight of an update dt ns later
        self._k_ofi = _LN2 / (OFI_HALF_LIFE_MS * 1e6)
        self._bn_t = [_UNWRITTEN] * RING  # later than any now: a walk never passes a slot not yet written
        self._bn_m = [0.0] * RING
        self._hl_t = [0] * RING
        self._hl_m = [0.0] * RING
        self._bn_n = self._hl_n = 0  # mids written so far (ring index = n & mask)
        self._p50 = self._p200 = self._p1000 = self._ph = 0  # per horizon: the newest index at or before now - h
        self.bn_bid = self.bn_ask = self.bn_mid = self.bn_bid_qty = self.bn_ask_qty = 0.0
        self.hl_bid = self.hl_ask = self.hl_mid = self.hl_half_spread_bps = 0.0
        self.bn_ok = self.hl_ok = self.bn_seen = self.hl_seen = False
        self.bn_t_recv = self.bn_t_exchange = self.hl_t_recv = self.hl_t_exchange = 0
        self._prev_hl_tx = 0
        self.block_ms = _BLOCK_MS_START
        self._ofi = 0.0
        self._depth = 0.0
        self._t_ofi = 0
        self.basis = self.ewma = 0.0
        self.ewma_t = self.start_t = 0

    def update(self, book: tuple, now: int) -> bool:
        """Fold one BOOK record seen at ``now`` (ns) into the state; True when ``x`` is a full vector."""
        # Hot path (benchmarks/decision_cost.py): attributes read once into locals, each feature computed only on
        # the venue whose book changes it, the ring walks bounded by the newest mid (its time is ``now``, past
        # every horizon's limit); the arithmetic is unchanged, expression for expression, so the vector is too.
        venue = book[BOOK_VENUE]
        ok = (book[BOOK_FLAGS] & TRADEABLE_MASK) == TRADEABLE
        bid, bq, ask, aq = book[BOOK_BID_PX], book[BOOK_BID_QTY], book[BOOK_ASK_PX], book[BOOK_ASK_QTY]  # if ok
        x = self.x
        if venue == _BINANCE:
            self.bn_ok = ok
            self.bn_t_recv = book[BOOK_T_RECV]
            self.bn_t_exchange = book[BOOK_T_EXCHANGE]
            if ok:
                mid = (bid + ask) * 0.5
                depth = bq + aq
                # order-flow imbalance of this touch change (Cont, Kukanov & Stoikov 2014, eq. 2), decayed sum
                if self.bn_seen:
                    pb = self.bn_bid
                    pa = self.bn_ask
                    e = ((bq if bid >= pb else 0.0) - (self.bn_bid_qty if bid <= pb else 0.0)
                         - (aq if ask <= pa else 0.0) + (self.bn_ask_qty if ask >= pa else 0.0))
                    dt = now - self._t_ofi
                    decay = _exp(-self._k_ofi * dt) if dt > 0 else 1.0
                    ofi = self._ofi * decay + e
                    d = self._depth * decay + (1.0 - decay) * depth * 0.5
                else:
                    ofi = self._ofi
                    d = depth * 0.5
                    self.bn_seen = True
                self._ofi = ofi
                self._depth = d
                self._t_ofi = now
                self.bn_bid = bid
                self.bn_ask = ask
                self.bn_bid_qty = bq
                self.bn_ask_qty = aq
                self.bn_mid = mid
                n = self._bn_n
                ts = self._bn_t
                ms = self._bn_m
                ts[n & _MASK] = now
                ms[n & _MASK] = mid
                lo = n + 1 - RING if n >= RING else 0
                self._bn_n = n + 1
                # each pointer walks to the newest mid at or before now - h; the newest (index n) is at now
                self._p50 = p = _walk(ts, self._p50, lo, now - 50_000_000)
                x[F_BN_RET_50] = (mid - ms[p & _MASK]) / mid * 1e4
                self._p200 = p = _walk(ts, self._p200, lo, now - 200_000_000)
                x[F_BN_RET_200] = (mid - ms[p & _MASK]) / mid * 1e4
                self._p1000 = p = _walk(ts, self._p1000, lo, now - 1_000_000_000)
                bn_ret = (mid - ms[p & _MASK]) / mid * 1e4
                x[F_BN_RET_1000] = bn_ret
                if depth > 0.0:
                    x[F_BN_IMB] = (bq - aq) / depth
                    x[F_BN_MICRO] = ((bid * aq + ask * bq) / depth - mid) / mid * 1e4
                else:
                    x[F_BN_IMB] = x[F_BN_MICRO] = 0.0
                x[F_BN_OFI] = ofi / d if d > 0.0 else 0.0
                x[F_BN_SPREAD] = (ask - bid) / mid * 1e4
            else:
                mid = self.bn_mid
                bn_ret = x[F_BN_RET_1000]
            if not (self.hl_seen and self.bn_seen):
                return False
            hl_mid = self.hl_mid
        elif venue == _HYPERLIQUID:
            self.hl_ok = ok
            self.hl_t_recv = book[BOOK_T_RECV]
            tx = book[BOOK_T_EXCHANGE]
            self.hl_t_exchange = tx
            if ok:
                hl_mid = (bid + ask) * 0.5
                depth = bq + aq
                self.hl_bid = bid
                self.hl_ask = ask
                self.hl_mid = hl_mid
                self.hl_seen = True
                spread = (ask - bid) / hl_mid * 1e4
                x[F_HL_SPREAD] = spread
                self.hl_half_spread_bps = spread * 0.5
                if depth > 0.0:
                    x[F_HL_IMB] = (bq - aq) / depth
                    x[F_HL_MICRO] = ((bid * aq + ask * bq) / depth - hl_mid) / hl_mid * 1e4
                else:
                    x[F_HL_IMB] = x[F_HL_MICRO] = 0.0
                n = self._hl_n
                self._hl_t[n & _MASK] = now
                self._hl_m[n & _MASK] = hl_mid
                self._hl_n = n + 1
                # block interval: gaps between distinct block times, ignoring gaps that span silent blocks
                prev = self._prev_hl_tx
                if tx != prev:
                    if prev:
                        gap = (tx - prev) * 1e-6
                        block = self.block_ms
                        if gap < 1.5 * block:
                            self.block_ms = block + 0.05 * (gap - block)
                    self._prev_hl_tx = tx
            else:
                hl_mid = self.hl_mid
            if not (self.bn_seen and self.hl_seen):
                return False
            mid = self.bn_mid
            bn_ret = x[F_BN_RET_1000]
        else:
            return False

        # -- cross-venue features (every book once both venues have been seen) ------------------------------------
        basis = (mid - hl_mid) / hl_mid * 1e4
        self.basis = basis
        ewma = self.ewma
        if self.start_t == 0:
            self.start_t = now
            ewma = basis
            self.ewma_t = now
        x[F_BASIS_DEV] = basis - ewma
        if ok:
            dt = now - self.ewma_t
            if dt > 0:
                ewma += (1.0 - _exp(-self._k_basis * dt)) * (basis - ewma)
                self.ewma_t = now
        self.ewma = ewma
        x[F_HL_AGE] = (now - self.hl_t_recv) * 1e-6
        age = (self.bn_t_exchange - self.hl_t_exchange) * 1e-6
        if age > 0.0:
            block = self.block_ms
            x[F_HL_PHASE] = (age % block) / block
        else:
            x[F_HL_PHASE] = 0.0
        # Hyperliquid's 1 s move, and the share of Binance's it has made (its newest mid may be older than 1 s:
        # the walk stops at it)
        n = self._hl_n
        p = self._ph
        lo = n - RING if n > RING else 0
        if p < lo:
            p = lo
        limit = now - 1_000_000_000
        ts = self._hl_t
        last = n - 1
        while p < last and ts[(p + 1) & _MASK] <= limit:
            p += 1
        self._ph = p
        hl_ret = (hl_mid - self._hl_m[p & _MASK]) / hl_mid * 1e4
        x[F_HL_RET_1000] = hl_ret
        if bn_ret >= CATCH_UP_MIN_BPS or bn_ret <= -CATCH_UP_MIN_BPS:
            c = hl_ret / bn_ret
            x[F_CATCH_UP] = 2.0 if c > 2.0 else (-1.0 if c < -1.0 else c)
        else:
            x[F_CATCH_UP] = 1.0
        return True
