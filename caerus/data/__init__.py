"""Research data: captured books as DataFrames, from a session folder, a capture store or a ClickHouse server.

    from caerus import data
    data.sessions("sessions/S")                          # what the store holds
    data.books("sessions/S", ["BTC"], start="2026-12-02T12:00:00", end="2026-12-02T12:05:00")
    data.aligned("sessions/S", base="binance")           # every Binance book + Hyperliquid's as of that instant

One SQL text for both engines (chDB, the default; a ClickHouse server down to Debian's 18.16), the as-of
alignment computed in the engine (sql.py), results read in time slices (read.py) and shaped into named,
timestamped columns (frames.py). ``caerus data`` (app.py) writes them to parquet/CSV as they stream in
(export.py). docs/research.md, "Datasets".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from caerus.lazy import lazy_getattr

if TYPE_CHECKING:
    from .api import aligned, books, sessions
    from .engines import DataError

__all__ = ["DataError", "aligned", "books", "sessions"]
#: loaded at first use (PEP 562): ``caerus data import``'s reader processes import caerus.data.imports, and pandas
#: (through .api) would cost each new import command ~0.15-1 s of their start for nothing they use
_LAZY = {"aligned": ".api", "books": ".api", "sessions": ".api", "DataError": ".engines"}

__getattr__ = lazy_getattr(__name__, _LAZY)
