"""The emulator's account ledger: one definition of an account's money and positions, read by both venues' views.

Per venue it keeps the starting balance (``CAERUS_SIM_START_BALANCE``, USD/USDT/USDC alike), the realised PnL of
closing fills, the trading fees paid (the venue's rate for the fill, caerus.fees, charged by the caller), the money
sent out of the account (Hyperliquid ``usdSend`` / ``withdraw3``), the position in each instrument (signed size,
average entry price), the chosen leverage and margin type per instrument, and a bounded history of fills. Equity,
unrealised PnL and margin are computed here from the positions and the marks the caller passes (the order desk's
top of book). Pure bookkeeping: no sockets, no clock.
"""

from __future__ import annotations

import collections
import os
from dataclasses import dataclass, field
from typing import Any

ENV_START_BALANCE = "CAERUS_SIM_START_BALANCE"
DEFAULT_START_BALANCE = 100_000.0
DEFAULT_LEVERAGE = 20
FILLS_KEPT = 2000  # per venue: Hyperliquid's userFills answers at most 2000 fills


@dataclass(frozen=True)
class Fill:
    """What one fill did to its position: the size before, the PnL it realised, and whether it opened/added
    (``closed == 0``), reduced, closed or flipped the position."""

    start: float  # signed position before the fill
    end: float  # signed position after
    closed_pnl: float  # realised by the part of the fill that reduced the position (before the fee)
    fee: float = 0.0  # the trading fee the fill paid (quote currency), taken from the wallet

    @property
    def closing(self) -> bool:
        return self.start != 0.0 and (self.start > 0) != (self.end - self.start > 0)


def start_balance_from_env(env: dict[str, str] | None = None) -> float:
    text = (os.environ if env is None else env).get(ENV_START_BALANCE, "")
    if not text:
        return DEFAULT_START_BALANCE
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{ENV_START_BALANCE} must be a number, got {text!r}") from None
    if not value >= 0.0:
        raise ValueError(f"{ENV_START_BALANCE} must be >= 0, got {text!r}")
    return value


@dataclass
class Ledger:
    """Every emulated account (one per venue)."""

    start_balance: float = DEFAULT_START_BALANCE
    realised: dict[str, float] = field(default_factory=lambda: collections.defaultdict(float))  # venue -> PnL
    fees: dict[str, float] = field(default_factory=lambda: collections.defaultdict(float))  # venue -> fees paid
    sent: dict[str, float] = field(default_factory=lambda: collections.defaultdict(float))  # venue -> sent out
    positions: dict[str, tuple[float, float]] = field(default_factory=dict)  # book key -> (signed size, entry)
    leverage: dict[str, tuple[int, bool]] = field(default_factory=dict)  # book key -> (leverage, is cross)
    fills: dict[str, collections.deque[dict[str, Any]]] = field(
        default_factory=lambda: collections.defaultdict(lambda: collections.deque(maxlen=FILLS_KEPT)))

    def position(self, key: str) -> tuple[float, float]:
        return self.positions.get(key, (0.0, 0.0))

    def book_fill(self, venue: str, key: str, is_buy: bool, px: float, qty: float, fee: float = 0.0) -> Fill:
        """Apply one fill to the position under ``key`` (average entry kept; PnL realised on the reduced part) and
        take its ``fee`` from the venue's wallet."""
        pos, entry = self.position(key)
        signed = qty if is_buy else -qty
        new = round(pos + signed, 8)
        closed = 0.0
        if pos != 0.0 and (pos > 0) != (signed > 0):  # reducing (and maybe flipping)
            reduced = min(abs(pos), qty)
            closed = (px - entry) * reduced * (1.0 if pos > 0 else -1.0)
            self.realised[venue] += closed
        if new == 0.0:
            entry = 0.0
        elif pos == 0.0 or (pos > 0) != (new > 0):
            entry = px  # opened, or flipped through zero: the fill's price
        elif (pos > 0) == (signed > 0):
            entry = (entry * abs(pos) + px * qty) / abs(new)  # added to: weighted average
        self.positions[key] = (new, entry)
        self.fees[venue] += fee
        return Fill(pos, new, closed, fee)

    def wallet(self, venue: str) -> float:
        """Wallet balance: the start plus realised PnL, less the fees paid and the money sent out (funding
        payments are not charged)."""
        return self.start_balance + self.realised[venue] - self.fees[venue] - self.sent[venue]

    def unrealised(self, key: str, mark: float | None) -> float:
        size, entry = self.position(key)
        return 0.0 if mark is None or size == 0.0 else (mark - entry) * size

    def leverage_of(self, key: str) -> tuple[int, bool]:
        return self.leverage.get(key, (DEFAULT_LEVERAGE, True))


def hl_direction(fill: Fill) -> str:
    """Hyperliquid's ``dir`` of a perp fill."""
    if fill.start == 0.0 or (fill.start > 0) == (fill.end > fill.start):
        return "Open Long" if fill.end > fill.start else "Open Short"
    if fill.end != 0.0 and (fill.end > 0) != (fill.start > 0):
        return "Long > Short" if fill.start > 0 else "Short > Long"
    return "Close Long" if fill.start > 0 else "Close Short"
