"""Where a backtest's book events come from: a session folder, a chDB store, a ClickHouse URL, or the emulator's
market model run offline (no sockets, faster than real time).

Captured books are read with :func:`caerus.data.books` (the one way to read a capture store or a ClickHouse
server: its SQL, ``FINAL``, its URL and password-file rules), as an Arrow table whose columns become
:class:`~caerus.research.backtest.events.BookEvents` without a row loop. Every loader returns events in t_recv
order and fails with a one-line :class:`SourceError` naming what is missing (no such folder, no store, no books in
the range); a ClickHouse URL carrying credentials is refused as capture refuses it, never repeated.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from caerus import data
from caerus import instruments as instruments_mod
from caerus.capture.clickhouse import check_url
from caerus.capture.rows import VENUE_NAMES
from caerus.data.imports.meta import META_NAME
from caerus.instruments import InstrumentSet
from caerus.research.backtest.events import COLUMNS, BookEvents, EventsError
from caerus.sim.core import offline
from caerus.sim.core.market_config import DEFAULT_MARKET, MarketConfig, MarketFileError, load_market
from caerus.wire import BookFlags, Venue

_VENUE_CODES = {name: code for code, name in VENUE_NAMES.items()}  # capture's names of the codes


class SourceError(ValueError):
    """A source that cannot give book events (missing folder/store, empty range); one line naming it."""


@dataclass(frozen=True)
class Loaded:
    """Book events and what they are (printed in every report)."""

    events: BookEvents
    instruments: InstrumentSet
    description: str
    session_dir: Path | None = None
    # Hyperliquid's block interval where the source knows it (the offline market's hl_block_ms); None: the fill
    # model estimates it from the books (caerus.research.backtest.fills.estimate_block_ns)
    hl_block_ns: int | None = None


def _range_text(start: int | None, end: int | None) -> str:
    return f"[{start if start is not None else '-inf'}, {end if end is not None else '+inf'}) ns"


def _venue_codes(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Venue codes from caerus.data's dictionary column (capture's names of the codes), looked up once per
    dictionary entry, not per row."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    names = [str(n) for n in arr.dictionary.to_pylist()]
    unknown = [n for n in names if n not in _VENUE_CODES]
    if unknown:
        raise EventsError(f"book events name an unknown venue {unknown[0]!r}")
    lut = np.array([_VENUE_CODES[n] for n in names] or [0], dtype="u1")
    return lut[arr.indices.to_numpy(zero_copy_only=False)]


def events_from_books(tab: pa.Table) -> BookEvents:
    """caerus.data.books(..., frame="arrow") as BookEvents (sorted by t_recv, venue, seq)."""
    cols: dict[str, np.ndarray] = {"venue": _venue_codes(tab.column("venue")),
                                   "symbol": tab.column("symbol_id").to_numpy()}
    for name in COLUMNS:
        if name not in cols:
            cols[name] = tab.column(name).to_numpy()
    return BookEvents.from_columns(cols)


def _read(source: Path | str, label: str, start: int | None, end: int | None, session: str | None,
          instruments: InstrumentSet | None, user: str | None = None,
          password_file: Path | None = None) -> BookEvents:
    try:
        tab = data.books(source, start=start, end=end, session=session, instruments=instruments, user=user,
                         password_file=password_file, frame="arrow")
    except data.DataError as exc:
        raise SourceError(str(exc)) from None
    if tab.num_rows == 0:
        raise SourceError(f"no captured books in {label} for t_recv in {_range_text(start, end)}"
                          + (f", session {session!r}" if session else ""))
    try:
        return events_from_books(tab)
    except EventsError as exc:
        raise SourceError(f"{label}: {exc}") from None


def from_store(path: Path, start: int | None = None, end: int | None = None, session: str | None = None,
               instruments: InstrumentSet | None = None) -> Loaded:
    """An existing chDB capture store (never creates one)."""
    path = Path(path)
    if not (path / "chdb").is_dir():
        raise SourceError(f"no chDB capture store at {path} (expected {path / 'chdb'})")
    if (path / META_NAME).is_file():
        return _from_import(path, start, end, session, instruments)
    insts = instruments or instruments_mod.DEFAULT
    events = _read(path, str(path), start, end, session, insts)
    return Loaded(events, insts, f"chDB store {path}, t_recv {_range_text(start, end)}, {len(events)} books")


def _from_import(path: Path, start: int | None, end: int | None, session: str | None,
                 instruments: InstrumentSet | None) -> Loaded:
    """A store made by ``caerus data import``: its own instruments, receive times put on the venues' clock (each
    file's recorded offset taken off: research compares them with venue times), and the real market behind each
    venue slot named in the description (a COIN-M follower must never read as Hyperliquid)."""
    from caerus.data.imports.meta import describe_markets, recv_on_venue_clock

    inst_file = path / instruments_mod.FILE_NAME
    insts = instruments or instruments_mod.load(inst_file if inst_file.is_file() else None)
    try:
        tab = data.books(path, start=start, end=end, session=session, instruments=insts, frame="arrow")
    except data.DataError as exc:
        raise SourceError(str(exc)) from None
    if tab.num_rows == 0:
        raise SourceError(f"no imported books in {path} for t_recv in {_range_text(start, end)}")
    try:
        recv = recv_on_venue_clock(tab.column("t_recv").to_numpy(), tab.column("conn").to_numpy(), path)
    except ValueError as exc:  # ImportRefused: a file's offset missing from the record
        raise SourceError(str(exc)) from None
    tab = tab.set_column(tab.schema.get_field_index("t_recv"), "t_recv", pa.array(recv))
    try:
        events = events_from_books(tab)
    except EventsError as exc:
        raise SourceError(f"{path}: {exc}") from None
    markets = describe_markets(path) or "markets not recorded"
    return Loaded(events, insts, f"imported store {path} ({markets}); receive times on the venues' clock (each "
                                 f"file's recorded offset taken off), {len(events)} books")


def from_session(session_dir: Path, start: int | None = None, end: int | None = None) -> Loaded:
    """A session folder: its capture store and its instruments.json."""
    session_dir = Path(session_dir)
    if not session_dir.is_dir():
        raise SourceError(f"no such session folder: {session_dir}")
    if not (session_dir / "capture").is_dir():
        raise SourceError(f"session {session_dir.name} has no capture store (run with capture on)")
    inst_file = session_dir / instruments_mod.FILE_NAME
    insts = instruments_mod.load(inst_file if inst_file.is_file() else None)
    loaded = from_store(session_dir / "capture", start, end, instruments=insts)
    return Loaded(loaded.events, insts, f"session {session_dir.name}: " + loaded.description, session_dir)


def from_clickhouse(url: str, start: int | None, end: int | None, session: str | None = None, *,
                    user: str | None = None, password_file: Path | None = None,
                    instruments: InstrumentSet | None = None) -> Loaded:
    """A ClickHouse server over HTTP (the distributed capture path's store): ``http://HOST:PORT``, the password
    only from a 0600 file (caerus.capture.clickhouse's rules, so a URL with credentials is refused unrepeated)."""
    try:
        where = check_url(url)
    except ValueError as exc:
        raise SourceError(str(exc)) from None
    if start is None or end is None:
        raise SourceError("a ClickHouse source needs a time range: --start and --end")
    insts = instruments or instruments_mod.DEFAULT
    events = _read(where, where, start, end, session, insts, user, password_file)
    return Loaded(events, insts, f"ClickHouse {where}, t_recv {_range_text(start, end)}, {len(events)} books")


def offline_events(cfg: MarketConfig, duration_s: float) -> BookEvents:
    """The market model ``cfg`` run offline for ``duration_s`` simulated seconds (caerus.sim.core.offline: Binance
    quotes and the Hyperliquid blocks whose top changed, exchange times in ms as the venues stamp them) as the
    backtest's columns; t_recv left 0 for the latency model to draw (info age, feed internal)."""
    cols = offline.columns(cfg, duration_s)
    n = len(cols["t_ns"])
    if n == 0:
        raise SourceError(f"offline market produced no books in {duration_s:g} s")
    return BookEvents.from_columns({
        "venue": cols["venue"], "flags": [int(BookFlags.VALID)] * n, "symbol": cols["symbol"], "seq": cols["seq"],
        "t_exchange": cols["t_exchange"], "t_recv": [0] * n, "bid_px": cols["bid_px"], "bid_qty": cols["bid_qty"],
        "ask_px": cols["ask_px"], "ask_qty": cols["ask_qty"]}, sort=False)  # t_seen is drawn: the engine orders


def offline_market(duration_s: float, seed: int, symbols: tuple[str, ...] = ("BTC",),
                   market: str | Path = DEFAULT_MARKET, **overrides: object) -> Loaded:
    """The emulator's market ``market`` (a preset name or a market TOML, as ``venue-sim --market`` takes; the
    stochastic ``default`` unless told) generated in process, no sockets, with ``seed``, ``symbols`` and any
    other setting in ``overrides`` on top."""
    if not duration_s > 0:
        raise SourceError(f"offline market duration must be > 0 s, got {duration_s}")
    try:
        cfg = load_market(market, seed=seed, symbols=tuple(symbols), **overrides)
    except (MarketFileError, TypeError, ValueError) as exc:
        raise SourceError(f"offline market: {exc}") from None
    events = offline_events(cfg, duration_s)
    insts = _catalogue_instruments(tuple(symbols))
    return Loaded(events, insts, f"offline market model {market}: seed {seed}, {duration_s:g} s, symbols "
                  f"{','.join(symbols)}, {len(events)} books ({events.counts()})",
                  hl_block_ns=round(cfg.hl_block_ms * 1e6))


def _catalogue_instruments(symbols: tuple[str, ...]) -> InstrumentSet:
    """The emulated instruments as the session would list them (ids in ``symbols`` order)."""
    if symbols == ("BTC",):
        return instruments_mod.DEFAULT
    from caerus.sim.core.catalogue import BY_NAME

    out = []
    for k, name in enumerate(symbols):
        li = BY_NAME[name]
        out.append(instruments_mod.Instrument(
            id=k, name=name, binance_symbol=li.binance_symbol or f"{name}USDT", hl_coin=name,
            tick_size=float(li.tick), lot_size=float(li.step), min_qty=float(li.step),
            min_notional=float(li.min_notional), hl_asset=li.hl_asset if li.hl_asset is not None else k,
            sz_decimals=li.sz_decimals))
    return InstrumentSet(out)


def venue_name(code: int) -> str:
    return Venue(code).name.lower()
