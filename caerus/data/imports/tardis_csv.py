"""Tardis.dev CSV exports (``*.csv.gz``): ``quotes`` / ``book_ticker`` and ``trades``, times in microseconds.

* quotes and book_ticker: ``exchange,symbol,timestamp,local_timestamp,ask_amount,ask_price,bid_price,bid_amount``:
  one top of book per row; ``timestamp`` is the venue's time and ``local_timestamp`` Tardis's receive time. An empty
  side is NULL_SIDE. Tardis writes the receive time as ``timestamp`` when the venue gave none, so a row whose two
  times are equal is taken as having no venue time (derived from the file's clock offset, as for spot bookTicker).
  There is no update id: the ordering rule is the time rule (venue time must not go backwards) and ``seq`` is the
  import's own counter, as for Hyperliquid.
* trades: ``exchange,symbol,timestamp,local_timestamp,id,side,price,amount``: counted and used for the clock, not
  stored (the capture schema has no trades table).

Exchanges: ``binance-futures`` (USD-M), ``binance-delivery`` (COIN-M), ``binance`` (spot), ``hyperliquid``; another
exchange is imported under its own name and needs ``--as`` to choose a venue slot.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from caerus.venuekit.book_rules import MALFORMED, NULL_SIDE

from . import csvcols
from .compressed import file_digest, text_chunks
from .formats import ReadOptions
from .records import MISSING, Chunk, ImportRefused, Market, SymbolIds

NAME = "tardis-csv"
QUOTES_HEADER = b"exchange,symbol,timestamp,local_timestamp,ask_amount,ask_price,bid_price,bid_amount"
TRADES_HEADER = b"exchange,symbol,timestamp,local_timestamp,id,side,price,amount"
QUOTE_COLUMNS = ("exchange", "symbol", "timestamp", "local_timestamp", "ask_amount", "ask_price", "bid_price",
                 "bid_amount")
TRADE_COLUMNS = ("exchange", "symbol", "timestamp", "local_timestamp", "id", "side", "price", "amount")
EXCHANGES = {"binance-futures": ("binance", "usdm"), "binance-delivery": ("binance", "coinm"),
             "binance": ("binance", "spot"), "hyperliquid": ("hyperliquid", "perp")}


def sniff(path: Path, head: bytes) -> bool:
    return head.startswith((QUOTES_HEADER, TRADES_HEADER))


class Reader(SymbolIds):
    def __init__(self, path: Path, options: ReadOptions) -> None:
        from .compressed import head_text

        self.path = Path(path)
        head = head_text(self.path, 4096)
        if head.startswith(QUOTES_HEADER):
            self.kind = "quotes"
        elif head.startswith(TRADES_HEADER):
            self.kind = "trades"
        else:
            raise ImportRefused(f"{path}: not a Tardis quotes/book_ticker or trades CSV (header not recognised)")
        self.rule = "time"
        self.has_receive_time = True
        self.symbols: list[str] = []
        self._index: dict[str, int] = {}
        self.exchanges: set[str] = set()
        self.digest = file_digest()

    def markets(self) -> list[Market]:
        if len(self.exchanges) > 1:
            raise ImportRefused(f"{self.path}: rows of several exchanges ({', '.join(sorted(self.exchanges))}); "
                                "import one exchange per file")
        ex = next(iter(self.exchanges), "unknown")
        venue, product = EXCHANGES.get(ex, (ex, "unknown"))
        return [Market(venue, product, s) for s in self.symbols]

    def notes(self) -> dict[str, object]:
        return {"file": self.kind, "exchanges": sorted(self.exchanges),
                "venue_time": "timestamp (rows where it equals local_timestamp: none, derived)"}

    def _sym_ids(self, symbols: np.ndarray) -> np.ndarray:
        uniq, inv = np.unique(symbols.astype(str), return_inverse=True)
        lut = np.array([self._sym(str(s)) for s in uniq], dtype=np.uint16)
        return lut[inv] if len(inv) else np.zeros(0, np.uint16)

    def chunks(self) -> Iterator[Chunk]:
        first = True
        for text in text_chunks(self.path, digest=self.digest):
            if first:
                first = False
                text, _ = csvcols.split_header(text, b"exchange,")
            yield self._quotes(text) if self.kind == "quotes" else self._trades(text)

    def _times(self, cols: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        t_ex, bad_ex = csvcols.epoch_ns(cols["timestamp"])
        t_recv, bad_rv = csvcols.epoch_ns(cols["local_timestamp"])
        return t_ex, t_recv, bad_ex | bad_rv

    def _quotes(self, text: bytes) -> Chunk:
        kinds = ("str", "str", "int", "int", "float", "float", "float", "float")
        cols, bad = csvcols.parse(text, QUOTE_COLUMNS, kinds)
        n = len(bad)
        self.exchanges.update(set(cols["exchange"].tolist()))
        t_ex, t_recv, bad_t = self._times(cols)
        bad |= bad_t
        no_venue_time = t_ex == t_recv
        t_ex = np.where(no_venue_time | bad, MISSING, t_ex)
        bp, bq, ap, aq = cols["bid_price"], cols["bid_amount"], cols["ask_price"], cols["ask_amount"]
        null_side = np.isnan(bp) | np.isnan(bq) | np.isnan(ap) | np.isnan(aq)
        pre = np.where(bad, MALFORMED, np.where(null_side, NULL_SIDE, 0)).astype(np.uint8)
        clock = (t_recv - t_ex)[(t_ex != MISSING) & ~bad]
        return Chunk(sym=self._sym_ids(cols["symbol"]), seq=np.zeros(n, np.int64), t_ex=t_ex.astype(np.int64),
                     t_recv=np.where(bad & bad_t, MISSING, t_recv).astype(np.int64), bp=bp, bq=bq, ap=ap, aq=aq,
                     pre=pre, depth=np.zeros(n, np.uint8), clock=clock.astype(np.int64),
                     counts=Counter({"read.quote": n}))

    def _trades(self, text: bytes) -> Chunk:
        kinds = ("str", "str", "int", "int", "str", "str", "float", "float")
        cols, bad = csvcols.parse(text, TRADE_COLUMNS, kinds)
        self.exchanges.update(set(cols["exchange"].tolist()))
        for s in set(cols["symbol"].tolist()):
            self._sym(str(s))
        t_ex, t_recv, bad_t = self._times(cols)
        ok = ~(bad | bad_t) & (t_ex != t_recv)
        counts: Counter[str] = Counter({"read.trade": len(bad)})
        if (bad | bad_t).any():
            counts["refused.unreadable_trade"] += int((bad | bad_t).sum())
        return Chunk.build(None, (t_recv - t_ex)[ok], counts)
