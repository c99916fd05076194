"""`caerus instruments`: resolve a ``--symbols`` list against both venues' listings and write instruments.json.

What a local session does before its fleet starts (caerus.session.instruments), as a command of its own for a
host whose fleet runs as systemd units: the ``caerus-instruments`` oneshot unit runs it at every fleet start, so
the units' processes read the venues' rules of that day from ``--out-dir``/instruments.json. A symbol either
venue does not list, or a listing that cannot be read, exits 1 with one line naming it; bad input exits 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from caerus.instruments import InstrumentError, parse_symbols
from caerus.session.instruments import resolve_into
from caerus.venues.binance import data as binance_data
from caerus.venues.hyperliquid import data as hl_data


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--symbols", required=True, help="instruments, comma-separated (BTC,ETH,SOL; "
                                                          "NAME=BINANCESYMBOL/HLCOIN where the venues differ)")
    parser.add_argument("--out-dir", required=True, type=Path, metavar="DIR",
                        help="where instruments.json (and the listings it came from) is written")
    parser.add_argument("--binance-url", default=binance_data.DEFAULT_BASE_URL,
                        help="Binance stream base URL (its REST host serves exchangeInfo)")
    parser.add_argument("--hyperliquid-url", default=hl_data.DEFAULT_BASE_URL,
                        help="Hyperliquid base URL (its REST host serves meta)")
    parser.add_argument("--ca-file", help="CA bundle for those hosts (default: the system's)")


def run(args: argparse.Namespace) -> int:
    try:
        requests = parse_symbols(args.symbols)
    except InstrumentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        path = resolve_into(args.out_dir, requests, args.binance_url, args.hyperliquid_url, ca_file=args.ca_file)
    except InstrumentError as exc:
        print(f"error: instruments: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"error: instruments: --out-dir {args.out_dir}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(f"instruments: {', '.join(r.name for r in requests)} -> {path}")
    return 0
