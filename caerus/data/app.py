"""`caerus data`: captured books to parquet, CSV or the terminal; real captures into a capture store.

    caerus data import STORE FILE [FILE ...] [--format F] [--as binance|hyperliquid|leader|follower]
        [--instrument NAME] [--session NAME] [--product usdm|coinm|spot] [--symbol SYM] [--clock-offset-ms MS]
        [--provenance TEXT] [--jobs N] [--json PATH]
    caerus data books|aligned|sessions SOURCE [--symbols BTC,ETH] [--start T] [--end T] [--session ID]
        [--base binance|hyperliquid] [--venue NAME ...] [-o PATH] [--format parquet|csv|table]
        [--instruments FILE] [--user NAME --password-file FILE] [--slice-rows N] [--limit N] [--no-progress]
        [--engine-parquet]

SOURCE: a session folder, a capture store or ``http://HOST:PORT`` (caerus.data.source). Rows stream to the file
slice by slice with a progress bar on stderr. ``--format`` defaults to the output file's suffix (``.parquet``,
``.csv``), else a table of the first ``--limit`` rows. Bad input: one line naming what was wrong, exit 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

    from .read import Plan

KINDS = ("books", "aligned", "sessions")
HELP = {"books": "both venues' books", "aligned": "every base-venue book with the other venue's as of that instant",
        "sessions": "what the source holds",
        "import": "real captures (hftbacktest, Binance public data, Tardis, Hyperliquid archive) into a capture store"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="kind", metavar="KIND")
    sub.required = True
    for kind in KINDS:
        _add_read_arguments(sub.add_parser(kind, help=HELP[kind], description=HELP[kind]))
    _add_import_arguments(sub.add_parser("import", help=HELP["import"], description=HELP["import"]))


def _add_import_arguments(p: argparse.ArgumentParser) -> None:
    from .imports.formats import FORMATS as IMPORT_FORMATS
    from .imports.formats import PRODUCTS
    from .imports.target import DEFAULT_SESSION, SLOTS

    p.add_argument("store", type=Path, help="capture store folder to import into (created when absent)")
    p.add_argument("files", type=Path, nargs="+", metavar="FILE", help="files to import (gz, zip, lz4 or plain)")
    p.add_argument("--format", dest="import_format", choices=tuple(IMPORT_FORMATS),
                   help="the files' format (default: detected from each file's first lines)")
    p.add_argument("--as", dest="slot", choices=tuple(SLOTS), metavar="SLOT",
                   help="venue slot for the books: binance (= leader) or hyperliquid (= follower); default: the "
                   "market's own venue. The true market is recorded in import.json and printed")
    p.add_argument("--instrument", help="instrument name to store the market as (default: one per market, e.g. "
                   "BTCUSDT, BTCUSDPERP, BTCUSDTSPOT, BTC); give both sides of a research pair the same name")
    p.add_argument("--session", default=DEFAULT_SESSION, help="session name of the rows (default: %(default)s)")
    p.add_argument("--product", choices=PRODUCTS, help="Binance product when the file cannot say it")
    p.add_argument("--symbol", help="symbol, for a CSV whose name and rows do not say it")
    p.add_argument("--clock-offset-ms", type=float, metavar="MS",
                   help="receive minus venue time to use, for a file whose clock cannot be measured (no event "
                   "times, or no receive times); overrides the measured offset")
    p.add_argument("--provenance", help="where the files come from and under what licence (recorded)")
    p.add_argument("--jobs", type=int, default=0, metavar="N", help="reader processes (default: one per CPU)")
    p.add_argument("--json", type=Path, metavar="PATH", help="also write the files' import records as JSON")


def _add_read_arguments(p: argparse.ArgumentParser) -> None:
    from .export import FORMATS
    from .read import DEFAULT_SLICE_ROWS, VENUES

    p.add_argument("source", help="session folder, capture store or ClickHouse URL (http://HOST:PORT)")
    p.add_argument("--symbols", help="comma-separated instrument names (default: all)")
    p.add_argument("--start", help="first t_recv (epoch ns or ISO 8601, naive = UTC)")
    p.add_argument("--end", help="t_recv bound, exclusive")
    p.add_argument("--session", help="one session of the store (default: every one)")
    p.add_argument("--base", choices=VENUES, default="binance", help="aligned: the venue whose books are rows")
    p.add_argument("--venue", action="append", choices=VENUES, help="books: only this venue (repeat)")
    p.add_argument("-o", "--output", type=Path, metavar="PATH", help="file to write ('-' with csv: stdout)")
    p.add_argument("--format", choices=FORMATS, help="default: from the output's suffix, else table")
    p.add_argument("--instruments", type=Path, metavar="FILE",
                   help="instruments.json naming the symbol ids (default: the session folder's)")
    p.add_argument("--user", help="ClickHouse user (with --password-file)")
    p.add_argument("--password-file", type=Path, metavar="FILE", help="ClickHouse password, first line (mode 0600)")
    p.add_argument("--slice-rows", type=int, default=DEFAULT_SLICE_ROWS, metavar="N",
                   help="rows read per query (memory bound)")
    p.add_argument("--limit", type=int, default=20, metavar="N", help="table format: rows shown")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument("--engine-parquet", action="store_true",
                   help="books to parquet from a chDB store (one session): chDB writes the file itself "
                   "(same rows; not faster on 10^7 rows here, docs/research.md)")


def _format(args: argparse.Namespace) -> str:
    if args.format:
        return str(args.format)
    if args.output is not None and args.output.suffix.lower() in (".parquet", ".csv"):
        return args.output.suffix.lower()[1:]
    if args.output is not None and str(args.output) != "-":
        raise ValueError(f"-o {args.output}: say --format parquet or csv (no .parquet/.csv suffix)")
    return "table"


def run_import(args: argparse.Namespace) -> int:
    import json

    from caerus.capture.store import StoreError

    from .imports import ImportOptions, ImportRefused, run_import

    opts = ImportOptions(session=args.session, slot=args.slot, instrument=args.instrument, fmt=args.import_format,
                         product=args.product, symbol=args.symbol, clock_offset_ms=args.clock_offset_ms,
                         provenance=args.provenance, jobs=args.jobs)
    try:
        if args.jobs < 0:
            raise ImportRefused("--jobs must be >= 0")
        outcome = run_import(args.store, args.files, opts, out=sys.stdout)
    except (ImportRefused, StoreError, OSError) as exc:
        print(f"caerus data import: {exc}", file=sys.stderr)
        return 2
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"files": outcome.entries, "errors": outcome.errors}, indent=1) + "\n")
    return 0 if outcome.ok else 2


def run(args: argparse.Namespace) -> int:
    if args.kind == "import":
        return run_import(args)
    from . import export, outfile
    from .engines import DataError
    from .read import inventory, plan_aligned, plan_books, select
    from .source import open_source

    try:
        fmt = _format(args)
        if fmt == "parquet" and (args.output is None or str(args.output) == "-"):
            raise ValueError("--format parquet needs -o FILE")
        if args.slice_rows < 1 or args.limit < 0:
            raise ValueError("--slice-rows must be >= 1 and --limit >= 0")
        show = not args.no_progress and sys.stderr.isatty()
        with open_source(args.source, args.instruments, args.user, args.password_file) as src:
            if args.kind == "sessions":
                tab = inventory(src)
                if fmt == "table":
                    export.print_table(tab, max(args.limit, tab.num_rows))
                    return 0
                plan = _whole(tab)
            else:
                sel = select(src, args.session, args.symbols, args.start, args.end,
                             args.venue if args.kind == "books" else None)
                if args.engine_parquet and fmt == "parquet" and args.kind == "books" and outfile.possible(src, sel):
                    # chDB reads, names, sorts and encodes the file itself (outfile.py)
                    args.output.parent.mkdir(parents=True, exist_ok=True)
                    n = outfile.books_parquet(src, sel, args.output, show)
                    print(f"caerus data: {n} rows -> {args.output}", file=sys.stderr)
                    return 0
                plan = (plan_books(src, sel, args.slice_rows) if args.kind == "books"
                        else plan_aligned(src, sel, args.base, args.slice_rows))
            if fmt == "table":
                head, total = export.head(plan, args.limit)
                export.print_table(head, args.limit)
                if total > args.limit:
                    print(f"(about {total} rows in all)", file=sys.stderr)
                return 0
            out = args.output
            if out is not None and str(out) != "-":
                out.parent.mkdir(parents=True, exist_ok=True)
            if fmt == "parquet":
                n = export.write_parquet(plan, out, show)
            else:
                n = export.write_csv(plan, export.stdout_binary() if out is None or str(out) == "-" else out, show)
        if out is not None and str(out) != "-":
            print(f"caerus data: {n} rows -> {out}", file=sys.stderr)
        return 0
    except (DataError, ValueError, OSError) as exc:
        print(f"caerus data: {exc}", file=sys.stderr)
        return 2


def _whole(tab: pa.Table) -> Plan:
    """A one-slice plan over a table already read (sessions' inventory)."""
    from .read import Plan, Slice

    return Plan([Slice("", None, None, tab.num_rows)], tab.schema, lambda _s: iter(tab.to_batches()))
