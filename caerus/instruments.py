"""The session's instruments: which perpetuals it trades, their ids on the wire, and each venue's trading rules.

One :class:`Instrument` per traded perpetual, in the order the session lists them; its position in that list is
its id, the ``symbol`` field of every BOOK, ORDER and EXEC record (so the first instrument, BTC by default, is
id 0 as in single-symbol sessions). Each carries both venues' names for it (Binance ``BTCUSDT`` <-> Hyperliquid
``BTC``) and the rules orders must follow: Binance tick size, lot step, minimum quantity and notional, and
Hyperliquid's asset index and ``szDecimals``.

The rules come from the venues at start (Binance ``exchangeInfo``, Hyperliquid ``meta``: see
caerus.session.instruments, which fetches and joins them) and are written once into the session folder as
``instruments.json``; every process reads that file (:func:`load`), so all of them agree on the ids and nothing
on a hot path asks a venue anything. A process given no file trades :data:`DEFAULT` (BTC with the values the
single-symbol fleet always used).

This module is a vocabulary: it imports nothing of the fleet above the wire.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path

FILE_NAME = "instruments.json"
FORMAT = 1
#: one book id per instrument in a u16 record field; far more than the venues' limits allow per connection
MAX_INSTRUMENTS = 4096
_NAME = re.compile(r"^[A-Za-z0-9]{1,20}$")


class InstrumentError(ValueError):
    """An instrument list or listing that cannot be traded; the message names the instrument and what is wrong."""


@dataclass(frozen=True)
class Instrument:
    """One perpetual as both venues list it."""

    id: int  # position in the session's list: BOOK.symbol / ORDER.symbol
    name: str  # the session's name (``BTC``)
    binance_symbol: str  # ``BTCUSDT``
    hl_coin: str  # ``BTC``
    tick_size: float  # Binance PRICE_FILTER tickSize
    lot_size: float  # Binance LOT_SIZE stepSize
    min_qty: float  # Binance LOT_SIZE minQty
    min_notional: float  # Binance MIN_NOTIONAL notional (USDT)
    hl_asset: int  # Hyperliquid asset index (position in meta's universe)
    sz_decimals: int  # Hyperliquid szDecimals

    @property
    def price_decimals(self) -> int:
        """Decimals of a Binance price on this tick."""
        return _decimals(self.tick_size)

    @property
    def qty_decimals(self) -> int:
        """Decimals of a Binance quantity on this lot step."""
        return _decimals(self.lot_size)

    @property
    def hl_max_decimals(self) -> int:
        """Hyperliquid perps: a price has at most ``6 - szDecimals`` decimals (and 5 significant figures)."""
        return max(0, 6 - self.sz_decimals)

    def check(self) -> None:
        """Raise InstrumentError naming the first rule that cannot be right."""
        if not 0 <= self.id < MAX_INSTRUMENTS:
            raise InstrumentError(f"{self.name}: id {self.id} is outside 0..{MAX_INSTRUMENTS - 1}")
        if not _NAME.match(self.name):
            raise InstrumentError(f"instrument name {self.name!r} is not 1-20 letters and digits")
        for name in ("tick_size", "lot_size"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise InstrumentError(f"{self.name}: {name} must be a positive number, got {value!r}")
        for name in ("min_qty", "min_notional"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise InstrumentError(f"{self.name}: {name} must be a number >= 0, got {value!r}")
        if not (isinstance(self.hl_asset, int) and self.hl_asset >= 0):
            raise InstrumentError(f"{self.name}: hl_asset must be an integer >= 0, got {self.hl_asset!r}")
        if not (isinstance(self.sz_decimals, int) and 0 <= self.sz_decimals <= 6):
            raise InstrumentError(f"{self.name}: sz_decimals must be 0..6, got {self.sz_decimals!r}")


def _decimals(step: float) -> int:
    return max(0, -math.floor(math.log10(step) + 1e-9))


class InstrumentSet(Sequence[Instrument]):
    """The session's instruments by id, with look-ups by session name and by each venue's name."""

    def __init__(self, instruments: Sequence[Instrument]) -> None:
        items = tuple(instruments)
        if not items:
            raise InstrumentError("no instruments: the session needs at least one")
        if len(items) > MAX_INSTRUMENTS:
            raise InstrumentError(f"{len(items)} instruments: at most {MAX_INSTRUMENTS}")
        for i, inst in enumerate(items):
            inst.check()
            if inst.id != i:
                raise InstrumentError(f"{inst.name}: id {inst.id} is not its position {i} in the list")
        self._items = items
        self.by_name = _unique(items, "name")
        self.by_binance = _unique(items, "binance_symbol")
        self.by_coin = _unique(items, "hl_coin")

    def __getitem__(self, i: int) -> Instrument:  # type: ignore[override]
        return self._items[i]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Instrument]:
        return iter(self._items)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, InstrumentSet) and self._items == other._items

    def __hash__(self) -> int:
        return hash(self._items)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(i.name for i in self._items)

    def to_json(self) -> dict[str, object]:
        return {"format": FORMAT, "instruments": [asdict(i) for i in self._items]}

    @classmethod
    def from_json(cls, obj: object, where: str = "instruments") -> InstrumentSet:
        if not isinstance(obj, dict) or obj.get("format") != FORMAT or not isinstance(obj.get("instruments"), list):
            raise InstrumentError(f"{where}: not a caerus instrument list (format {FORMAT})")
        names = {f.name for f in fields(Instrument)}
        items = []
        for i, entry in enumerate(obj["instruments"]):
            if not isinstance(entry, dict) or set(entry) != names:
                raise InstrumentError(f"{where}: entry {i} must have exactly the fields {sorted(names)}")
            items.append(Instrument(**entry))
        return cls(items)


def _unique(items: Sequence[Instrument], attr: str) -> dict[str, Instrument]:
    out: dict[str, Instrument] = {}
    for inst in items:
        key = getattr(inst, attr)
        if key in out:
            raise InstrumentError(f"{attr} {key!r} appears twice in the instrument list")
        out[key] = inst
    return out


@dataclass(frozen=True)
class SymbolRequest:
    """One entry of a ``--symbols`` list: the session name and each venue's name for it."""

    name: str
    binance_symbol: str
    hl_coin: str


def parse_symbols(text: str) -> tuple[SymbolRequest, ...]:
    """``BTC,ETH,SOL`` -> requests (Binance ``<NAME>USDT``, Hyperliquid ``<NAME>``). An entry
    ``NAME=BINANCE/COIN`` names both venues' symbols where they differ (``PEPE=1000PEPEUSDT/kPEPE``).
    Raises InstrumentError naming a malformed or repeated entry."""
    out: list[SymbolRequest] = []
    seen: set[str] = set()
    for raw in text.split(","):
        entry = raw.strip()
        if not entry:
            raise InstrumentError(f"--symbols {text!r}: an empty entry")
        name, sep, venues = entry.partition("=")
        name = name.strip().upper()
        if sep:
            bn, slash, coin = venues.partition("/")
            if not slash or not bn.strip() or not coin.strip():
                raise InstrumentError(f"--symbols entry {entry!r}: write NAME=BINANCESYMBOL/HLCOIN")
            req = SymbolRequest(name, bn.strip().upper(), coin.strip())
        else:
            req = SymbolRequest(name, f"{name}USDT", name)
        if not _NAME.match(req.name):
            raise InstrumentError(f"--symbols entry {entry!r}: {req.name!r} is not 1-20 letters and digits")
        if req.name in seen:
            raise InstrumentError(f"--symbols lists {req.name} twice")
        seen.add(req.name)
        out.append(req)
    return tuple(out)


#: BTC as the single-symbol fleet always traded it (Binance BTCUSDT 0.1 / 0.001, Hyperliquid asset 0, szDecimals 5)
BTC = Instrument(id=0, name="BTC", binance_symbol="BTCUSDT", hl_coin="BTC", tick_size=0.1, lot_size=0.001,
                 min_qty=0.001, min_notional=100.0, hl_asset=0, sz_decimals=5)
DEFAULT = InstrumentSet([BTC])


def save(instruments: InstrumentSet, path: Path) -> Path:
    """Write the list atomically (a process reading it never sees half a file)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(instruments.to_json(), indent=1) + "\n")
    os.replace(tmp, path)
    return path


def load(path: Path | str | None) -> InstrumentSet:
    """The list in ``path`` (:data:`DEFAULT` for None); InstrumentError naming the file and what is wrong."""
    if path is None:
        return DEFAULT
    try:
        obj = json.loads(Path(path).read_text())
    except OSError as exc:
        raise InstrumentError(f"instrument list {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise InstrumentError(f"instrument list {path}: not JSON ({exc})") from None
    return InstrumentSet.from_json(obj, str(path))
