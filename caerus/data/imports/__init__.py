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

from .meta import describe_markets, load_meta, recv_on_venue_clock
from .records import ImportRefused
from .run import ImportOptions, Outcome, run_import

__all__ = ["ImportOptions", "ImportRefused", "Outcome", "describe_markets", "load_meta", "recv_on_venue_clock",
           "run_import"]
