"""`caerus calibrate SOURCE -o market.toml`: fit the emulator's market model from captured books.

SOURCE is anything caerus.data.books reads (a session folder, a capture store, a ClickHouse URL). The books of one
symbol on both venues go through caerus.research.calibrate.fit and come out as the market TOML the emulator loads
(``venue-sim --market FILE``), its header naming the source, the range, the sample sizes and each estimate's
standard error. Bad input ends with one line naming what was wrong and exit status 2. Books that do not identify
the lag law (too few answered moves, no response peak, a median at a boundary of the searched range: lag_law) end
with one line naming the setting and why, exit status 3 and nothing written, unless ``--lag-from-preset`` asks for
the default preset's lag to be written instead (the header and a line on stderr saying so).

``--binance-only`` fits Binance's settings alone from a capture without a co-recorded Hyperliquid (fit.calibrate_leader:
the price's settings, and the quote arrivals on the receive stamps); every Hyperliquid setting is the preset's, the
header saying so.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from caerus.research.calibrate.fit import CLOCKS, CalibrationError, FitSettings, calibrate, calibrate_leader
from caerus.research.calibrate.market_toml import NotIdentified, refusal, render, unidentified

#: exit status when the books do not identify a setting the market needs (2: bad input)
NOT_IDENTIFIED = 3


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
    p.add_argument("--lag-from-preset", action="store_true",
                   help="when the books do not identify the lag law, write the default preset's hl_lag_ms and "
                        "hl_lag_sd_ms (the header saying why) instead of refusing with exit status 3")
    p.add_argument("--binance-only", action="store_true",
                   help="fit Binance's settings alone (price, jumps, flickers, regimes, quote arrivals on receive "
                        "times) from Binance books without a Hyperliquid capture; Hyperliquid's from the preset")


def run(args: argparse.Namespace) -> int:
    settings = FitSettings(symbol=args.symbol, clock=args.clock, jump_threshold_bps=args.jump_threshold_bps,
                           lag_max_ms=args.lag_max_ms, seed=args.seed)
    try:
        settings.validate()
        from caerus.data import books as read_books  # imported here: chDB costs hundreds of ms to import

        symbols = [args.symbol] if args.symbol else None
        books = read_books(args.source, symbols, args.start, args.end, session=args.session,
                           venues=["binance"] if args.binance_only else ["binance", "hyperliquid"])
        cal = calibrate_leader(books, settings) if args.binance_only else calibrate(books, settings)
        known = _model_settings()
        missing = unidentified(cal, known)
        text = render(cal, args.source, known=known, carry_unidentified=args.lag_from_preset)
        if str(args.output) == "-":
            sys.stdout.write(text)
        else:
            args.output.write_text(text)
    except NotIdentified as exc:
        print(f"caerus calibrate: {exc}; capture more data, or pass --lag-from-preset to write the default "
              "preset's value", file=sys.stderr)
        return NOT_IDENTIFIED
    except (CalibrationError, ValueError, OSError) as exc:
        print(f"caerus calibrate: {exc}", file=sys.stderr)
        return 2
    if missing:
        print(f"caerus calibrate: {refusal(missing)}; the default preset's value written (--lag-from-preset)",
              file=sys.stderr)
    if str(args.output) != "-":
        print(f"caerus calibrate: {cal.symbol} over {cal.minutes:.1f} min -> {args.output}", file=sys.stderr)
    return 0


def _model_settings() -> dict[str, object]:
    """The market model's settings (names -> defaults): only these are written."""
    import dataclasses

    from caerus.sim.core.market import MarketConfig

    return {f.name: f.default for f in dataclasses.fields(MarketConfig)}
