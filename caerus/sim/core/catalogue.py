"""The instruments the emulated venues list: one table both venues' listings, order entry and the market model read.

Each :class:`ListedInstrument` is one perpetual: its Binance USD-M symbol and trading rules (PRICE_FILTER
``tickSize``, LOT_SIZE ``stepSize`` / ``maxQty``, MIN_NOTIONAL ``notional``) and its Hyperliquid coin (the
``name``), asset index (its position in ``meta``'s universe) and ``szDecimals``. ``start_price`` is where the
market model starts it. The values are realistic in magnitude, not today's exact venue values, except BTC's, which
are exactly what the BTC-only emulator always used (so a default session behaves as before).

Listed on one venue only (a client must cope with an instrument the other venue does not list): ``BTCDOM``
(Binance ``BTCDOMUSDT``, not in Hyperliquid's meta) and ``PURR`` (Hyperliquid only, not in exchangeInfo).
Pure data: no sockets, no other emulator module.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal


@dataclass(frozen=True)
class ListedInstrument:
    """One perpetual as the emulated venues list it (``binance_symbol`` / ``hl_asset`` None: not on that venue)."""

    name: str  # the catalogue name, which is also the Hyperliquid coin (``BTC``, ``kPEPE``)
    binance_symbol: str | None  # ``BTCUSDT``; None when Binance does not list it
    start_price: float  # the market model's fair price at the session start (USD)
    tick: Decimal  # Binance PRICE_FILTER tickSize
    step: Decimal  # Binance LOT_SIZE stepSize (and minQty)
    min_notional: Decimal  # Binance MIN_NOTIONAL notional (USDT)
    max_qty: Decimal  # Binance LOT_SIZE maxQty
    sz_decimals: int  # Hyperliquid szDecimals
    hl_asset: int | None  # Hyperliquid asset index (position in meta's universe); None when it does not list it

    @property
    def coin(self) -> str | None:
        """The Hyperliquid coin, or None when Hyperliquid does not list it."""
        return self.name if self.hl_asset is not None else None

    @property
    def price_decimals(self) -> int:
        """Decimals of a Binance price on this tick (``pricePrecision``)."""
        return decimals(self.tick)

    @property
    def qty_decimals(self) -> int:
        """Decimals of a Binance quantity on this step (``quantityPrecision``)."""
        return decimals(self.step)

    @property
    def hl_max_decimals(self) -> int:
        """Hyperliquid perps: a price has at most ``6 - szDecimals`` decimals (and 5 significant figures)."""
        return max(0, 6 - self.sz_decimals)


def decimals(value: Decimal) -> int:
    """Number of decimals of a grid step (``Decimal("0.010")`` -> 2, ``Decimal("1")`` -> 0)."""
    exponent = value.normalize().as_tuple().exponent
    assert isinstance(exponent, int)
    return max(0, -exponent)


def _d(text: str) -> Decimal:
    return Decimal(text)


# name, Binance symbol (None: not listed there), start price, tick, step, min notional, max qty, szDecimals.
# Listed on both venues; the Hyperliquid asset index is the position in this table (meta order), BTC first.
_BOTH: tuple[tuple[str, str, float, str, str, str, str, int], ...] = (
    ("BTC", "BTCUSDT", 95_000.0, "0.1", "0.001", "100", "1000", 5),
    ("ETH", "ETHUSDT", 3_300.0, "0.01", "0.001", "20", "10000", 4),
    ("SOL", "SOLUSDT", 190.0, "0.01", "1", "5", "1000000", 2),
    ("XRP", "XRPUSDT", 2.5, "0.0001", "0.1", "5", "10000000", 0),
    ("DOGE", "DOGEUSDT", 0.33, "0.00001", "1", "5", "50000000", 0),
    ("BNB", "BNBUSDT", 690.0, "0.01", "0.01", "5", "100000", 3),
    ("ADA", "ADAUSDT", 0.95, "0.0001", "1", "5", "10000000", 0),
    ("AVAX", "AVAXUSDT", 36.0, "0.001", "1", "5", "1000000", 2),
    ("LINK", "LINKUSDT", 22.0, "0.001", "0.01", "5", "1000000", 1),
    ("DOT", "DOTUSDT", 6.8, "0.001", "0.1", "5", "1000000", 1),
    ("LTC", "LTCUSDT", 105.0, "0.01", "0.001", "20", "100000", 2),
    ("BCH", "BCHUSDT", 440.0, "0.01", "0.001", "20", "100000", 3),
    ("TRX", "TRXUSDT", 0.25, "0.00001", "1", "5", "50000000", 0),
    ("ATOM", "ATOMUSDT", 6.5, "0.001", "0.01", "5", "1000000", 2),
    ("NEAR", "NEARUSDT", 5.0, "0.001", "1", "5", "1000000", 1),
    ("APT", "APTUSDT", 9.0, "0.0001", "0.1", "5", "1000000", 2),
    ("ARB", "ARBUSDT", 0.75, "0.0001", "0.1", "5", "10000000", 1),
    ("OP", "OPUSDT", 1.9, "0.0001", "0.1", "5", "10000000", 1),
    ("SUI", "SUIUSDT", 4.5, "0.0001", "0.1", "5", "10000000", 1),
    ("INJ", "INJUSDT", 22.0, "0.001", "0.1", "5", "1000000", 1),
    ("TIA", "TIAUSDT", 5.0, "0.0001", "1", "5", "1000000", 1),
    ("SEI", "SEIUSDT", 0.45, "0.0001", "1", "5", "10000000", 0),
    ("FIL", "FILUSDT", 5.2, "0.001", "0.1", "5", "1000000", 1),
    ("ETC", "ETCUSDT", 27.0, "0.001", "0.01", "5", "1000000", 2),
    ("UNI", "UNIUSDT", 13.0, "0.001", "1", "5", "1000000", 1),
    ("AAVE", "AAVEUSDT", 330.0, "0.01", "0.1", "5", "100000", 2),
    ("MKR", "MKRUSDT", 1_500.0, "0.1", "0.001", "5", "10000", 4),
    ("CRV", "CRVUSDT", 0.9, "0.0001", "0.1", "5", "10000000", 1),
    ("LDO", "LDOUSDT", 1.8, "0.0001", "1", "5", "10000000", 1),
    ("SNX", "SNXUSDT", 2.2, "0.001", "0.1", "5", "1000000", 1),
    ("COMP", "COMPUSDT", 80.0, "0.01", "0.001", "5", "100000", 2),
    ("DYDX", "DYDXUSDT", 1.4, "0.001", "0.1", "5", "10000000", 1),
    ("GMX", "GMXUSDT", 25.0, "0.001", "0.01", "5", "1000000", 2),
    ("STX", "STXUSDT", 1.6, "0.0001", "1", "5", "10000000", 1),
    ("RUNE", "RUNEUSDT", 4.5, "0.001", "1", "5", "1000000", 1),
    ("WLD", "WLDUSDT", 2.2, "0.0001", "1", "5", "10000000", 1),
    ("PENDLE", "PENDLEUSDT", 4.8, "0.0001", "1", "5", "1000000", 0),
    ("FET", "FETUSDT", 1.3, "0.0001", "1", "5", "10000000", 0),
    ("IMX", "IMXUSDT", 1.3, "0.0001", "1", "5", "10000000", 1),
    ("JUP", "JUPUSDT", 0.9, "0.0001", "1", "5", "10000000", 0),
    ("PYTH", "PYTHUSDT", 0.35, "0.0001", "1", "5", "10000000", 0),
    ("WIF", "WIFUSDT", 1.6, "0.0001", "0.1", "5", "10000000", 0),
    ("ORDI", "ORDIUSDT", 25.0, "0.001", "0.1", "5", "1000000", 2),
    ("ENA", "ENAUSDT", 0.9, "0.0001", "1", "5", "10000000", 0),
    ("ONDO", "ONDOUSDT", 1.4, "0.0001", "0.1", "5", "10000000", 0),
    ("TAO", "TAOUSDT", 450.0, "0.01", "0.001", "5", "100000", 3),
    ("AR", "ARUSDT", 17.0, "0.001", "0.1", "5", "1000000", 2),
    ("TON", "TONUSDT", 5.2, "0.0001", "0.1", "5", "1000000", 1),
    ("HBAR", "HBARUSDT", 0.3, "0.00001", "1", "5", "50000000", 0),
    ("XLM", "XLMUSDT", 0.42, "0.00001", "1", "5", "50000000", 0),
    ("ALGO", "ALGOUSDT", 0.38, "0.0001", "0.1", "5", "10000000", 0),
    ("SAND", "SANDUSDT", 0.55, "0.0001", "1", "5", "10000000", 0),
    ("GALA", "GALAUSDT", 0.035, "0.00001", "1", "5", "100000000", 0),
    ("BLUR", "BLURUSDT", 0.3, "0.0001", "1", "5", "10000000", 0),
    ("EIGEN", "EIGENUSDT", 3.5, "0.001", "0.1", "5", "1000000", 2),
    ("ZRO", "ZROUSDT", 5.5, "0.001", "0.1", "5", "1000000", 1),
    ("STRK", "STRKUSDT", 0.45, "0.0001", "0.1", "5", "10000000", 1),
    ("MANTA", "MANTAUSDT", 0.8, "0.0001", "0.1", "5", "10000000", 1),
    ("ENS", "ENSUSDT", 35.0, "0.001", "0.1", "5", "1000000", 2),
    ("RENDER", "RENDERUSDT", 7.5, "0.001", "0.1", "5", "1000000", 1),
    ("POL", "POLUSDT", 0.45, "0.0001", "1", "5", "10000000", 0),
    ("kPEPE", "1000PEPEUSDT", 0.018, "0.0000001", "1", "5", "500000000", 0),
    ("kSHIB", "1000SHIBUSDT", 0.022, "0.000001", "1", "5", "500000000", 0),
    ("kBONK", "1000BONKUSDT", 0.03, "0.000001", "1", "5", "500000000", 0),
    ("TRUMP", "TRUMPUSDT", 17.0, "0.001", "0.1", "5", "1000000", 1),
    ("HYPE", "HYPEUSDT", 25.0, "0.001", "0.01", "5", "1000000", 2),
)


def _build() -> tuple[ListedInstrument, ...]:
    out = [ListedInstrument(name, bn, px, _d(tick), _d(step), _d(notional), _d(max_qty), sz, asset)
           for asset, (name, bn, px, tick, step, notional, max_qty, sz) in enumerate(_BOTH)]
    # Listed on one venue only: Binance's BTC dominance index perpetual, and Hyperliquid's PURR (next asset index).
    out.append(ListedInstrument("BTCDOM", "BTCDOMUSDT", 5_800.0, _d("0.1"), _d("0.001"), _d("5"), _d("1000"), 4,
                                None))
    out.append(ListedInstrument("PURR", None, 0.2, _d("0.0001"), _d("1"), _d("5"), _d("10000000"), 0, len(_BOTH)))
    return tuple(out)


#: every instrument either emulated venue lists, BTC first
LISTED: tuple[ListedInstrument, ...] = _build()
BY_NAME: dict[str, ListedInstrument] = {i.name: i for i in LISTED}
#: Binance's listing (exchangeInfo order), by symbol
BINANCE: dict[str, ListedInstrument] = {i.binance_symbol: i for i in LISTED if i.binance_symbol is not None}
#: Hyperliquid's universe in asset-index order (meta order)
HYPERLIQUID: tuple[ListedInstrument, ...] = tuple(sorted((i for i in LISTED if i.hl_asset is not None),
                                                         key=lambda i: i.hl_asset or 0))
BTC = LISTED[0]


def by_name(names: Iterable[str]) -> tuple[ListedInstrument, ...]:
    """The listed instruments called ``names`` (catalogue names, as Hyperliquid spells the coin), in that order.

    ValueError naming every unknown name."""
    names = tuple(names)
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise ValueError(f"not listed by the emulated venues: {', '.join(map(repr, unknown))} "
                         f"(see caerus/sim/core/catalogue.py)")
    return tuple(BY_NAME[n] for n in names)
