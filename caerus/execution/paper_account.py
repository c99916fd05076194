"""Paper-trading account: position, average price, realized/unrealized PnL, fees and fill markouts.

Pure bookkeeping (no I/O, no clock reads): the paper transport feeds it fills and the target venue's books.

Markouts: for a fill at price p on side s (+1 buy, -1 sell), the markout at horizon h is
``s * (mid(t_fill + h) - p) / p`` in bps, where ``mid(t)`` is the mid of the book *prevailing* at t (the newest
book received at or before t). A markout is settled when a book received after ``t_fill + h`` arrives (the
previous book was the prevailing one) or when ``settle(now)`` is called with ``now >= t_fill + h``. Positive =
the fill was good (price moved in its favour). Each fill carries its arm (0 = the naive rule, 1 = the trained
model: wire.OrderFlags.MODEL of its order), and markouts are also summed per arm (``arm_markout_*``), for the
in-session A/B of the two (StrategyConfig.signal = "ab").
"""

from __future__ import annotations

import collections
import math

_EPS = 1e-12
#: the deciding arms a fill may carry, by index (0: wire.OrderFlags.MODEL clear, 1: set)
ARMS = ("naive", "model")


class PaperAccount:
    def __init__(self, fee_bps: float, markout_ms: tuple[float, ...]) -> None:
        self.fee = fee_bps * 1e-4
        self.horizons_ms = tuple(markout_ms)
        self._horizons_ns = tuple(int(h * 1e6) for h in markout_ms)
        self.position = 0.0
        self.avg_px = 0.0
        self.realized = 0.0
        self.fees = 0.0
        self.fills = 0
        self.volume = 0.0  # BTC traded
        self.notional = 0.0  # USD traded
        self.mid = math.nan  # mid of the latest book seen
        self.markout_n = [0] * len(markout_ms)
        self.markout_sum_bps = [0.0] * len(markout_ms)
        # per arm (ARMS), the same sums, and fills
        self.arm_fills = [0, 0]
        self.arm_markout_n = [[0] * len(markout_ms) for _ in ARMS]
        self.arm_markout_sum_bps = [[0.0] * len(markout_ms) for _ in ARMS]
        # One FIFO per horizon: fills arrive in time order, so each deque is ordered by due time.
        self._due: list[collections.deque[tuple[int, int, float, int]]] = [collections.deque() for _ in markout_ms]

    def fill(self, side: int, px: float, qty: float, t_ns: int, arm: int = 0) -> None:
        """Book a fill of ``qty`` (> 0) at ``px``; side +1 buy, -1 sell; ``arm`` 0 naive rule, 1 model."""
        if qty <= 0.0:
            return
        pos = self.position
        signed = side * qty
        if pos == 0.0 or (pos > 0.0) == (side > 0):
            new = pos + signed
            self.avg_px = (self.avg_px * abs(pos) + px * qty) / abs(new)
            self.position = new
        else:
            closing = min(qty, abs(pos))
            self.realized += closing * (px - self.avg_px) * (1.0 if pos > 0.0 else -1.0)
            new = pos + signed
            if abs(new) < _EPS:
                new = 0.0
                self.avg_px = 0.0
            elif (new > 0.0) != (pos > 0.0):
                self.avg_px = px  # flipped: the remainder opened a new position at this price
            self.position = new
        self.fees += px * qty * self.fee
        self.fills += 1
        self.volume += qty
        self.notional += px * qty
        self.arm_fills[arm] += 1
        for i, h in enumerate(self._horizons_ns):
            self._due[i].append((t_ns + h, side, px, arm))

    def on_book(self, mid: float, t_recv: int) -> None:
        """A new book of this venue received at ``t_recv``: settle markouts due before it, then take its mid."""
        self._settle(t_recv - 1)
        self.mid = mid

    def settle(self, now: int) -> None:
        """Settle markouts due at or before ``now`` against the latest mid."""
        self._settle(now)

    def _settle(self, until: int) -> None:
        mid = self.mid
        if mid != mid:  # no book yet
            return
        for i, dq in enumerate(self._due):
            while dq and dq[0][0] <= until:
                _, side, px, arm = dq.popleft()
                bps = side * (mid - px) / px * 1e4
                self.markout_n[i] += 1
                self.markout_sum_bps[i] += bps
                self.arm_markout_n[arm][i] += 1
                self.arm_markout_sum_bps[arm][i] += bps

    @property
    def unrealized(self) -> float:
        if self.position == 0.0 or self.mid != self.mid:
            return 0.0
        return self.position * (self.mid - self.avg_px)

    @property
    def total_pnl(self) -> float:
        """Realized + unrealized - fees, USD."""
        return self.realized + self.unrealized - self.fees

    def markout_mean_bps(self, i: int) -> float:
        return self.markout_sum_bps[i] / self.markout_n[i] if self.markout_n[i] else math.nan

    def arm_markout_mean_bps(self, arm: int, i: int) -> float:
        n = self.arm_markout_n[arm][i]
        return self.arm_markout_sum_bps[arm][i] / n if n else math.nan

    def summary(self) -> dict[str, object]:
        return {
            "fills": self.fills,
            "volume": self.volume,
            "notional": self.notional,
            "position": self.position,
            "avg_px": self.avg_px,
            "mid": None if self.mid != self.mid else self.mid,
            "realized": self.realized,
            "unrealized": self.unrealized,
            "fees": self.fees,
            "total_pnl": self.total_pnl,
            "markouts": {
                f"{h:g}ms": {
                    "n": self.markout_n[i],
                    "mean_bps": None if not self.markout_n[i] else self.markout_mean_bps(i),
                    "pending": len(self._due[i]),
                }
                for i, h in enumerate(self.horizons_ms)
            },
            # per deciding arm (naive rule / model), when the model decided any fill
            **({"arms": {name: {"fills": self.arm_fills[a],
                                "markouts": {f"{h:g}ms": {"n": self.arm_markout_n[a][i],
                                                         "mean_bps": None if not self.arm_markout_n[a][i]
                                                         else self.arm_markout_mean_bps(a, i)}
                                             for i, h in enumerate(self.horizons_ms)}}
                         for a, name in enumerate(ARMS)}} if self.arm_fills[1] else {}),
        }
