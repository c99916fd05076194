"""Binance's public data (data.binance.vision): bookTicker and trades CSV files, as shipped (zip) or unpacked.

* ``<SYMBOL>-bookTicker-<DATE>.csv`` (futures/um and futures/cm):
  ``update_id,best_bid_price,best_bid_qty,best_ask_price,best_ask_qty,transaction_time,event_time``: the bookTicker
  stream's fields (``u``, ``b``, ``B``, ``a``, ``A``, ``T``, ``E``), checked with the feed's rules (``u`` ordering,
  ``E`` as the venue time, the level checks). The file has no symbol column: the symbol comes from the file name
  (or ``--symbol``).
* ``<SYMBOL>-trades-<DATE>.csv``: ``id,price,qty,quote_qty|base_qty,time,is_buyer_maker`` (futures, with a header in
  recent files) or spot's ``id,price,qty,quoteQty,time,isBuyerMaker,isBestMatch`` (no header; times in us since
  2025): counted, not stored (the capture schema has no trades table).

The files hold venue times only, no receive times: t_recv cannot be measured, so the import needs
``--clock-offset-ms`` (t_recv = E + offset; 0 takes the venue time as the receive time) and marks every row's t_recv
derived. The product comes from ``--product``, else the path (``futures/um``, ``futures/cm``, ``spot``), else the
symbol (``_`` is COIN-M, otherwise USD-M: bookTicker files exist for futures only).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from caerus.venuekit.book_rules import MALFORMED
from caerus.venuekit.frames import _INT64_MAX

from . import csvcols
from .compressed import file_digest, text_chunks
from .formats import PRODUCTS, ReadOptions
from .records import MISSING, Chunk, ImportRefused, Market

NAME = "binance-csv"
BOOK_TICKER_HEADER = b"update_id,best_bid_price,best_bid_qty,best_ask_price,best_ask_qty,transaction_time,event_time"
BOOK_TICKER_COLUMNS = ("update_id", "best_bid_price", "best_bid_qty", "best_ask_price", "best_ask_qty",
                       "transaction_time", "event_time")
_FILE = re.compile(r"^(?P<symbol>[A-Z0-9_]+)-(?P<kind>bookTicker|trades)-\d{4}-\d{2}(-\d{2})?(\.csv)?(\.zip)?$")


def _kind(path: Path, head: bytes) -> str | None:
    if head.startswith(BOOK_TICKER_HEADER):
        return "bookTicker"
    m = _FILE.match(path.name)
    if m and m.group("kind") == "trades" and re.match(rb"^(id,|\d+,)", head):
        return "trades"
    if m and m.group("kind") == "bookTicker" and re.match(rb"^\d+,", head):
        return "bookTicker"  # a header-less bookTicker file (older files)
    return None


def sniff(path: Path, head: bytes) -> bool:
    return _kind(path, head) is not None


class Reader:
    def __init__(self, path: Path, options: ReadOptions) -> None:
        from .compressed import head_text

        self.path = Path(path)
        self.kind = _kind(self.path, head_text(self.path, 4096))
        if self.kind is None:
            raise ImportRefused(f"{path}: not a Binance public-data bookTicker or trades CSV")
        m = _FILE.match(self.path.name)
        symbol = options.symbol or (m.group("symbol") if m else None)
        if not symbol:
            raise ImportRefused(f"{path}: the file name does not say the symbol (SYMBOL-bookTicker-DATE.csv); "
                                "give --symbol")
        self.symbols = [symbol.upper()]
        self._index = {self.symbols[0]: 0}
        self.product, self.product_from = self._product(options, symbol)
        self.rule = "update_id"
        self.has_receive_time = False
        self.digest = file_digest()

    def _product(self, options: ReadOptions, symbol: str) -> tuple[str, str]:
        if options.product:
            if options.product not in PRODUCTS:
                raise ImportRefused(f"--product {options.product!r}: one of {', '.join(PRODUCTS)}")
            return options.product, "--product"
        parts = [p.lower() for p in self.path.parts]
        if "um" in parts:
            return "usdm", "path"
        if "cm" in parts:
            return "coinm", "path"
        if "spot" in parts:
            return "spot", "path"
        return ("coinm" if "_" in symbol else "usdm"), "symbol"

    def markets(self) -> list[Market]:
        return [Market("binance", self.product, self.symbols[0])]

    def notes(self) -> dict[str, object]:
        return {"file": self.kind, "product_from": self.product_from, "symbol_from": "file name or --symbol"}

    def chunks(self) -> Iterator[Chunk]:
        first = True
        for text in text_chunks(self.path, digest=self.digest):
            if first:
                first = False
                if self.kind == "bookTicker":
                    text, _ = csvcols.split_header(text, b"update_id,")
                else:
                    text, _ = csvcols.split_header(text, b"id,")
            yield self._book_ticker(text) if self.kind == "bookTicker" else self._trades(text)

    def _book_ticker(self, text: bytes) -> Chunk:
        kinds = ("int", "float", "float", "float", "float", "int", "int")
        cols, bad = csvcols.parse(text, BOOK_TICKER_COLUMNS, kinds)
        n = len(bad)
        t_ex, bad_t = csvcols.epoch_ns(cols["event_time"])
        u = cols["update_id"]
        bad = bad | bad_t | (u < 0) | (u > _INT64_MAX)
        counts: Counter[str] = Counter({"read.bookTicker": n})
        pre = np.where(bad, MALFORMED, 0).astype(np.uint8)
        nan = np.full(n, np.nan)

        def px(name: str) -> np.ndarray:
            return np.where(bad, nan, cols[name])

        return Chunk(sym=np.zeros(n, np.uint16), seq=np.where(bad, 0, u).astype(np.int64),
                     t_ex=np.where(bad, MISSING, t_ex).astype(np.int64), t_recv=np.full(n, MISSING, np.int64),
                     bp=px("best_bid_price"), bq=px("best_bid_qty"), ap=px("best_ask_price"),
                     aq=px("best_ask_qty"), pre=pre, depth=np.zeros(n, np.uint8), clock=np.zeros(0, np.int64),
                     counts=counts)

    def _trades(self, text: bytes) -> Chunk:
        lines = text.count(b"\n") + (0 if text.endswith(b"\n") or not text else 1)
        return Chunk.build(None, [], Counter({"read.trade": lines}))
