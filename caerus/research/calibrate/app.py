"""`caerus calibrate SOURCE -o market.toml`: fit the emulator's market model from captured books.

SOURCE is anything caerus.data.books reads (a session folder, a capture store, a ClickHouse URL). The books of one
symbol on both venues go through caerus.research.calibrate.fit and come out as the market TOML the emulator loads
(``venue-sim --market FILE``), its header naming the source, the range, the sample sizes and each estimate's
standard error. Bad input ends with one line naming what was wrong and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from caerus.research.calibrate.fit import CLOCKS, CalibrationError, FitSettings, calibrate
from caerus.research.calibrate.market_toml import render


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", help="captured books: session folder, capture store or ClickHouse URL (caerus.data)")
    p.add_argument("-o", "--output", type=Path, required=True, help="market TOML to write ('-' for stdout)")
    p.add_argument("--symbol", help="instrument to calibrate (needed when the source holds several)")
    p.add_argument("--session", help="captured session to read (needed when the store holds several)")
    p.add_argument("--start", help="first time to use (as caerus.data reads it: ISO 8601 or epoch ns)")
    p.add_argument("--end", help="last time to use")
    p.add_argument("--clock", choices=CLOCKS, default="t_exchange",
                   help="timestamps to estimate on: venue event time (what the emulator schedules) or receive time")
    p.add_argument("--jump-threshold-bps", type=float, metavar="BP",
                   help="smallest Binance tick move counted as a jump (default: 8 robust sd of 100 ms returns, >= 3)")
    p.add_argument("--lag-max-ms", type=float, default=2000.0, metavar="MS", help="longest lag looked for")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (standard errors)")


def run(args: argparse.Namespace) -> int:
    settings = FitSettings(symbol=args.symbol, clock=args.clock, jump_threshold_bps=args.jump_threshold_bps,
                           lag_max_ms=args.lag_max_ms, seed=args.seed)
    try:
        settings.validate()
        from caerus.data import books as read_books  # imported here: chDB costs hundreds of ms to import

        symbols = [args.symbol] if args.symbol else None
        books = read_books(args.source, symbols, args.start, args.end, session=args.session,
                           venues=["binance", "hyperliquid"])
        cal = calibrate(books, settings)
        text = render(cal, args.source, known=_model_settings())
        if str(args.output) == "-":
            sys.stdout.write(text)
        else:
            args.output.write_text(text)
    except (CalibrationError, ValueError, OSError) as exc:
        print(f"caerus calibrate: {exc}", file=sys.stderr)
        return 2
    if str(args.output) != "-":
        print(f"caerus calibrate: {cal.symbol} over {cal.minutes:.1f} min -> {args.output}", file=sys.stderr)
    return 0


def _model_settings() -> dict[str, object]:
    """The market model's settings (names -> defaults): only these are written."""
    import dataclasses

    from caerus.sim.market import MarketConfig

    return {f.name: f.default for f in dataclasses.fields(MarketConfig)}
