"""`caerus venue-sim`: run the venue emulator as a process (ready file, SIGTERM -> exit 0, connection counts).

    caerus venue-sim --cert-dir DIR [--host 127.0.0.1] [--binance-port 0] [--hyperliquid-port 0] [--seed N]
        [--market default|fixed-lag|FILE.toml] [--symbols BTC,ETH,SOL] [--factor-share F] [--scenario NAME]
        [--replay FRAMES.jsonl | --replay CAPTURE.gz ...] [--ready-file PATH]

The market model's settings come from ``--market`` (a preset in caerus/sim/markets or a TOML file; default: the
``default`` preset); the market options below (--seed, --symbols, --hl-lag-ms, ...) override the file's values
when given. An unknown key or an out-of-range value in the file stops the program naming the key.

The ready file (JSON, written atomically once the servers are bound) holds binance_url, hyperliquid_url,
binance_order_url, ca_file and pid (plus scenario, seed, replay and the emulated symbols for the record). With
``--scenario refused`` the ports are bound (so the URLs are final) but refuse connections for the scenario's
duration.
Bad settings stop the program with exit 2 and a message before anything starts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
import time
from pathlib import Path

from caerus.sim import protocols
from caerus.sim.core.capture_file import inspect, is_capture
from caerus.sim.core.config import EmulatorConfig
from caerus.sim.core.market_config import DEFAULT_MARKET, load_market, presets
from caerus.sim.core.scenarios import describe_scenarios, get_scenario

log = logging.getLogger("caerus.sim")


ORDER_ENTRY_HELP = """order entry: the emulator accepts orders only from the credentials named in its environment
(without them every order is refused, as the venue refuses an unknown key):
  CAERUS_SIM_BINANCE_API_KEY                  the API key Binance requests must carry
  CAERUS_SIM_BINANCE_SECRET                   its HMAC secret, and/or
  CAERUS_SIM_BINANCE_ED25519_PUBLIC_KEY_FILE  a PEM Ed25519 public key (Ed25519-signed requests)
  CAERUS_SIM_HL_ADDRESS                       the Hyperliquid wallet (0x...) whose signatures are accepted
  CAERUS_SIM_HL_NETWORK                       testnet | mainnet (default testnet): the network it plays; an action
                                              signed for the other one is refused, as the venue refuses it
  CAERUS_SIM_HL_VAULTS                        comma-separated vault addresses the wallet may trade for (default none)
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = ORDER_ENTRY_HELP
    p.add_argument("--cert-dir", type=Path, help="folder for ca.pem (what feeds trust) and the server key/cert")
    p.add_argument("--host", default="127.0.0.1", help="loopback address to listen on")
    p.add_argument("--binance-port", type=int, default=0, help="0 = ephemeral")
    p.add_argument("--hyperliquid-port", type=int, default=0, help="0 = ephemeral")
    p.add_argument("--seed", type=int, default=None, help="market model seed (default: the market file's, else 1)")
    p.add_argument("--scenario", default="none", help="fault scenario (see --list-scenarios) or replay:PATH")
    p.add_argument("--replay", type=Path, action="append", metavar="PATH",
                   help="play recorded frames instead of the market model: a frames file (JSON lines, both venues), "
                        "or real capture files (hftbacktest's '<receive ns> <frame>' lines, gzip or not; repeat for "
                        "several): their Binance USD-M frames at their real pace, Hyperliquid modelled by --market's "
                        "follower following the replayed mid (docs/emulator.md, Replaying a real capture)")
    p.add_argument("--replay-retime", action="store_true",
                   help="rewrite replayed exchange timestamps to the scheduled send time")
    p.add_argument("--ready-file", type=Path, help="write the ready JSON here once listening")
    p.add_argument("--list-scenarios", action="store_true", help="print the scenarios and exit")
    g = p.add_argument_group("scenario timing (overrides the scenario's defaults)")
    g.add_argument("--scenario-venue", choices=("binance", "hyperliquid", "both"))
    g.add_argument("--scenario-after", type=float, metavar="S", help="seconds after a connection subscribes")
    g.add_argument("--scenario-duration", type=float, metavar="S", help="length of stall/slow-drip/refused")
    g.add_argument("--scenario-times", type=int, metavar="N", help="connections/handshakes hit per venue (0=all)")
    m = p.add_argument_group("market model (each option overrides the --market file's value)")
    m.add_argument("--market", default=DEFAULT_MARKET, metavar="NAME|FILE",
                   help=f"market preset ({', '.join(presets())}) or market TOML file (default {DEFAULT_MARKET}; "
                        "see docs/emulator.md, The emulator's market)")
    m.add_argument("--symbols", default=None, metavar="LIST",
                   help="emulated instruments, comma-separated catalogue names (caerus/sim/core/catalogue.py), "
                        "e.g. BTC,ETH,SOL (default: the market file's, else BTC)")
    m.add_argument("--factor-share", type=float, metavar="F",
                   help="share (0..1) of each instrument's moves from the common factor (default 0.6)")
    m.add_argument("--binance-rate", type=float, help="mean bookTicker rate per symbol outside bursts (Hz)")
    m.add_argument("--hl-lag-ms", type=float, help="median delay before Hyperliquid shows a Binance move (ms)")
    m.add_argument("--hl-block-ms", type=float, help="mean Hyperliquid block interval")
    m.add_argument("--jumps-per-min", type=float, help="mean number of 10-40 bps jumps per minute")
    v = p.add_argument_group("venue behaviour (time-compressible)")
    v.add_argument("--binance-ping-interval", type=float, default=180.0, metavar="S")
    v.add_argument("--binance-max-lifetime", type=float, default=86_400.0, metavar="S")
    v.add_argument("--hl-idle-timeout", type=float, default=60.0, metavar="S")
    v.add_argument("--hl-greeting", action="store_true", help="send the non-JSON greeting on HL connect")
    v.add_argument("--binance-gtd-min-lead", type=float, default=600.0, metavar="S",
                   help="a GTD order's goodTillDate must be more than this far ahead (the venue: 600 s)")
    fe = p.add_argument_group("fees (caerus/fees.py; what every fill pays)")
    fe.add_argument("--binance-fee-tier", type=int, default=0, metavar="N",
                    help="Binance VIP level 0..9 (0 = regular: maker 2.0 / taker 5.0 bps)")
    fe.add_argument("--hl-fee-tier", type=int, default=0, metavar="N",
                    help="Hyperliquid perps tier 0..6 (0: maker 1.5 / taker 4.5 bps)")
    f = p.add_argument_group("fleet conventions")
    f.add_argument("--cpus", default="", help="CPU list to pin to (e.g. 0)")
    f.add_argument("--metrics-dir", type=Path, help="write venue-sim.hlog here: how late each top-of-book frame "
                   "went out against its scheduled (exchange) time")
    f.add_argument("--yield-after-top", action="store_true",
                   help="give the CPU up (sched_yield) after each top-of-book frame is handed to the sockets: for an "
                        "emulator sharing a CPU with the fleet process that reads the frame (the session sets it "
                        "from the plan)")
    f.add_argument("--log-level", default="INFO")


def config_from_args(args: argparse.Namespace) -> EmulatorConfig:
    """Build and validate the config; ValueError names the bad setting."""
    if args.cert_dir is None:
        raise ValueError("--cert-dir is required")
    replays = list(args.replay or [])
    name = args.scenario
    if name.startswith("replay:"):
        if replays:
            raise ValueError("give either --replay or --scenario replay:PATH, not both")
        replays, name = [Path(name.split(":", 1)[1])], "none"
    captures = tuple(p for p in replays if p.is_file() and is_capture(p))
    frames_files = [p for p in replays if p not in captures]
    if len(frames_files) > 1 or (frames_files and captures):
        raise ValueError(f"--replay takes one frames file or capture files, got {', '.join(map(str, replays))}")
    replay = frames_files[0] if frames_files else None
    scenario = get_scenario(name).with_overrides(
        venues=args.scenario_venue, after_s=args.scenario_after, duration_s=args.scenario_duration,
        times=args.scenario_times,
    )
    market_overrides = {
        "binance_rate_hz": args.binance_rate, "hl_lag_ms": args.hl_lag_ms, "hl_block_ms": args.hl_block_ms,
        "jumps_per_min": args.jumps_per_min, "factor_share": args.factor_share,
    }
    symbols = None
    if args.symbols is not None:
        symbols = tuple(s.strip() for s in str(args.symbols).split(",") if s.strip())
        if not symbols:
            raise ValueError("--symbols must name at least one instrument")
    if captures:
        # the capture is the Binance side: its symbols are the emulated instruments, its pace the Binance rate
        info = inspect(captures)
        if symbols is not None and symbols != info.names:
            raise ValueError(f"--symbols {','.join(symbols)}: the capture holds {', '.join(info.symbols)} (emulated as "
                             f"{','.join(info.names)})")
        for option, value in (("--binance-rate", args.binance_rate), ("--jumps-per-min", args.jumps_per_min),
                              ("--factor-share", args.factor_share)):
            if value is not None:
                raise ValueError(f"{option} sets the model's Binance side; replaying a capture, Binance is real")
        symbols = info.names
    market = load_market(args.market, seed=args.seed, symbols=symbols, **market_overrides)
    cfg = EmulatorConfig(
        cert_dir=args.cert_dir, host=args.host, binance_port=args.binance_port,
        hyperliquid_port=args.hyperliquid_port, scenario=scenario, market=market, replay=replay, captures=captures,
        replay_retime=args.replay_retime, binance_ping_interval_s=args.binance_ping_interval,
        binance_max_lifetime_s=args.binance_max_lifetime, hl_idle_timeout_s=args.hl_idle_timeout,
        hl_greeting=args.hl_greeting, metrics_dir=args.metrics_dir, yield_after_top=args.yield_after_top,
        binance_fee_tier=args.binance_fee_tier, hl_fee_tier=args.hl_fee_tier,
        binance_gtd_min_lead_s=args.binance_gtd_min_lead,
    )
    cfg.validate()
    if args.ready_file is not None and not args.ready_file.parent.is_dir():
        raise ValueError(f"--ready-file folder {args.ready_file.parent} does not exist")
    return cfg


def write_ready_file(path: Path, info: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(info, indent=1) + "\n")
    os.replace(tmp, path)


async def _serve(cfg: EmulatorConfig, ready_file: Path | None) -> None:
    from caerus.sim.emulator import VenueEmulator

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    emu = VenueEmulator(cfg)
    info = await emu.start()
    if ready_file is not None:
        write_ready_file(ready_file, info)
    last = time.monotonic()
    try:
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), 10.0)
            except TimeoutError:
                pass
            if time.monotonic() - last >= 10.0:
                last = time.monotonic()
                log.info("stats: %s", json.dumps(emu.stats()))
    finally:
        await emu.stop()
        if ready_file is not None:
            ready_file.unlink(missing_ok=True)


def run(args: argparse.Namespace) -> int:
    if args.list_scenarios:
        print(describe_scenarios())
        return 0
    logging.basicConfig(level=getattr(logging, str(args.log_level).upper(), logging.INFO),
                        format="%(asctime)s venue-sim %(levelname)s %(message)s", stream=sys.stderr)
    try:
        protocols.load_plugins()
        cfg = config_from_args(args)
        from caerus.sim import orders
        from caerus.sim.core.order_entry import configure_credentials_from_env, install

        install(orders)  # the emulator installs it again; the test credentials are read before it exists
        if configure_credentials_from_env():  # a bad CAERUS_SIM_* value exits 2 here, naming it
            log.info("order entry: test credentials taken from CAERUS_SIM_* environment variables")
        if args.cpus:
            from caerus.plan import parse_cpu_list, pin_current_process

            pin_current_process(parse_cpu_list(args.cpus))
    except (ValueError, OSError) as exc:
        print(f"caerus venue-sim: {exc}", file=sys.stderr)
        return 2
    try:
        asyncio.run(_serve(cfg, args.ready_file))
    except OSError as exc:  # e.g. a port already taken
        print(f"caerus venue-sim: {exc}", file=sys.stderr)
        return 1
    return 0
