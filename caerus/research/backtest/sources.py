"""Where a backtest's book events come from: a session folder, a chDB store, a ClickHouse URL, or the emulator's
market model run offline (no sockets, faster than real time).

Every loader returns :class:`caerus.research.backtest.events.BookEvents` in t_recv order and fails with a
one-line :class:`SourceError` naming what is missing (no such folder, no store, no books in the range). Captured
books are read with ``FINAL`` (each row once) in the engine: Python receives columns, not rows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from caerus import instruments as instruments_mod
from caerus.instruments import InstrumentSet
from caerus.research.backtest.events import BookEvents, EventsError
from caerus.wire import BookFlags, Venue

#: where offline market time starts (2026-01-01T00:00:00Z): any fixed epoch keeps runs reproducible
OFFLINE_EPOCH_NS = 1_767_225_600_000_000_000
_BOOK_SELECT = ("SELECT toUInt8(venue) AS venue, flags, symbol, seq, t_exchange, t_recv, t_publish, bid_px, "
                "bid_qty, ask_px, ask_qty FROM caerus.books FINAL")


class SourceError(ValueError):
    """A source that cannot give book events (missing folder/store, empty range); one line naming it."""


@dataclass(frozen=True)
class Loaded:
    """Book events and what they are (printed in every report)."""

    events: BookEvents
    instruments: InstrumentSet
    description: str
    session_dir: Path | None = None


def _where(start: int | None, end: int | None, session: str | None) -> str:
    conds = []
    if start is not None:
        conds.append(f"t_recv >= {int(start)}")
    if end is not None:
        conds.append(f"t_recv < {int(end)}")
    if session is not None:
        conds.append("session = '" + session.replace("\\", "\\\\").replace("'", "\\'") + "'")
    return (" WHERE " + " AND ".join(conds)) if conds else ""


def _range_text(start: int | None, end: int | None) -> str:
    return f"[{start if start is not None else '-inf'}, {end if end is not None else '+inf'}) ns"


def open_store(path: Path):
    """An existing chDB capture store (never creates one)."""
    from caerus.capture.store import ChdbStore, StoreError

    path = Path(path)
    if not (path / "chdb").is_dir():
        raise SourceError(f"no chDB capture store at {path} (expected {path / 'chdb'})")
    try:
        return ChdbStore(path)
    except StoreError as exc:
        raise SourceError(str(exc)) from None


def from_store(path: Path, start: int | None = None, end: int | None = None, session: str | None = None,
               instruments: InstrumentSet | None = None) -> Loaded:
    store = open_store(path)
    try:
        df = store.query_df(_BOOK_SELECT + _where(start, end, session) + " ORDER BY t_recv, venue, seq")
    finally:
        store.close()
    if df.empty:
        raise SourceError(f"no captured books in {path} for t_recv in {_range_text(start, end)}"
                          + (f", session {session!r}" if session else ""))
    try:
        events = BookEvents.from_columns({c: df[c].to_numpy() for c in df.columns})
    except EventsError as exc:
        raise SourceError(f"{path}: {exc}") from None
    return Loaded(events, instruments or instruments_mod.DEFAULT,
                  f"chDB store {path}, t_recv {_range_text(start, end)}, {len(events)} books")


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


def from_clickhouse(url: str, start: int | None, end: int | None, session: str | None = None) -> Loaded:
    """A ClickHouse server over HTTP (the distributed capture path's store)."""
    import urllib.error
    import urllib.parse
    import urllib.request

    if start is None or end is None:
        raise SourceError("a ClickHouse source needs a time range: --start and --end")
    sql = (_BOOK_SELECT + _where(start, end, session) + " ORDER BY t_recv, venue, seq FORMAT JSONCompactColumns")
    req = urllib.request.Request(url.rstrip("/") + "/?" + urllib.parse.urlencode({"query": sql}), method="POST")
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            cols = json.loads(resp.read())
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise SourceError(f"ClickHouse at {url}: {exc}") from None
    names = ("venue", "flags", "symbol", "seq", "t_exchange", "t_recv", "t_publish", "bid_px", "bid_qty", "ask_px",
             "ask_qty")
    if not cols or not cols[0]:
        raise SourceError(f"no captured books at {url} for t_recv in {_range_text(start, end)}")
    events = BookEvents.from_columns({n: np.asarray(c) for n, c in zip(names, cols, strict=True)})
    return Loaded(events, instruments_mod.DEFAULT, f"ClickHouse {url}, t_recv {_range_text(start, end)}")


def offline_market(duration_s: float, seed: int, symbols: tuple[str, ...] = ("BTC",),
                   **market: object) -> Loaded:
    """The emulator's market model, generated in process (no sockets): Binance quotes and the Hyperliquid blocks
    whose top changed (what the bbo channel sends), with exchange times truncated to ms as the venues send them.
    t_recv and t_publish are left 0: the latency model draws them (info age, feed internal)."""
    from caerus.sim.market import BinanceQuote, MarketConfig, MarketModel

    if duration_s <= 0:
        raise SourceError(f"offline market duration must be > 0 s, got {duration_s}")
    try:
        model = MarketModel(MarketConfig(seed=seed, symbols=symbols, **market))  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise SourceError(f"offline market: {exc}") from None
    end = int(duration_s * 1e9)
    valid = int(BookFlags.VALID)
    rows: list[tuple] = []
    hl_seq = [0] * len(symbols)
    for ev in model.events():
        if ev.t_ns >= end:
            break
        t_ms = (OFFLINE_EPOCH_NS + ev.t_ns) // 1_000_000 * 1_000_000
        if isinstance(ev, BinanceQuote):
            rows.append((1, valid, ev.symbol, ev.update_id, t_ms, ev.bid, ev.bid_qty, ev.ask, ev.ask_qty))
        elif ev.changed and ev.bid is not None and ev.ask is not None:
            hl_seq[ev.symbol] += 1
            rows.append((2, valid, ev.symbol, hl_seq[ev.symbol], t_ms, ev.bid.px, ev.bid.sz, ev.ask.px, ev.ask.sz))
    if not rows:
        raise SourceError(f"offline market produced no books in {duration_s} s")
    cols = list(zip(*rows, strict=True))
    names = ("venue", "flags", "symbol", "seq", "t_exchange", "bid_px", "bid_qty", "ask_px", "ask_qty")
    data = {n: np.asarray(c) for n, c in zip(names, cols, strict=True)}
    data["t_recv"] = np.zeros(len(rows), dtype=np.int64)
    # t_recv is drawn later: order by exchange time now (the engine orders by t_seen)
    events = BookEvents.from_columns(data, sort=False)
    insts = _catalogue_instruments(symbols)
    return Loaded(events, insts, f"offline market model: seed {seed}, {duration_s:g} s, symbols "
                  f"{','.join(symbols)}, {len(events)} books ({events.counts()})")


def _catalogue_instruments(symbols: tuple[str, ...]) -> InstrumentSet:
    """The emulated instruments as the session would list them (ids in ``symbols`` order)."""
    if symbols == ("BTC",):
        return instruments_mod.DEFAULT
    from caerus.sim.catalogue import BY_NAME

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
