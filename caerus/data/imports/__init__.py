"""``caerus data import``: real captures and public market data into a capture store, through the live feed's checks.

Formats (one reader module each, formats.py): hftbacktest's collector recordings (Binance combined streams,
Hyperliquid frames), Binance's public bookTicker/trades CSVs, Tardis quotes/book_ticker/trades CSVs, Hyperliquid's
l2Book archive. Frames are decoded with the venue decoders the feed uses and checked with its rules (checks.py), so
what the feed would refuse is refused here and counted by reason; what it would publish lands in ``caerus.books`` as
a captured store holds it, readable by ``caerus.data.books``, ``caerus calibrate`` and ``caerus backtest --store``.
Each file's clock offset, counts, market and role are recorded in ``<store>/import.json`` (target.py, clock.py);
meta.py reads it back (offset-corrected times). docs/research.md, "Bring your own data".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from caerus.lazy import lazy_getattr

from .records import ImportRefused

if TYPE_CHECKING:
    from .meta import describe_markets, load_meta, recv_on_venue_clock
    from .run import ImportOptions, Outcome, run_import

__all__ = ["ImportOptions", "ImportRefused", "Outcome", "describe_markets", "load_meta", "recv_on_venue_clock",
           "run_import"]
#: loaded at first use (PEP 562): the reader processes import worker.py, which needs neither the store side (run.py,
#: target.py: chDB, pandas) nor meta.py; importing them would lengthen every import command's start
_LAZY = {"describe_markets": ".meta", "load_meta": ".meta", "recv_on_venue_clock": ".meta", "ImportOptions": ".run",
         "Outcome": ".run", "run_import": ".run"}

__getattr__ = lazy_getattr(__name__, _LAZY)
