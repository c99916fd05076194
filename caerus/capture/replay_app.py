"""`caerus replay`: write a captured session's books as the emulator's frames file (optionally run it).

    caerus replay --store DIR --out FRAMES.jsonl [--venue NAME ...] [--symbol VENUE=SYMBOL ...] [--pace exchange|recv]
                  [--session ID] [--run -- VENUE-SIM ARGS...]

``--run`` then starts ``caerus venue-sim --replay FRAMES.jsonl`` with the arguments after ``--`` (e.g.
``--cert-dir DIR --ready-file PATH``) in place of this process.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from caerus.instruments import FILE_NAME, InstrumentError
from caerus.instruments import load as load_instruments
from caerus.recording import write_frames
from caerus.venues import registry

from .replay import PACINGS, ReplayOptions, frames, load_books

log = logging.getLogger("caerus.replay")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", type=Path, required=True, metavar="DIR", help="session folder with the chDB store")
    p.add_argument("--out", type=Path, required=True, metavar="FRAMES.jsonl")
    p.add_argument("--venue", action="append", choices=registry.names(),
                   help="replay only this venue (repeat; default all)")
    p.add_argument("--pace", choices=PACINGS, default="exchange",
                   help="space frames by venue event time (default) or by our receive time")
    p.add_argument("--session", help="only rows of this session id (a store normally holds one)")
    p.add_argument("--symbol", action="append", default=[], metavar="VENUE=SYMBOL",
                   help="symbol written into that venue's frames (repeat; default: the venue's default symbol)")
    p.add_argument("--instruments", type=Path, metavar="FILE",
                   help="the session's instruments.json, mapping captured instrument ids to each venue's symbol "
                        "(default: the one beside --store, when there is one)")
    p.add_argument("--run", action="store_true", help="then exec `caerus venue-sim --replay OUT ARGS...`")
    p.add_argument("sim_args", nargs=argparse.REMAINDER, help="after --: arguments for venue-sim (with --run)")


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s replay %(levelname)s %(message)s")
    db = args.store / "chdb"
    if not db.is_dir():
        print(f"caerus replay: no chDB store at {db} (was the session captured with --store {args.store}?)",
              file=sys.stderr)
        return 2
    sim_args = [a for a in args.sim_args if a != "--"] if args.sim_args else []
    if sim_args and not args.run:
        print(f"caerus replay: extra arguments {sim_args} are only for --run", file=sys.stderr)
        return 2
    symbols = dict(s.partition("=")[::2] for s in args.symbol)
    if any(not v or not sym for v, sym in symbols.items()):
        print(f"caerus replay: --symbol takes VENUE=SYMBOL, got {args.symbol}", file=sys.stderr)
        return 2
    from .store import ChdbStore, StoreError

    inst_file = args.instruments or next((p for p in (args.store.parent / FILE_NAME, args.store / FILE_NAME)
                                          if p.is_file()), None)
    try:
        insts = load_instruments(inst_file) if inst_file is not None else None
    except InstrumentError as exc:
        print(f"caerus replay: {exc}", file=sys.stderr)
        return 2
    # this entry point alone looks the venues up (--venue's choices are the registry's names) and hands them down
    venues = tuple(registry.get(v) for v in args.venue or registry.names())
    opts = ReplayOptions(venues=venues, pace=args.pace, session=args.session,
                         symbols=symbols, instruments=insts)
    try:
        store = ChdbStore(args.store)
    except StoreError as e:
        print(f"caerus replay: {e}", file=sys.stderr)
        return 2
    try:
        books = load_books(store, opts)
    finally:
        store.close()
    if books.empty:
        print(f"caerus replay: the store at {db} holds no valid books for {', '.join(v.name for v in venues)}",
              file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    try:
        n = write_frames(args.out, frames(books, opts))
    except ValueError as exc:
        print(f"caerus replay: {exc}", file=sys.stderr)
        return 2
    span_s = 0.0 if n < 2 else (books["t_exchange" if opts.pace == "exchange" else "t_recv"].iloc[-1]
                                - books["t_exchange" if opts.pace == "exchange" else "t_recv"].iloc[0]) / 1e9
    log.info("replay: wrote %d frames (%s) spanning %.3f s to %s", n,
             ", ".join(f"{v.name} {int((books['venue'] == v.name).sum())}" for v in venues), span_s, args.out)
    if args.run:
        argv = [sys.executable, "-m", "caerus", "venue-sim", "--replay", str(args.out), *sim_args]
        sys.stdout.flush()
        os.execv(sys.executable, argv)
    return 0
