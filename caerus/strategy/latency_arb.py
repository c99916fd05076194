"""Latency-arb decision logic: pure, no I/O, fed one book at a time; testable on scripted book sequences.

The basis is ``(leader_mid - lagger_mid) / lagger_mid`` in bps, tracked by a time-based EWMA (half-life
``ewma_half_life_s``). The signal is the current basis minus the EWMA *before* this book updates it. Which venue
leads is the instrument's ``leader`` (default Binance: ``(binance_mid - hyperliquid_mid) / hyperliquid_mid``):
when a book of the leader pushes the signal past ``entry_bps`` the strategy buys (signal > 0) or sells
(signal < 0) Hyperliquid with an IOC at the Hyperliquid touch +- ``slippage_bps``, rounded to Hyperliquid's price
grid away from the touch. Entries are only taken on the leader's books (a move of the lagger alone is not a lead).

A position exits (whole size, IOC on the other side) on any book when the signal in the position's direction
falls to ``exit_bps`` (Hyperliquid caught up, or the EWMA absorbed the move), goes ``reversal_bps`` against it,
or the position is ``max_hold_ms`` old. ``cooldown_ms`` separates an order from the next entry; exits are never
held back by the cooldown. Entries that would take |position| beyond ``max_position`` are blocked.

One instance per instrument (caerus.strategy.instrument_desk): its own books, EWMA, orders and position; its parameters
are the config's with the instrument's own values (``StrategyConfig.for_instrument``), and its price grid comes from the
instrument's ``szDecimals``. With ``order_notional`` set and no ``order_qty`` of its own, the entry size is fixed at the
instrument's first Hyperliquid book.

Kill switch: once ``halted`` no order fires, except -- with ``flatten_on_halt`` -- one FLATTEN IOC closing the
position the strategy believes it holds (still subject to the book guards below).

Guards, checked only when an order would fire (each blocked order counts one guard, the first that blocked):
halted (kill switch), invalid book (latest record of either venue lacks BookFlags.VALID or has STALE), book age
by local receipt (now - t_recv) per venue, Hyperliquid information age (t_recv - t_exchange). An invalid book
never moves the tracked prices or the EWMA.

Position: confirmed fills only, from the execution engine's EXEC records (``on_exec``, kept by
:class:`caerus.strategy.orders.OrderTable`). While one of its orders is in flight the strategy proposes nothing
(``guard.in_flight``): an order is neither ignored nor assumed filled. Exits are sized to the confirmed position,
less what an UNKNOWN exit may already have closed; entries count UNKNOWN orders at their worst case against
``max_position``. ``on_book`` only proposes an order; the caller reports a successful push with ``fired`` (so a
full order ring never desynchronises the state).
"""

from __future__ import annotations

import math
from typing import Protocol

from caerus.instruments import Instrument
from caerus.records.book import BOOK_ASK_PX, BOOK_BID_PX, BOOK_FLAGS, BOOK_T_EXCHANGE, BOOK_T_RECV, BOOK_VENUE
from caerus.strategy.config import StrategyConfig
from caerus.strategy.orders import OrderTable
from caerus.wire import TRADEABLE, TRADEABLE_MASK, OrderReason, Side, Venue

# A decision is a plain tuple (side, reason, px, qty): building it is the only allocation on the fire path.
D_SIDE, D_REASON, D_PX, D_QTY = 0, 1, 2, 3

# Guard counters (indices into ``LatencyArb.guards``); names are what the process exposes as counters.
GUARD_NAMES = (
    "guard.halted",
    "guard.cooldown",
    "guard.position_limit",
    "guard.invalid.binance",
    "guard.invalid.hyperliquid",
    "guard.stale.binance",
    "guard.stale.hyperliquid",
    "guard.info_age.hyperliquid",
    "guard.in_flight",
)
(G_HALTED, G_COOLDOWN, G_POSITION, G_INVALID_BN, G_INVALID_HL, G_STALE_BN, G_STALE_HL, G_INFO_AGE_HL,
 G_IN_FLIGHT) = range(len(GUARD_NAMES))

_BINANCE = int(Venue.BINANCE)
_HYPERLIQUID = int(Venue.HYPERLIQUID)
_BUY = int(Side.BUY)
_SELL = int(Side.SELL)
_ENTRY = int(OrderReason.ENTRY)
_EXIT_THRESHOLD = int(OrderReason.EXIT_THRESHOLD)
_EXIT_REVERSAL = int(OrderReason.EXIT_REVERSAL)
_EXIT_MAX_HOLD = int(OrderReason.EXIT_MAX_HOLD)
_FLATTEN = int(OrderReason.FLATTEN)
_QTY_EPS = 1e-12
_LN2 = math.log(2.0)


class TrackedBooks(Protocol):
    """The latest books as a signal tracks them: what the book guards and the IOC price read."""

    bn_seen: bool
    hl_seen: bool
    bn_ok: bool
    hl_ok: bool
    bn_t_recv: int
    hl_t_recv: int
    hl_t_exchange: int
    hl_bid: float
    hl_ask: float


def round_to_grid(px: float, sig_figs: int, max_decimals: int, up: bool) -> float:
    """Round a price onto Hyperliquid's grid, up (buy limits) or down (sell limits), so slippage is never less
    than configured. Grid: at most ``sig_figs`` significant figures and ``max_decimals`` decimals, but an integer
    price is always valid (Hyperliquid's tick rules), so the tick is never above 1 (BTC above 100k: 1 USD)."""
    if px <= 0.0:
        return 0.0
    exp = math.floor(math.log10(px)) - (sig_figs - 1)
    decimals = min(max_decimals, -exp) if exp < 0 else 0
    scale = 10.0**decimals  # exact in a double up to 10**22
    units = px * scale
    # A hair of tolerance so a price already on the grid is not pushed a whole tick by float noise.
    units = math.ceil(units - 1e-9) if up else math.floor(units + 1e-9)
    # An integer over an exact power of ten is rounded once, to the double nearest the grid price: what
    # round(units * tick, decimals) gave, without its decimal conversion (dtoa), whose code a fire ran cold on a
    # shared CPU (1.1 vs 2.2 us after a 1 ms sleep, 0.19 vs 0.45 us warm).
    return units / scale


def notional_qty(notional: float, mid: float, sz_decimals: int) -> float:
    """The order size worth ``notional`` (USD) at ``mid``, rounded down to the instrument's ``szDecimals`` (never
    below one step): the entry size of an instrument without an ``order_qty`` of its own."""
    step = 10.0**-sz_decimals
    return max(round(math.floor(notional / mid / step + 1e-9) * step, sz_decimals), step)


def sized_by_notional(cfg: StrategyConfig, instrument: Instrument | None) -> float:
    """``order_notional`` when it sizes ``instrument``'s entries (set, and the instrument has no ``order_qty`` of
    its own), else 0."""
    own = instrument is not None and instrument.name in cfg.instruments \
        and cfg.instruments[instrument.name].order_qty is not None
    return cfg.order_notional if cfg.order_notional is not None and not own else 0.0


class LatencyArb:
    """Binance-leads-Hyperliquid latency arb over top-of-book records. One instance per strategy process."""

    __slots__ = (
        "_age_bn",
        "_age_hl",
        "_cooldown",
        "_dec",
        "_entry_bps",
        "_exit_bps",
        "_flatten",
        "_info_hl",
        "_k",
        "_lead",
        "_max_hold",
        "_max_pos",
        "_notional",
        "_pos_ratio",
        "_qty",
        "_reversal_bps",
        "_sig",
        "_slip",
        "_warmup",
        "basis",
        "bn_ask",
        "bn_bid",
        "bn_mid",
        "bn_ok",
        "bn_seen",
        "bn_t_recv",
        "decisions",
        "entry_t",
        "ewma",
        "ewma_t",
        "guards",
        "halted",
        "hl_ask",
        "hl_bid",
        "hl_mid",
        "hl_ok",
        "hl_seen",
        "hl_t_exchange",
        "hl_t_recv",
        "instrument",
        "last_fire_t",
        "orders",
        "signal",
        "start_t",
        "tracked",
    )  # fmt: skip

    def __init__(self, cfg: StrategyConfig, instrument: Instrument | None = None) -> None:
        notional = sized_by_notional(cfg, instrument)
        if instrument is not None:
            cfg = cfg.for_instrument(instrument.name)
        self.instrument = instrument
        self._entry_bps = cfg.entry_bps
        self._exit_bps = cfg.exit_bps
        self._reversal_bps = cfg.reversal_bps
        self._max_hold = int(cfg.max_hold_ms * 1e6)
        self._cooldown = int(cfg.cooldown_ms * 1e6)
        self._k = _LN2 / (cfg.ewma_half_life_s * 1e9)  # EWMA weight of an update dt ns later: 1 - exp(-k dt)
        self._warmup = int(cfg.warmup_ms * 1e6)
        self._slip = cfg.slippage_bps * 1e-4
        self._qty = cfg.order_qty
        self._max_pos = cfg.max_position
        self._notional = notional  # > 0: size entries to this notional at the first Hyperliquid book
        self._pos_ratio = cfg.max_position / cfg.order_qty
        self._age_bn = int(cfg.max_book_age_ms_binance * 1e6)
        self._age_hl = int(cfg.max_book_age_ms_hyperliquid * 1e6)
        self._info_hl = int(cfg.max_info_age_ms_hyperliquid * 1e6)
        self._sig = cfg.hl_sig_figs
        self._dec = instrument.hl_max_decimals if instrument is not None else cfg.hl_max_decimals
        self._flatten = cfg.flatten_on_halt
        self._lead = int(Venue[cfg.leader.upper()])  # the leading venue's wire code (config names it)
        self.bn_bid = self.bn_ask = self.bn_mid = 0.0
        self.hl_bid = self.hl_ask = self.hl_mid = 0.0
        self.bn_ok = self.hl_ok = False  # latest record of the venue is VALID and not STALE
        self.bn_seen = self.hl_seen = False  # a valid book of the venue has been seen at least once
        self.bn_t_recv = self.hl_t_recv = self.hl_t_exchange = 0
        self.ewma = 0.0
        self.ewma_t = 0
        self.start_t = 0  # when the basis was first measured (0 = not yet)
        self.basis = 0.0
        self.signal = 0.0
        self.orders = OrderTable(cfg.strategy_id, cfg.order_table_size, cfg.order_timeout_ms)
        self.entry_t = 0
        self.last_fire_t = -(1 << 62)
        self.halted = False
        self.guards = [0] * len(GUARD_NAMES)
        self.decisions = 0  # orders proposed (including ones a guard then blocked)
        self.tracked: TrackedBooks = self  # what the book guards and the price read (ModelArb: its FeatureState)

    def on_book(self, book: tuple, now: int) -> tuple | None:
        """Feed one BOOK record seen at ``now`` (ns); returns (side, reason, px, qty) to send, or None."""
        venue = book[BOOK_VENUE]
        ok = (book[BOOK_FLAGS] & TRADEABLE_MASK) == TRADEABLE
        # deliberate copy: FeatureState.update tracks the books, basis and EWMA the same way in its own hot loop
        # (kept in step by tests/unit/strategy/test_strategy_copies_in_step.py)
        if venue == _BINANCE:
            self.bn_ok = ok
            self.bn_t_recv = book[BOOK_T_RECV]
            if ok:
                bid = book[BOOK_BID_PX]
                ask = book[BOOK_ASK_PX]
                self.bn_bid = bid
                self.bn_ask = ask
                self.bn_mid = (bid + ask) * 0.5
                self.bn_seen = True
        elif venue == _HYPERLIQUID:
            self.hl_ok = ok
            self.hl_t_recv = book[BOOK_T_RECV]
            self.hl_t_exchange = book[BOOK_T_EXCHANGE]
            if ok:
                bid = book[BOOK_BID_PX]
                ask = book[BOOK_ASK_PX]
                self.hl_bid = bid
                self.hl_ask = ask
                self.hl_mid = (bid + ask) * 0.5
                if not self.hl_seen:
                    self._first_hl_book()
        else:
            return None
        if not (self.bn_seen and self.hl_seen):
            return None

        if self._lead == _BINANCE:
            basis = (self.bn_mid - self.hl_mid) / self.hl_mid * 1e4
        else:
            basis = (self.hl_mid - self.bn_mid) / self.bn_mid * 1e4
        self.basis = basis
        if self.start_t == 0:
            self.start_t = now
            self.ewma = basis
            self.ewma_t = now
        signal = basis - self.ewma
        self.signal = signal
        if ok:
            dt = now - self.ewma_t
            if dt > 0:
                self.ewma += (1.0 - math.exp(-self._k * dt)) * (basis - self.ewma)
                self.ewma_t = now

        # -- what would we do? --------------------------------------------------------------------------
        orders = self.orders
        position = orders.position  # confirmed fills only
        reason = 0
        side = 0
        qty = 0.0
        if self.halted and self._flatten and (position > _QTY_EPS or position < -_QTY_EPS):
            reason = _FLATTEN  # halted with a position and told to flatten: one IOC closing it, guards still apply
            side = _SELL if position > 0.0 else _BUY
            qty = _exit_qty(position, orders)
        elif position > _QTY_EPS or position < -_QTY_EPS:
            pos_side = _BUY if position > 0.0 else _SELL
            s = signal if pos_side == _BUY else -signal
            if s <= -self._reversal_bps:
                reason = _EXIT_REVERSAL
            elif s <= self._exit_bps:
                reason = _EXIT_THRESHOLD
            elif now - self.entry_t >= self._max_hold:
                reason = _EXIT_MAX_HOLD
            if reason:
                side = -pos_side
                qty = _exit_qty(position, orders)
        if not reason and venue == self._lead and now - self.start_t >= self._warmup:
            if signal >= self._entry_bps:
                side = _BUY
            elif signal <= -self._entry_bps:
                side = _SELL
            if side:
                # deliberate copy: ModelArb.on_book inlines these two entry guards (kept in step by
                # tests/unit/strategy/test_strategy_copies_in_step.py)
                if now - self.last_fire_t < self._cooldown:
                    self.guards[G_COOLDOWN] += 1
                    return None
                # Worst case: every UNKNOWN order on the same side filled.
                new_pos = (position + orders.unknown_long + self._qty if side == _BUY
                           else position - orders.unknown_short - self._qty)
                if new_pos > self._max_pos + _QTY_EPS or new_pos < -self._max_pos - _QTY_EPS:
                    self.guards[G_POSITION] += 1
                    return None
                reason = _ENTRY
                qty = self._qty
        if not reason:
            return None
        return self._propose(self, side, reason, qty, now)

    def _propose(self, books: TrackedBooks, side: int, reason: int, qty: float, now: int) -> tuple | None:
        """The order a signal asks for, through the rules every signal shares: held back while one is in flight,
        then the guards in their order (each blocked order counts the first that blocked it), then priced as an
        IOC at the Hyperliquid touch +- slippage: (side, reason, px, qty) or None. ``books`` tracks the touch and
        book times the guards read (this object for the naive rule, the model's FeatureState for ModelArb).
        Reached only when the signal wants an order, so the call costs the per-book path nothing."""
        orders = self.orders
        guards = self.guards
        if orders.in_flight:
            guards[G_IN_FLIGHT] += 1  # one order at a time: wait for its result
            return None
        if qty <= _QTY_EPS:
            guards[G_IN_FLIGHT] += 1  # an UNKNOWN exit may already have closed what is left
            return None
        self.decisions += 1
        if self.halted and reason != _FLATTEN:
            guards[G_HALTED] += 1
            return None
        blocked = self._book_guard(books, now)
        if blocked >= 0:
            guards[blocked] += 1
            return None
        return (side, reason, self._ioc_px(books, side), qty)

    def _book_guard(self, books: TrackedBooks, now: int) -> int:
        """The first book guard the tracked books fail now (a G_* index), -1 when they let an order through."""
        if not books.bn_ok:
            return G_INVALID_BN
        if not books.hl_ok:
            return G_INVALID_HL
        if now - books.bn_t_recv > self._age_bn:
            return G_STALE_BN
        if now - books.hl_t_recv > self._age_hl:
            return G_STALE_HL
        if books.hl_t_recv - books.hl_t_exchange > self._info_hl:
            return G_INFO_AGE_HL
        return -1

    def _ioc_px(self, books: TrackedBooks, side: int) -> float:
        """The IOC limit: the Hyperliquid touch +- slippage, rounded onto the grid away from the touch."""
        if side == _BUY:
            return round_to_grid(books.hl_ask * (1.0 + self._slip), self._sig, self._dec, True)
        return round_to_grid(books.hl_bid * (1.0 - self._slip), self._sig, self._dec, False)

    def _first_hl_book(self) -> None:
        """The instrument's first valid Hyperliquid book: size entries to ``order_notional`` when asked to."""
        self.hl_seen = True
        if self._notional > 0.0:
            self._qty = notional_qty(self._notional, self.hl_mid,
                                     self.instrument.sz_decimals if self.instrument is not None else 5)
            self._max_pos = self._qty * self._pos_ratio
            self._notional = 0.0

    @property
    def order_qty(self) -> float:
        return self._qty

    def shadow(self, now: int) -> tuple | None:
        """A shadow decision (wire.OrderFlags.SHADOW): the order an entry would send now, in the signal's direction,
        after the same book guards a real fire reads -- priced the same way, counted nowhere, changing no state.
        None when a real fire could not be priced either (books missing, invalid or too old)."""
        books = self.tracked
        if not (books.bn_seen and books.hl_seen) or self._book_guard(books, now) >= 0:
            return None
        side = _BUY if self.signal >= 0.0 else _SELL
        return (side, _ENTRY, self._ioc_px(books, side), self._qty)

    def fired(self, decision: tuple, now: int, order_id: int, seq: int) -> None:
        """The decision was written to the order ring at ``now``: it is in flight (not filled: see ``on_exec``)."""
        before = self.orders.position
        if decision[D_REASON] == _ENTRY and -_QTY_EPS < before < _QTY_EPS:
            self.entry_t = now  # max-hold counts from the first entry of a position
        self.orders.sent(order_id, seq, decision[D_SIDE], decision[D_QTY], now)
        self.last_fire_t = now

    def on_exec(self, rec: tuple) -> float:
        """One EXEC record from the engine (any strategy's): the signed confirmed fill it added."""
        return self.orders.on_exec(rec)

    @property
    def position(self) -> float:
        """BTC, positive = long Hyperliquid: confirmed fills only."""
        return self.orders.position


def _exit_qty(position: float, orders: OrderTable) -> float:
    """The confirmed position, less what UNKNOWN orders on the closing side may already have closed."""
    if position > 0.0:
        return position - orders.unknown_short
    return -position - orders.unknown_long
