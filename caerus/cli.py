"""The `caerus` console script: one subcommand per fleet process, each a thin entry point.

Subcommand modules are imported lazily so that starting one process never pays for importing the others
(chDB alone costs hundreds of milliseconds). Each module exposes ``add_arguments(parser)`` and
``run(args) -> int``. Venue plugins named in ``CAERUS_VENUE_PLUGINS`` are imported first, so every subcommand
finds a venue registered outside caerus (caerus.venues.registry).
"""

from __future__ import annotations

import argparse
import importlib
import sys

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "feed": ("caerus.feed.app", "venue feed: TLS WebSocket -> validated top of book -> SWMR ring"),
    "strategy": ("caerus.strategy.app", "latency-arb strategy: two book rings -> MPSC order ring"),
    "execution": ("caerus.execution.app", "execution engine: order ring -> risk -> send_msg transport"),
    "capture": ("caerus.capture.app", "off-path capture: rings -> chDB (default) or Kafka"),
    "sink": ("caerus.capture.sink_app", "Kafka topic -> ClickHouse server over HTTP"),
    "replay": ("caerus.capture.replay_app", "captured session -> frames file for the venue emulator"),
    "data": ("caerus.data.app", "captured books -> parquet/CSV/table: books, as-of aligned venues, sessions"),
    "venue-sim": ("caerus.sim.app", "venue emulator: Binance + Hyperliquid TLS WebSocket servers on loopback"),
    "session": ("caerus.session.app", "run a local session: emulator + whole fleet, then report"),
    "record": ("caerus.session.record_app", "record the venues for hours: the feeds + capture into chDB, no orders"),
    "instruments": ("caerus.session.instruments_app", "resolve --symbols against both venues' listings -> "
                                                      "instruments.json"),
    "report": ("caerus.report.app", "render reports for session folders"),
    "calibrate": ("caerus.research.calibrate.app", "fit the emulator's market model from captured books -> TOML"),
    "backtest": ("caerus.research.backtest.app", "replay captured or modelled books through the decision code"),
    "train": ("caerus.research.models.app", "walk-forward training of the lead-lag model -> model file (JSON)"),
    "verdict": ("caerus.research.verdict.app", "does the model make money net of costs, out of sample, with placebo "
                                               "markets that must say NO"),
    "exporter": ("caerus.monitoring.app", "serve a session's counters and latencies to Prometheus on loopback"),
}
# Modules that come with an optional extra rather than the fleet's runtime (a host has the runtime only).
EXTRA_OF_MODULE = {"matplotlib": "report", "polars": "research", "sklearn": "research", "lightgbm": "research"}


class MissingExtra(ImportError):
    """A subcommand needs a package of an extra that is not installed."""


def missing_extra_message(exc: ModuleNotFoundError, what: str) -> str | None:
    top = (exc.name or "").split(".")[0]
    extra = EXTRA_OF_MODULE.get(top)
    if extra is None:
        return None
    return f"{what} needs {top}, from the [{extra}] extra: pip install 'caerus[{extra}]'"


def build_parser(argv: list[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="caerus", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    chosen = next((a for a in argv if not a.startswith("-")), None)
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == chosen:
            try:
                mod = importlib.import_module(module)
            except ModuleNotFoundError as exc:
                message = missing_extra_message(exc, f"caerus {name}")
                if message is None:
                    raise
                raise MissingExtra(message) from exc
            mod.add_arguments(p)
            p.set_defaults(_run=mod.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    from caerus.venues import registry

    try:
        registry.load_plugins()
    except (ImportError, ValueError) as exc:
        print(f"caerus: bad config: {exc}", file=sys.stderr)
        return 2
    try:
        parser = build_parser(argv)
    except MissingExtra as exc:
        print(exc, file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    return int(args._run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
