"""The lead-lag feature vector: its schema (names, version) and its incremental computation, one book at a time.

One definition for every user, so they cannot drift: the live strategy's model signal
(caerus.strategy.model_signal) and therefore the backtest (which replays those same decision objects), and training
(caerus.research.training_data runs this class over book events to build the dataset). It lives in caerus.strategy
because the fleet may not import caerus.research (.importlinter's layers); research imports it from here.

:class:`FeatureState` keeps one instrument's state in preallocated slots and lists and rewrites ``x`` (a list of
floats, ``len(NAMES)`` long) in place on every tradeable book: nothing is allocated per book beyond the floats the
arithmetic makes (ring buffers of recent mids are fixed-size lists, indices are masked). Features, in ``NAMES``
order (bps are of the venue's own mid):

* ``bn_ret_50ms``, ``bn_ret_200ms``, ``bn_ret_1000ms``: Binance mid return over the horizon (bps), from a ring of
  the last ``RING`` Binance mids (the oldest one kept when the ring holds less than the horizon);
* ``basis_dev``: the naive rule's signal, ``basis - EWMA(basis)`` before this book updates the EWMA (bps), exactly
  as caerus.strategy.latency_arb computes it (same half-life, same rules for invalid books);
* ``bn_imbalance``, ``hl_imbalance``: top-of-book size imbalance ``(bid_qty - ask_qty) / (bid_qty + ask_qty)``;
* ``bn_micro_dev``, ``hl_micro_dev``: microprice (Stoikov 2018; here the size-weighted mid
  ``(bid * ask_qty + ask * bid_qty) / (bid_qty + ask_qty)``) minus the mid (bps);
* ``bn_spread``, ``hl_spread``: the venue's spread (bps);
* ``hl_book_age_ms``: now - the newest Hyperliquid book's t_recv (ms);
* ``hl_ret_1000ms``: Hyperliquid mid return over 1 s (bps);
* ``catch_up``: how much of Binance's last 1 s move Hyperliquid has already made (``hl_ret_1000ms /
  bn_ret_1000ms`` clipped to [-1, 2]; 1 when Binance moved less than ``CATCH_UP_MIN_BPS``: nothing to catch up).

Schema 2 (``SCHEMA_VERSION``) is schema 1 without ``bn_ofi`` (the Binance touch's decayed order-flow imbalance)
and ``hl_block_phase`` (Binance's event time into Hyperliquid's block interval): dropped because they (and the
state only they read) cost ~110 bytecode operations a book and the model nothing on validation folds
(docs/research.md, Decision cost: benchmarks/feature_ablation.py). ``REMOVED`` names them, so a schema-1 model
file is refused naming them. Every other feature is schema 1's, bit for bit
(tests/unit/strategy/test_strategy_features_reference.py).

Time is the caller's ``now`` (the strategy's t_seen, the backtest's simulated t_seen): the same books at the same
times give the same vector, in the live loop and in a replay.
"""

from __future__ import annotations

import math

from caerus.wire import BOOK, TRADEABLE, TRADEABLE_MASK, Venue

#: bump when a feature's definition changes: a model trained on another version is refused at start-up
SCHEMA_VERSION = 2
NAMES = (
    "bn_ret_50ms",
    "bn_ret_200ms",
    "bn_ret_1000ms",
    "basis_dev",
    "bn_imbalance",
    "hl_imbalance",
    "bn_micro_dev",
    "hl_micro_dev",
    "bn_spread",
    "hl_spread",
    "hl_book_age_ms",
    "hl_ret_1000ms",
    "catch_up",
)
N_FEATURES = len(NAMES)
(F_BN_RET_50, F_BN_RET_200, F_BN_RET_1000, F_BASIS_DEV, F_BN_IMB, F_HL_IMB, F_BN_MICRO, F_HL_MICRO, F_BN_SPREAD,
 F_HL_SPREAD, F_HL_AGE, F_HL_RET_1000, F_CATCH_UP) = range(N_FEATURES)
#: features an earlier schema version computed and this one does not, by the version that dropped them: named when
#: a model file of that version is refused
REMOVED = {2: ("bn_ofi", "hl_block_phase")}

RING = 4096  # mids kept per venue (a power of two): > 1 s of Binance books at 4 kHz
_MASK = RING - 1
HORIZONS_MS = (50.0, 200.0, 1000.0)
CATCH_UP_MIN_BPS = 0.5

_BINANCE = int(Venue.BINANCE)
_HYPERLIQUID = int(Venue.HYPERLIQUID)
_LN2 = math.log(2.0)
_UNWRITTEN = 1 << 62
_exp = math.exp  # one global load per call instead of a global and an attribute
_NEG_CATCH_UP = -CATCH_UP_MIN_BPS
_H50, _H200, _H1000 = (int(h * 1e6) for h in HORIZONS_MS)  # ns

# FeatureState.update unpacks a BOOK record in one operation (cheaper than an index per field), so it names every
# field in order: a layout that moves or adds one must fail here, at import, not mis-assign at run time.
_UNPACKED = ("venue", "flags", "symbol", "conn", "reason", "_pad", "seq", "t_exchange", "t_recv", "t_publish",
             "bid_px", "bid_qty", "ask_px", "ask_qty", "t_wire")
if tuple(BOOK.names) != _UNPACKED:
    raise ImportError(f"caerus.strategy.feature_vector unpacks BOOK as {_UNPACKED}, "
                      f"the layout is now {tuple(BOOK.names)}")


def schema(horizon_ms: float | None = None) -> dict[str, object]:
    """The schema a model file records and the strategy checks: version and feature names, in order."""
    out: dict[str, object] = {"version": SCHEMA_VERSION, "names": list(NAMES)}
    if horizon_ms is not None:
        out["horizon_ms"] = horizon_ms
    return out


def schema_difference(other: dict[str, object]) -> str | None:
    """None when ``other`` (a model file's schema) is this code's, else what differs, in a few words: the version
    and the features it has or lacks (those a later version removed named as such)."""
    version = other.get("version")
    names = other.get("names")
    if not isinstance(names, list):
        return "its schema has no feature names"
    if version == SCHEMA_VERSION and names == list(NAMES):
        return None
    missing = [n for n in NAMES if n not in names]
    extra = [str(n) for n in names if n not in NAMES]
    removed = {n: v for v, dropped in REMOVED.items() for n in dropped}
    parts = []
    if missing:
        parts.append(f"lacks {', '.join(missing)}")
    gone = [n for n in extra if n in removed]
    if gone:
        parts.append(f"has {', '.join(gone)}, removed in schema version {max(removed[n] for n in gone)}")
    other_extra = [n for n in extra if n not in removed]
    if other_extra:
        parts.append(f"has {', '.join(other_extra)} this strategy does not compute")
    features = "it " + "; it ".join(parts) if parts else None
    if features is None and len(names) != N_FEATURES:
        features = f"its features list {len(names)} names (one repeated), this strategy's {N_FEATURES}"
    elif features is None and names != list(NAMES):
        k = next(i for i, (a, b) in enumerate(zip(names, NAMES, strict=True)) if a != b)
        features = f"its features are in another order (position {k}: {names[k]!r}, this strategy's: {NAMES[k]!r})"
    if version != SCHEMA_VERSION:
        head = f"feature schema version {version}, this strategy computes version {SCHEMA_VERSION}"
        return f"{head} ({features})" if features else head
    return features


class FeatureState:
    """One instrument's incremental feature state. ``update(book, now)`` -> True once both venues have a valid book
    (``x`` then holds the vector as of this book); the tracked touch and times are public for the decision code."""

    __slots__ = (
        "_bn_m",
        "_bn_n",
        "_bn_t",
        "_d50",
        "_d200",
        "_d1000",
        "_dh",
        "_hl_m",
        "_hl_n",
        "_hl_t",
        "_m50",
        "_m200",
        "_m1000",
        "_mh",
        "_nk_basis",
        "_p50",
        "_p200",
        "_p1000",
        "_ph",
        "basis",
        "bn_ask",
        "bn_bid",
        "bn_mid",
        "bn_ok",
        "bn_seen",
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
        # as LatencyArb's k (the weight of an update dt ns later is 1 - exp(-k dt)), stored negated: -k * dt is
        # (-k) * dt, bit for bit, one operation fewer per book
        self._nk_basis = -(_LN2 / (ewma_half_life_s * 1e9))
        self._bn_t = [_UNWRITTEN] * RING  # later than any now: a walk never passes a slot not yet written
        self._bn_m = [0.0] * RING
        self._hl_t = [0] * RING
        self._hl_m = [0.0] * RING
        self._bn_n = self._hl_n = 0  # mids written so far (ring index = n & mask)
        # Per Binance horizon: the newest index at or before now - h (-1 before the first mid, whose mid is then the
        # base: the oldest kept), its mid (the return's base) and when to walk next: exactly the next slot's time +
        # h, so a book before then reads no ring and a walk from then on takes its first step untested. Hyperliquid's
        # (_ph, _mh, _dh): the same, but its due time may be early (harmless: its walk tests every step).
        self._p50 = self._p200 = self._p1000 = -1
        self._ph = 0
        self._m50 = self._m200 = self._m1000 = self._mh = 0.0
        self._d50 = self._d200 = self._d1000 = self._dh = _UNWRITTEN
        self.bn_bid = self.bn_ask = self.bn_mid = 0.0
        self.hl_bid = self.hl_ask = self.hl_mid = self.hl_half_spread_bps = 0.0
        self.bn_ok = self.hl_ok = self.bn_seen = self.hl_seen = False
        self.bn_t_recv = self.hl_t_recv = self.hl_t_exchange = 0
        self.basis = self.ewma = 0.0
        self.ewma_t = self.start_t = 0

    def update(self, book: tuple, now: int) -> bool:
        """Fold one BOOK record seen at ``now`` (ns) into the state; True when ``x`` is a full vector."""
        # Hot path (benchmarks/decision_cost.py; CPython pays per bytecode, so fewer operations is the whole game):
        # the record unpacked in one operation, each feature computed only on the venue whose book changes it, a
        # horizon's ring walked only once its due time has come (about half the Binance books move no Binance
        # pointer, nine in ten no Hyperliquid one) with the base mid kept beside the pointer. The arithmetic is
        # the straightforward form's, expression for expression, so the vector is too (bit for bit: tests).
        venue, flags, _, _, _, _, _, tx, t_recv, _, bid, bq, ask, aq, _ = book
        ok = (flags & TRADEABLE_MASK) == TRADEABLE
        # deliberate copy: the touch, book times, basis and EWMA are tracked as LatencyArb.on_book tracks them
        # (kept in step by tests/unit/strategy/test_strategy_copies_in_step.py)
        x = self.x
        if venue == _BINANCE:
            self.bn_ok = ok
            self.bn_t_recv = t_recv
            if ok:
                mid = (bid + ask) * 0.5
                depth = bq + aq
                n = self._bn_n
                ts = self._bn_t
                bm = self._bn_m
                ts[n & _MASK] = now
                bm[n & _MASK] = mid
                self._bn_n = n + 1
                if self.bn_seen:
                    # the ring overwrote the oldest horizon's pointer (> RING mids in 1 s): every pointer to the
                    # oldest mid kept, as a walk from there would
                    if n - self._p1000 >= RING:
                        self._clamp(n + 1 - RING)
                else:
                    self.bn_seen = True
                    self._m50 = self._m200 = self._m1000 = mid  # the oldest kept; due when this slot is h old
                    self._d50 = now + _H50
                    self._d200 = now + _H200
                    self._d1000 = now + _H1000
                self.bn_bid = bid
                self.bn_ask = ask
                self.bn_mid = mid
                # each pointer walks to the newest mid at or before now - h (the newest, at now, is never passed); its
                # due time is exact, so the first step is known to be taken
                if now >= self._d50:
                    p = self._p50 + 1
                    limit = now - _H50
                    t = ts[(p + 1) & _MASK]
                    while t <= limit:
                        p += 1
                        t = ts[(p + 1) & _MASK]
                    self._p50 = p
                    self._m50 = m = bm[p & _MASK]
                    self._d50 = t + _H50
                    x[F_BN_RET_50] = (mid - m) / mid * 1e4
                else:
                    x[F_BN_RET_50] = (mid - self._m50) / mid * 1e4
                if now >= self._d200:
                    p = self._p200 + 1
                    limit = now - _H200
                    t = ts[(p + 1) & _MASK]
                    while t <= limit:
                        p += 1
                        t = ts[(p + 1) & _MASK]
                    self._p200 = p
                    self._m200 = m = bm[p & _MASK]
                    self._d200 = t + _H200
                    x[F_BN_RET_200] = (mid - m) / mid * 1e4
                else:
                    x[F_BN_RET_200] = (mid - self._m200) / mid * 1e4
                if now >= self._d1000:
                    p = self._p1000 + 1
                    limit = now - _H1000
                    t = ts[(p + 1) & _MASK]
                    while t <= limit:
                        p += 1
                        t = ts[(p + 1) & _MASK]
                    self._p1000 = p
                    self._m1000 = m = bm[p & _MASK]
                    self._d1000 = t + _H1000
                    bn_ret = (mid - m) / mid * 1e4
                else:
                    bn_ret = (mid - self._m1000) / mid * 1e4
                x[F_BN_RET_1000] = bn_ret
                if depth > 0.0:
                    x[F_BN_IMB] = (bq - aq) / depth
                    x[F_BN_MICRO] = ((bid * aq + ask * bq) / depth - mid) / mid * 1e4
                else:
                    x[F_BN_IMB] = x[F_BN_MICRO] = 0.0
                x[F_BN_SPREAD] = (ask - bid) / mid * 1e4
            else:
                mid = self.bn_mid
                bn_ret = x[F_BN_RET_1000]
            if not self.start_t and not self._start(now):
                return False
            hl_mid = self.hl_mid
            hl_recv = self.hl_t_recv
        elif venue == _HYPERLIQUID:
            self.hl_ok = ok
            self.hl_t_recv = t_recv
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
                p = self._ph
                if p == n - 1:  # the pointer was at the newest mid: it may move on to this one 1 s from now
                    self._dh = now + _H1000
                elif n >= RING and p < n + 1 - RING:  # the ring overwrote it: the oldest mid kept
                    p = self._ph = n + 1 - RING
                    self._mh = self._hl_m[p & _MASK]
                    self._dh = self._hl_t[(p + 1) & _MASK] + _H1000
                elif n == 0:
                    self._mh = hl_mid
            else:
                hl_mid = self.hl_mid
            if not self.start_t and not self._start(now):
                return False
            mid = self.bn_mid
            bn_ret = x[F_BN_RET_1000]
            hl_recv = t_recv
        else:
            return False

        # -- cross-venue features (every book once both venues have been seen) ------------------------------------
        basis = (mid - hl_mid) / hl_mid * 1e4
        self.basis = basis
        ewma = self.ewma
        x[F_BASIS_DEV] = basis - ewma
        if ok:
            dt = now - self.ewma_t
            if dt > 0:
                ewma += (1.0 - _exp(self._nk_basis * dt)) * (basis - ewma)
                self.ewma_t = now
        self.ewma = ewma
        x[F_HL_AGE] = (now - hl_recv) * 1e-6
        # Hyperliquid's 1 s move, and the share of Binance's it has made (its newest mid may be older than 1 s:
        # the walk stops at it)
        if now >= self._dh:
            ts = self._hl_t
            last = self._hl_n - 1
            p = self._ph
            limit = now - _H1000
            while p < last and ts[(p + 1) & _MASK] <= limit:
                p += 1
            self._ph = p
            self._mh = self._hl_m[p & _MASK]
            self._dh = ts[(p + 1) & _MASK] + _H1000 if p < last else _UNWRITTEN
        hl_ret = (hl_mid - self._mh) / hl_mid * 1e4
        x[F_HL_RET_1000] = hl_ret
        if bn_ret >= CATCH_UP_MIN_BPS or bn_ret <= _NEG_CATCH_UP:
            c = hl_ret / bn_ret
            x[F_CATCH_UP] = 2.0 if c > 2.0 else (-1.0 if c < -1.0 else c)
        else:
            x[F_CATCH_UP] = 1.0
        return True

    def _start(self, now: int) -> bool:
        """Both venues seen for the first time (else False): the basis EWMA starts here at the basis, as LatencyArb's
        does (once per session: off the per-book path; this book's own update then finds dt = 0)."""
        if not (self.bn_seen and self.hl_seen):
            return False
        self.start_t = self.ewma_t = now
        self.ewma = (self.bn_mid - self.hl_mid) / self.hl_mid * 1e4
        return True

    def _clamp(self, lo: int) -> None:
        """More than RING Binance mids within a horizon: every pointer before ``lo`` (the oldest mid kept) moves to
        it (rare: off the per-book path), and the caller's walks go on from there, as they would have."""
        ts = self._bn_t
        m = self._bn_m[lo & _MASK]
        t = ts[(lo + 1) & _MASK]
        if self._p50 < lo:
            self._p50, self._m50, self._d50 = lo, m, t + _H50
        if self._p200 < lo:
            self._p200, self._m200, self._d200 = lo, m, t + _H200
        if self._p1000 < lo:
            self._p1000, self._m1000, self._d1000 = lo, m, t + _H1000
