"""`caerus backtest`: replay a session, a chDB store, a ClickHouse range or the offline market model through the
fleet's decision code; write result.json (+ latency_sweep.json) and report.html.

Defaults are the fleet's execution: latency from the fleet's profile (caerus.research.backtest.latency), fills on
Hyperliquid's block clock with depletion (caerus.research.backtest.fills). ``--zero-latency`` (or ``--latency 0``)
is the optimistic model, named ``ZERO (optimistic; not the fleet's)`` in the output. Every run also prices the
same data at the latency points (order path 0, p50, p99, 2x): PnL against latency, in result.json
(``latency_points``) and on stdout.

Outputs go to ``--out`` (default: ``<session>/backtest`` for a session, so the session's report finds the latency
sweep there; ``backtests/<source>`` otherwise). Exit 2 with one line on bad input (missing session or store,
empty time range, bad latency or parameter).
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import msgspec

from caerus.config import ConfigError, load_config
from caerus.metrics import hdr
from caerus.research.backtest import report, runner, sources
from caerus.research.backtest.fills import CLOCKS, FillError, FillRules
from caerus.research.backtest.latency import LatencyError, LatencyModel
from caerus.sim.core.market_config import DEFAULT_MARKET
from caerus.strategy.config import StrategyConfig

_UNITS_NS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_LAT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ns|us|ms|s)?\s*$")


def parse_latency(text: str) -> int:
    """'0', '10us', '1ms', '2.5ms', '100ns' -> ns (a bare number is ns)."""
    m = _LAT.match(str(text))
    if not m:
        raise ValueError(f"latency {text!r} is not like 0, 100ns, 10us, 1ms or 1s")
    return round(float(m.group(1)) * _UNITS_NS[m.group(2) or "ns"])


def parse_time(text: str) -> int:
    """A time as ns since the epoch, or ISO 8601 (UTC when no zone)."""
    if re.fullmatch(r"\d{15,}", text.strip()):
        return int(text)
    try:
        dt = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"time {text!r} is neither ns since the epoch nor ISO 8601") from None
    if dt.tzinfo is None:
        from datetime import UTC
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1e9)


def parse_params(pairs: list[str], base: StrategyConfig) -> StrategyConfig:
    """``name=value`` strategy overrides, validated like a config file."""
    raw = msgspec.to_builtins(base)
    for p in pairs:
        name, sep, value = p.partition("=")
        if not sep or name not in raw:
            raise ValueError(f"--param {p!r}: expected NAME=VALUE with NAME a strategy setting")
        raw[name] = msgspec.json.decode(value) if re.fullmatch(r"[-\d.eE+]+|true|false", value) else value
    try:
        cfg = msgspec.convert(raw, StrategyConfig)
        cfg.check()
    except (msgspec.ValidationError, ConfigError) as exc:
        raise ValueError(f"--param: {exc}") from None
    return cfg


def add_arguments(parser: argparse.ArgumentParser) -> None:
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--session", type=Path, metavar="DIR", help="a session folder (its capture store)")
    src.add_argument("--store", type=Path, metavar="DIR", help="a chDB capture store folder")
    src.add_argument("--clickhouse", metavar="URL", help="a ClickHouse server's HTTP URL (needs --start/--end)")
    src.add_argument("--offline", type=float, metavar="SECONDS",
                     help="the emulator's market model generated offline for this many seconds")
    parser.add_argument("--clickhouse-user", metavar="NAME", help="with --clickhouse: the user (HTTP basic auth)")
    parser.add_argument("--clickhouse-password-file", type=Path, metavar="FILE",
                        help="with --clickhouse-user: a file (mode 0600) whose first line is the password")
    parser.add_argument("--start", help="first t_recv (ns since the epoch or ISO 8601); 'strategy' (a session): "
                                        "where the session's strategy started reading")
    parser.add_argument("--end", help="t_recv bound, exclusive (ns or ISO 8601)")
    parser.add_argument("--symbols", default="BTC", help="offline market: instruments (comma separated)")
    parser.add_argument("--market", default=DEFAULT_MARKET, help="offline market: a preset (default, fixed-lag) or a "
                        "market TOML, as venue-sim --market takes (default: default)")
    parser.add_argument("--market-seed", type=int, default=1, help="offline market: model seed")
    parser.add_argument("--strategy-config", type=Path, metavar="FILE", help="strategy TOML (default: defaults)")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="override one strategy setting (repeatable)")
    lat = parser.add_mutually_exclusive_group()
    lat.add_argument("--latency-from", type=Path, metavar="SESSION",
                     help="draw every order's path from this session's measured histograms (venue segments it "
                          "cannot measure: the default profile's)")
    lat.add_argument("--latency-profile", type=Path, metavar="FILE",
                     help="a latency profile file (default: the fleet's, "
                          "caerus/research/backtest/profiles/fleet-2vcpu.json)")
    lat.add_argument("--latency", default=None, metavar="CONST",
                     help="constant order latency (e.g. 1ms; 0 with no --feed-latency: ZERO)")
    lat.add_argument("--zero-latency", action="store_true",
                     help="no latency anywhere: optimistic, not the fleet's (named ZERO in the output)")
    parser.add_argument("--latency-add", default="0", metavar="D", help="added to every order's wire time")
    parser.add_argument("--feed-latency", default="0", metavar="D", help="with --latency: constant book hop")
    parser.add_argument("--wire", default=None, metavar="D",
                        help="one-way wire time to the venue instead of the profile's (default: the profile's; "
                             "0 with --paper)")
    parser.add_argument("--latency-sweep", metavar="LIST", help="added latencies, e.g. 0,10us,100us,1ms,10ms,100ms")
    parser.add_argument("--paper", action="store_true",
                        help="the paper transport's rules (latency_ms 0): the book the engine had read at pickup, "
                             "no block clock, no depletion, no wire")
    parser.add_argument("--no-blocks", action="store_true",
                        help="Hyperliquid matches continuously at arrival (not the venue's block clock)")
    parser.add_argument("--block-ms", type=float, default=None,
                        help="Hyperliquid's block interval (default: the offline market's, else estimated from the "
                             "data)")
    parser.add_argument("--no-deplete", action="store_true",
                        help="our own fills do not take the top size they consume")
    parser.add_argument("--fill-clock", choices=CLOCKS, default=None, help="book clock the fill model uses")
    parser.add_argument("--fee-tier", type=int, default=0, help="venue fee tier (Hyperliquid 0-6, Binance VIP)")
    parser.add_argument("--fee-bps", type=float, default=None, help="one fixed taker fee for every venue")
    parser.add_argument("--top-fraction", type=float, default=1.0, help="share of the top size available to us")
    parser.add_argument("--impact-bps", type=float, default=0.0, help="linear impact per whole top size taken")
    parser.add_argument("--seed", type=int, default=1, help="latency draws seed")
    parser.add_argument("--out", type=Path, default=None, help="output folder")
    parser.add_argument("--no-html", action="store_true", help="JSON only")


def load_source(args: argparse.Namespace) -> sources.Loaded:
    start = None if args.start in (None, "strategy") else parse_time(args.start)
    end = None if args.end is None else parse_time(args.end)
    if args.session is not None:
        return sources.from_session(args.session, start, end)
    if args.store is not None:
        return sources.from_store(args.store, start, end)
    if args.clickhouse is not None:
        return sources.from_clickhouse(args.clickhouse, start, end, user=args.clickhouse_user,
                                       password_file=args.clickhouse_password_file)
    if args.clickhouse_user is not None or args.clickhouse_password_file is not None:
        raise ValueError("--clickhouse-user and --clickhouse-password-file go with --clickhouse")
    return sources.offline_market(args.offline, args.market_seed, tuple(args.symbols.split(",")), args.market)


def build_options(args: argparse.Namespace, loaded: sources.Loaded) -> runner.BacktestOptions:
    base = load_config(StrategyConfig, args.strategy_config, "strategy")
    cfg = parse_params(args.param, base)
    add = parse_latency(args.latency_add)
    wire = parse_latency(args.wire) if args.wire is not None else (0 if args.paper else None)
    if args.latency_from is not None:
        lat = LatencyModel.from_session(args.latency_from, add, wire)
    elif args.latency is not None:
        lat = LatencyModel.constant(parse_latency(args.latency), parse_latency(args.feed_latency), add)
    elif args.zero_latency:
        if add:
            raise ValueError("--zero-latency takes no --latency-add (use --latency D)")
        lat = LatencyModel.zero()
    elif args.latency_profile is not None:
        lat = LatencyModel.from_profile(args.latency_profile, add, wire)
    else:
        lat = LatencyModel.default(add, wire)
    if args.block_ms is not None and not args.block_ms > 0:
        raise ValueError(f"--block-ms must be > 0, got {args.block_ms}")
    rule0 = FillRules.paper() if args.paper else FillRules()
    rules = replace(rule0, clock=args.fill_clock or rule0.clock, fee_tier=args.fee_tier, fee_bps=args.fee_bps,
                    top_fraction=args.top_fraction, impact_bps=args.impact_bps,
                    blocks=rule0.blocks and not args.no_blocks, deplete=rule0.deplete and not args.no_deplete,
                    block_ns=None if args.block_ms is None else round(args.block_ms * 1e6))
    rules.check()
    start_ns = None
    if args.start == "strategy":
        if loaded.session_dir is None or not (loaded.session_dir / "strategy.hlog").is_file():
            raise ValueError("--start strategy needs a --session whose folder has strategy.hlog")
        start_ns = int(hdr.read_hlog(loaded.session_dir / "strategy.hlog").start_time_s * 1e9)
    return runner.BacktestOptions(cfg, lat, rules, args.seed, start_ns)


def default_out(args: argparse.Namespace) -> Path:
    if args.out is not None:
        return Path(args.out)
    if args.session is not None:
        return Path(args.session) / "backtest"
    if args.offline is not None:
        return Path("backtests") / f"offline-{Path(str(args.market)).stem}-{args.market_seed}-{args.offline:g}s"
    return Path("backtests") / "latest"


def run(args: argparse.Namespace) -> int:
    try:
        sweep_adds = [parse_latency(x) for x in args.latency_sweep.split(",")] if args.latency_sweep else None
        loaded = load_source(args)
        opts = build_options(args, loaded)
    except (sources.SourceError, LatencyError, FillError, ConfigError, ValueError) as exc:
        print(f"caerus backtest: {exc}", file=sys.stderr)
        return 2
    out = default_out(args)
    doc, timing = runner.run_backtest(loaded, opts)
    points = runner.price_latency(loaded, opts)
    doc["latency_points"] = points
    runner.write_json(doc, out / "result.json")
    sweep = None
    if sweep_adds is not None:
        sweep = runner.latency_sweep(loaded, opts, sweep_adds)
        runner.write_json(sweep, out / "latency_sweep.json")
    if not args.no_html:
        report.render(doc, out / "report.html", sweep)
    tot = doc["metrics"]["total"]  # type: ignore[index]
    print(opts.latency.headline())
    print(f"fills: {opts.fills.rule_text()}")
    print(f"backtest: {timing['events']} books in {timing['replay_s']:.3f} s ({timing['events_per_s']:,.0f} books/s, "
          f"{timing['x_real_time']:,.0f}x real time); {tot['orders']} orders, {tot['fills']} fills, marked PnL "
          f"{tot['pnl']['marked']:.4f} USD -> {out}")
    print_points(points)
    if sweep is not None:
        for p in sweep["points"]:  # type: ignore[attr-defined]
            print(f"  +{p['added_ns']:>12,} ns: orders {p['orders']}, fill rate {_pct(p['fill_rate'])}, "
                  f"marked PnL {p['pnl_marked']:.4f}")
    return 0


def print_points(points: dict[str, object]) -> None:
    """PnL against latency, one line per point."""
    rows = points["points"]
    if not rows:
        print(f"PnL against latency: none ({points.get('why')})")
        return
    print(f"PnL against latency (the same data and rules; {points['varies']}):")
    for r in rows:  # type: ignore[attr-defined]
        print(f"  {r['point']:>4}: {r['label']}: orders {r['orders']}, fill rate {_pct(r['fill_rate'])}, "
              f"marked PnL {r['pnl_marked']:.4f} USD (fees {r['fees']:.4f})")


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"
