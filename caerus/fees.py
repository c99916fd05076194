"""The venues' trading fee schedules: one definition the emulator, the paper transport and the backtest all charge.

A fee is a fraction of the fill's notional (price x quantity), in the quote currency (USDT on Binance USD-M, USDC
on Hyperliquid): the taker rate when the fill took liquidity (an IOC, a market order, a limit that crossed), the
maker rate when a resting order was filled. Tiers are numbered from 0, the tier a new account starts at:

* Binance USD-M futures: VIP level 0 ("regular") to 9, maker / taker % of notional 0.0200 / 0.0500 (regular),
  0.0160 / 0.0400 (VIP 1), 0.0140 / 0.0350, 0.0120 / 0.0320, 0.0100 / 0.0300, 0.0080 / 0.0270, 0.0060 / 0.0250
  (VIP 6), 0.0040 / 0.0220, 0.0020 / 0.0200, 0.0000 / 0.0170 (VIP 9); paying in BNB (10% off) is not modelled.
* Hyperliquid perps: 14-day volume tiers 0 to 6, taker / maker 0.045 / 0.015 % (tier 0: a live ``userFees``
  answer reads ``userCrossRate`` 0.00045, ``userAddRate`` 0.00015), 0.040 / 0.012 (> $5M), 0.035 / 0.008 (> $25M),
  0.030 / 0.004 (> $100M), 0.028 / 0 (> $500M), 0.026 / 0 (> $2B), 0.024 / 0 (> $7B); maker rebates (by maker
  volume share), referral and staking discounts are not modelled.

Venues are named as in ``caerus.wire.Venue`` (``Venue(v).name.lower()``: "binance", "hyperliquid"); this module is
a bottom-layer vocabulary (see .importlinter) and imports nothing of caerus, so every layer may use it.
"""

from __future__ import annotations

from dataclasses import dataclass

VENUES = ("binance", "hyperliquid")


@dataclass(frozen=True, slots=True)
class FeeTier:
    """One tier of a venue's schedule: its name and its maker / taker rates in basis points of notional."""

    name: str
    maker_bps: float
    taker_bps: float
    min_volume_usd: float = 0.0  # Hyperliquid: the 14-day volume the tier starts at (Binance's: not recorded here)

    @property
    def maker_rate(self) -> float:
        return self.maker_bps * 1e-4

    @property
    def taker_rate(self) -> float:
        return self.taker_bps * 1e-4

    def rate(self, maker: bool) -> float:
        """The fraction of notional one fill pays: maker when it rested, taker when it took liquidity."""
        return self.maker_rate if maker else self.taker_rate


#: venue -> tiers, tier 0 (where every account starts) first
SCHEDULE: dict[str, tuple[FeeTier, ...]] = {
    "binance": (
        FeeTier("regular", 2.0, 5.0), FeeTier("VIP 1", 1.6, 4.0), FeeTier("VIP 2", 1.4, 3.5),
        FeeTier("VIP 3", 1.2, 3.2), FeeTier("VIP 4", 1.0, 3.0), FeeTier("VIP 5", 0.8, 2.7), FeeTier("VIP 6", 0.6, 2.5),
        FeeTier("VIP 7", 0.4, 2.2), FeeTier("VIP 8", 0.2, 2.0), FeeTier("VIP 9", 0.0, 1.7),
    ),
    "hyperliquid": (
        FeeTier("tier 0", 1.5, 4.5), FeeTier("tier 1", 1.2, 4.0, 5e6), FeeTier("tier 2", 0.8, 3.5, 25e6),
        FeeTier("tier 3", 0.4, 3.0, 100e6), FeeTier("tier 4", 0.0, 2.8, 500e6), FeeTier("tier 5", 0.0, 2.6, 2e9),
        FeeTier("tier 6", 0.0, 2.4, 7e9),
    ),
}


def tiers(venue: str) -> tuple[FeeTier, ...]:
    """The venue's tiers, tier 0 first; ValueError naming the venue when it has no schedule here."""
    try:
        return SCHEDULE[venue]
    except KeyError:
        raise ValueError(f"no fee schedule for venue {venue!r} (known: {', '.join(VENUES)})") from None


def tier(venue: str, number: int = 0) -> FeeTier:
    """Tier ``number`` of the venue's schedule; ValueError naming the venue and the tiers it has."""
    table = tiers(venue)
    if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number < len(table):
        raise ValueError(f"{venue} fee tier must be an integer 0..{len(table) - 1} "
                         f"({table[0].name} .. {table[-1].name}), got {number!r}")
    return table[number]


def taker_bps(venue: str, number: int = 0) -> float:
    return tier(venue, number).taker_bps


def maker_bps(venue: str, number: int = 0) -> float:
    return tier(venue, number).maker_bps


def taker_bps_by_tier(venue: str) -> tuple[float, ...]:
    """The venue's taker rate (bps) of every tier, tier 0 first."""
    return tuple(t.taker_bps for t in tiers(venue))


def fee(venue: str, number: int, notional: float, *, maker: bool) -> float:
    """What one fill of ``notional`` (quote currency) pays at tier ``number``."""
    return abs(notional) * tier(venue, number).rate(maker)
