"""The format registry: a format name -> the module that reads it, and detection from a file's first bytes.

One module per format (cryptofeed's one-module-per-exchange layout), each exposing ``NAME``, ``sniff(path, head)``
(does this text look like mine?) and ``Reader(path, options)``. Adding a format is one module and one line in
:data:`FORMATS`. Detection asks every module in order and takes the one that claims the file; none or several is an
error naming the file and asking for ``--format``.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from .compressed import head_text
from .records import Chunk, ImportRefused, Market

#: format name -> module (in detection order)
FORMATS: dict[str, str] = {
    "hftbacktest": "caerus.data.imports.hftbacktest",
    "binance-csv": "caerus.data.imports.binance_csv",
    "tardis-csv": "caerus.data.imports.tardis_csv",
    "hyperliquid-archive": "caerus.data.imports.hl_archive",
}
PRODUCTS = ("usdm", "coinm", "spot")


@dataclass(frozen=True)
class ReadOptions:
    """What the user said about a file that the file itself may not (product, symbol)."""

    product: str | None = None  # Binance: usdm | coinm | spot
    symbol: str | None = None  # a CSV without a symbol column (Binance public data) names it in its file name


class Reader(Protocol):
    rule: str  # the ordering rule of its books (checks.RULES)
    has_receive_time: bool  # False: a source of venue times only (Binance public data)
    symbols: list[str]  # the venue symbols met so far, by the index the chunks use
    digest: Any  # hashlib object fed the file's stored bytes while the chunks are read

    def chunks(self) -> Iterator[Chunk]: ...
    def markets(self) -> list[Market]: ...  # by symbol index of the chunks
    def notes(self) -> dict[str, object]: ...  # what import.json records about how the file was read


def module(name: str) -> ModuleType:
    try:
        return importlib.import_module(FORMATS[name])
    except KeyError:
        raise ImportRefused(f"unknown format {name!r}; known: {', '.join(FORMATS)}") from None


def detect(path: Path) -> str:
    """The format of ``path`` from its first 64 KiB of text; ImportRefused when no format or several claim it."""
    path = Path(path)
    head = head_text(path)
    if not head:
        raise ImportRefused(f"{path}: empty file")
    claims = [name for name in FORMATS if module(name).sniff(path, head)]
    if len(claims) != 1:
        what = "no known format" if not claims else f"several formats ({', '.join(claims)})"
        raise ImportRefused(f"{path}: {what} recognised from its first lines; give --format "
                            f"({', '.join(FORMATS)})")
    return claims[0]


def open_reader(fmt: str, path: Path, options: ReadOptions) -> Reader:
    reader: Reader = module(fmt).Reader(path, options)
    return reader
