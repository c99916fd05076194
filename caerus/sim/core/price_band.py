"""Price bands as the venues apply them to a limit order's price, measured from the instrument's mark.

Binance USD-M futures: the ``PERCENT_PRICE`` filter of ``exchangeInfo`` (``multiplierUp`` / ``multiplierDown``,
the same for every emulated symbol here). A limit price above ``mark x multiplierUp`` is refused with -4016
PRICE_HIGHER_THAN_MULTIPLIER_UP, one below ``mark x multiplierDown`` with -4024 PRICE_LOWER_THAN_MULTIPLIER_DOWN
(codes and names: the USDS-M futures "Error Codes" page, developers.binance.com; the message the venue sends names
the bound, ``Limit price can't be higher than 0.0521.``, as clients log it). Hyperliquid: an order price more than
80% away from the reference price (the oracle / mark) is refused with "Order price cannot be more than 80% away
from the reference price" (the venue's error text, as its clients map it).

Before an instrument's first book there is no mark, and nothing is refused (the desk has no market to measure
against, as with its other market checks). Pure: no sockets, no clock.
"""

from __future__ import annotations

from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

BINANCE_MULTIPLIER_UP = Decimal("1.0500")
BINANCE_MULTIPLIER_DOWN = Decimal("0.9500")
BINANCE_MULTIPLIER_DECIMAL = 4
#: the filter as ``exchangeInfo`` lists it
BINANCE_PERCENT_PRICE = {"filterType": "PERCENT_PRICE", "multiplierUp": str(BINANCE_MULTIPLIER_UP),
                         "multiplierDown": str(BINANCE_MULTIPLIER_DOWN),
                         "multiplierDecimal": str(BINANCE_MULTIPLIER_DECIMAL)}
HL_MAX_AWAY = Decimal("0.8")  # the largest |price - reference| / reference Hyperliquid accepts
HL_BAND_ERROR = "Order price cannot be more than 80% away from the reference price"


def _on_tick(value: Decimal, tick: Decimal, rounding: str) -> Decimal:
    return (value / tick).to_integral_value(rounding=rounding) * tick


def binance_refusal(price: Decimal, mark: float | None, tick: Decimal) -> tuple[int, str] | None:
    """(code, msg) when a LIMIT price is outside the PERCENT_PRICE band around ``mark``, else None. The bound is
    printed on the symbol's tick: the highest / lowest price the band lets through."""
    if mark is None:
        return None
    ref = Decimal(repr(mark))
    up, down = ref * BINANCE_MULTIPLIER_UP, ref * BINANCE_MULTIPLIER_DOWN
    if price > up:
        return -4016, f"Limit price can't be higher than {_on_tick(up, tick, ROUND_FLOOR)}."
    if price < down:
        return -4024, f"Limit price can't be lower than {_on_tick(down, tick, ROUND_CEILING)}."
    return None


def hyperliquid_refusal(price: Decimal, reference: float | None) -> str | None:
    """The venue's error when ``price`` is more than 80% away from ``reference``, else None."""
    if reference is None or reference <= 0:
        return None
    ref = Decimal(repr(reference))
    return HL_BAND_ERROR if abs(price - ref) > HL_MAX_AWAY * ref else None
