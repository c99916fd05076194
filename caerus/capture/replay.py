"""Captured books -> the venue emulator's frames file, so a session can be re-run on identical input.

Reads ``caerus.books`` from a session's chDB store (FINAL: each captured book once) and rebuilds, per row, the
venue message that produced it with the venue's own encoder (``book_frame`` in its spec; e.g. a Binance
``bookTicker`` with ``u`` = seq and ``E`` = t_exchange in ms, or a Hyperliquid ``bbo``). Frames are written in the
recorded-frames format (caerus.recording, which the emulator plays): ``{"venue", "t_ns", "frame"}`` per line,
``t_ns`` the offset from the first frame, non-decreasing.

Pacing: ``exchange`` (default) orders and spaces frames by venue event time, ``recv`` by our receive time (what
the fleet actually experienced, including network jitter). Only tradeable books (VALID and not STALE,
caerus.wire.TRADEABLE) are replayed: a STALE record is the feed's own note that a connection dropped, not a venue
message. What the store does not keep is filled in by each venue's encoder, which documents it.

Many instruments: each row's instrument id (``symbol``) becomes the venue's name for it from the session's
instrument list (``ReplayOptions.instruments``, the session folder's instruments.json); a row whose id the list
does not hold is refused, naming the id.

The venues come as their specs in :class:`ReplayOptions` (the replay app looks them up in the venue registry;
nothing here looks a venue up).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd

from caerus.instruments import InstrumentSet
from caerus.venuekit.spec import VenueSpec
from caerus.wire import TRADEABLE, TRADEABLE_MASK

from .store import ChdbStore

PACINGS = ("exchange", "recv")


@dataclass(frozen=True)
class ReplayOptions:
    venues: Sequence[VenueSpec]  # the venues to replay, handed down by the app
    pace: str = "exchange"
    session: str | None = None
    symbols: Mapping[str, str] = field(default_factory=dict)  # venue -> symbol written into frames (default: the
    # venue's default symbol); single-instrument stores only
    instruments: InstrumentSet | None = None  # the session's list: instrument id -> each venue's symbol


def _replayable(spec: VenueSpec) -> VenueSpec:
    if spec.feed.book_frame is None:
        raise ValueError(f"venue {spec.name!r} cannot rebuild its messages from captured books (no book_frame)")
    return spec


def load_books(store: ChdbStore, opts: ReplayOptions) -> pd.DataFrame:
    if opts.pace not in PACINGS:
        raise ValueError(f"pace {opts.pace!r} is not one of {', '.join(PACINGS)}")
    for v in opts.venues:
        _replayable(v)
    venues = ", ".join(f"'{v.name}'" for v in opts.venues)
    where = [f"venue IN ({venues})", f"bitAnd(flags, {TRADEABLE_MASK}) = {TRADEABLE}"]
    if opts.session is not None:
        where.append("session = '" + opts.session.replace("\\", "\\\\").replace("'", "\\'") + "'")
    order = "t_exchange, t_recv" if opts.pace == "exchange" else "t_recv, t_exchange"
    sql = (f"SELECT toString(venue) AS venue, symbol, seq, t_exchange, t_recv, bid_px, bid_qty, ask_px, ask_qty "
           f"FROM caerus.books FINAL WHERE {' AND '.join(where)} ORDER BY {order}, venue, seq")
    return store.query_df(sql)


def frames(books: pd.DataFrame, opts: ReplayOptions) -> Iterator[tuple[str, int, str]]:
    """(venue, t_ns, frame) per book row, in the order given."""
    if books.empty:
        return
    clock = books["t_exchange" if opts.pace == "exchange" else "t_recv"].to_numpy()
    t0 = int(clock[0])
    names = ("venue", "symbol", "seq", "t_exchange", "bid_px", "bid_qty", "ask_px", "ask_qty")
    cols = [books[c].to_numpy() if c in books else [0] * len(books) for c in names]
    encoders: dict[str, tuple[Callable[[int, int, str, float, float, float, float], str], dict[int, str]]] = {}
    for spec in map(_replayable, opts.venues):
        assert spec.feed.book_frame is not None  # _replayable refuses a venue without one
        encoders[spec.name] = (spec.feed.book_frame, _venue_symbols(spec, opts))
    for i, (venue, sym, seq, t_ex, bid, bq, ask, aq) in enumerate(zip(*cols, strict=True)):
        encode, by_id = encoders[venue]
        symbol = by_id.get(int(sym))
        if symbol is None:
            raise ValueError(f"captured {venue} book for instrument id {int(sym)}, which the instrument list "
                             f"({len(by_id)} instruments) does not hold: give the session's instruments.json")
        yield venue, int(clock[i]) - t0, encode(int(seq), int(t_ex) // 1_000_000, symbol, bid, bq, ask, aq)


def _venue_symbols(spec: VenueSpec, opts: ReplayOptions) -> dict[int, str]:
    """Instrument id -> the symbol this venue's frames carry."""
    name_of = spec.feed.instrument_symbol
    if opts.instruments is not None and name_of is not None:
        return {i.id: name_of(i) for i in opts.instruments}
    return {0: opts.symbols.get(spec.name) or spec.feed.default_symbol}
