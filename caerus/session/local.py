"""The local session (`invoke bench` without a host): emulator + whole fleet on this machine, timed, collected.

``run_local_session(opts)``:

1. validates the options (nothing starts on bad input), plans the fleet's cores (``caerus.plan.plan_fleet``),
   names the session folder ``<UTC start>-<hash of the resolved config>`` and writes ``config.toml`` + ``env.json``;
2. starts the venue emulator (unless ``live``) and waits for its ready file, then capture, execution, strategy
   and the feeds, one per venue or one per share of a venue the plan split (each retry-attaches to the segments
   it reads, so order only decides how much early data is seen);
3. shows live progress for ``duration_s`` (rich when on a terminal, a line every few seconds otherwise), noting
   any process that dies -- the session carries on and reports it;
4. stops every process it started (SIGTERM, SIGKILL after the grace period; the feeds first, then strategy and
   execution, then capture and the emulator), removes the session's segments, collects (``summary.json``,
   ``.hgrm`` per metric), prints the report's opening section when asked (``price``: the backtest of the session's
   books at its own latency, caerus.report.pricing), then the headline table, and returns the folder.

The caller renders the report (tasks.py / ``caerus session`` do).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import tomli_w
from rich.console import Console
from rich.live import Live
from rich.table import Table

from caerus.config import ConfigError
from caerus.instruments import InstrumentError, parse_symbols
from caerus.ipc.segment import shm_dir
from caerus.ipc.wait import POLICIES
from caerus.metrics.env import chrony_tracking, collect_env
from caerus.metrics.rss import SERIES_FILE, RssSampler
from caerus.plan import (
    BOOK_RATE_HZ,
    EMULATOR_PLACES,
    EXECUTION_PLACES,
    FEED_WARM_EVERY_US,
    FEEDS,
    HOT_PROCESSES,
    MAX_FEED_BOOKS_PER_S,
    FleetPlan,
    plan_fleet,
)
from caerus.report import answer, pricing, tables
from caerus.report import market as report_market
from caerus.session import launch, replay_dataset
from caerus.session.chaos import ChaosMonkey
from caerus.session.collect import collect
from caerus.session.continuity import WATCH_PERIOD_S, OrderContinuity, RecoveryClock
from caerus.session.environment import child_env
from caerus.session.exporter import start_exporter, stop_exporter
from caerus.session.instruments import resolve_into
from caerus.session.order_desk import EmulatorOrderDesk
from caerus.session.order_desk import sweep_stale as sweep_stale_wallets
from caerus.session.progress import LiveStats, one_line, render
from caerus.session.store_growth import StoreGrowth
from caerus.session.supervise import Restarter
from caerus.strategy.model_signal import ModelError, strategy_model

# paper: simulated fills in the execution process; null: send_msg returns at once (the decision-only reference);
# emulator: real signed Hyperliquid order entry to the venue emulator over TLS (caerus.session.order_desk).
TRANSPORTS = ("paper", "null", "emulator")
EMULATOR_YIELD = ("auto", "on", "off")  # SessionOptions.emulator_yield
READY_TIMEOUT_S = 60.0
DEFAULT_SYMBOLS = "BTC"


class SessionConfigError(ConfigError):
    """Bad session options: reported before anything starts (a caerus.config.ConfigError, exit 2)."""


@dataclass(frozen=True)
class SessionOptions:
    duration_s: float = 30.0
    out: Path = Path("sessions")
    seed: int = 1
    scenario: str | None = None  # emulator fault scenario name, or "replay:PATH"
    wait_policy: str | None = None  # force one WaitPolicy on every hot process; None = the plan's per-process one
    capture: bool = True
    transport: str = "paper"
    stop_grace_s: float = 5.0
    progress: str = "auto"  # auto | rich | lines | none
    live: bool = False  # feeds read the real venues (no emulator); orders still go to the paper transport
    strategy_config: Path | None = None  # passed to `caerus strategy --config` (e.g. mode = "bench")
    execution_config: Path | None = None  # passed to `caerus execution --config`
    # The emulated market: a preset name (caerus/sim/markets: default, fixed-lag) or a market TOML file, passed to
    # venue-sim --market; jumps_per_min (information jumps per minute) overrides the market's own when set.
    # "replay:DATASET" plays a real capture (caerus.session.replay_dataset): Binance real, Hyperliquid modelled.
    market: str = "default"
    jumps_per_min: float | None = None
    chaos_every_s: float = 0.0  # > 0: SIGKILL a random hot process this often (caerus.session.chaos)
    feed_client: str | None = None  # force the feeds' WebSocket client (asyncio | busy); None = the plan's choice
    # the feeds' warm path (caerus feed --warm-every-us), where a feed can have it (busy client, polling loop); 0: off
    feed_warm_every_us: float = FEED_WARM_EVERY_US
    # the emulator gives its CPU up after each top-of-book frame it sends: auto = when it shares a CPU with a hot
    # process (caerus.plan.FleetPlan.emulator_shares_hot_cpu), on, off
    emulator_yield: str = "auto"
    # where the venue emulator runs (caerus.plan.EMULATOR_PLACES): auto = the plan's choice, housekeeping, strategy
    emulator_cpu: str = "auto"
    # where the execution runs when it has no CPU of its own (caerus.plan.EXECUTION_PLACES): auto = the plan's choice
    execution_cpu: str = "auto"
    # what to trade: caerus.instruments.parse_symbols syntax (BTC,ETH,SOL); listed by both venues or the session
    # stops before it starts anything
    symbols: str = DEFAULT_SYMBOLS
    symbol_rate_hz: float | None = None  # emulated Binance bookTicker rate per instrument (None: the emulator's)
    feed_connections: int | None = None  # connections per feed (the pool); None: as few as the venue's limits allow
    # serve the session to Prometheus (caerus exporter) on this loopback port (0: any); None: no exporter
    exporter_port: int | None = None
    # books/s one feed process is planned to carry (None: caerus.plan.MAX_FEED_BOOKS_PER_S); a venue whose estimated
    # rate is above it is split across feed processes (caerus.plan.feed_shares)
    max_feed_books_per_s: float | None = None
    # record mode (`caerus record`): the feeds and capture only, no strategy, no execution, no orders
    record: bool = False

    def validate(self) -> None:
        problems = []
        if not (self.duration_s > 0):
            problems.append(f"duration must be > 0 seconds, got {self.duration_s}")
        if self.wait_policy is not None and self.wait_policy not in POLICIES:
            problems.append(f"wait policy {self.wait_policy!r} is not one of {', '.join(POLICIES)}")
        if self.transport not in TRANSPORTS:
            problems.append(f"transport {self.transport!r} is not one of {', '.join(TRANSPORTS)} for a local session")
        if self.emulator_yield not in EMULATOR_YIELD:
            problems.append(f"emulator yield {self.emulator_yield!r} is not one of {', '.join(EMULATOR_YIELD)}")
        if self.emulator_cpu not in EMULATOR_PLACES:
            problems.append(f"emulator CPU {self.emulator_cpu!r} is not one of {', '.join(EMULATOR_PLACES)}")
        if self.execution_cpu not in EXECUTION_PLACES:
            problems.append(f"execution CPU {self.execution_cpu!r} is not one of {', '.join(EXECUTION_PLACES)}")
        if self.live and self.scenario is not None:
            problems.append("--scenario drives the venue emulator; it cannot be combined with live venues")
        if self.live and self.transport == "emulator":
            problems.append("transport emulator sends orders to the venue emulator; it cannot be combined with "
                            "live venues")
        if self.scenario is not None:
            if not self.scenario.strip():
                problems.append("scenario is empty")
            elif self.scenario.startswith("replay:"):
                if not Path(self.scenario[7:]).is_file():
                    problems.append(f"replay file {self.scenario[7:]!r} does not exist")
            else:
                problem = _scenario_problem(self.scenario)
                if problem:
                    problems.append(problem)
        for what, cfg in (("strategy", self.strategy_config), ("execution", self.execution_config)):
            if cfg is not None and not Path(cfg).is_file():
                problems.append(f"{what} config {cfg} does not exist")
        if self.strategy_config is not None and Path(self.strategy_config).is_file():
            try:  # a model the strategy would refuse stops the session before anything starts
                strategy_model(self.strategy_config)
            except (ConfigError, ModelError) as exc:
                problems.append(str(exc))
        if self.stop_grace_s < 0:
            problems.append(f"stop grace must be >= 0, got {self.stop_grace_s}")
        if not (self.chaos_every_s == 0 or self.chaos_every_s >= 2.0):
            problems.append(f"chaos interval must be 0 (off) or >= 2 seconds (a restart needs time to show), got "
                            f"{self.chaos_every_s}")
        try:
            requests = parse_symbols(self.symbols)
        except InstrumentError as exc:
            problems.append(str(exc))
            requests = ()
        if not self.feed_warm_every_us >= 0:
            problems.append(f"feed warm interval must be >= 0 us (0 = off), got {self.feed_warm_every_us}")
        if self.feed_connections is not None and not 1 <= self.feed_connections <= len(requests or (1,)):
            problems.append(f"feed connections must be 1..{len(requests or (1,))} (one instrument per connection at "
                            f"most), got {self.feed_connections}")
        problem = _market_problem(self.market)
        if problem:
            problems.append(problem)
        if replay_dataset.is_replay(self.market):
            dataset = _dataset(self.market)
            named = tuple(r.hl_coin for r in requests)
            if dataset is not None and self.symbols != DEFAULT_SYMBOLS and named != dataset.names:
                problems.append(f"--symbols {self.symbols}: the replayed capture holds {', '.join(dataset.symbols)} "
                                f"(instruments {','.join(dataset.names)})")
            if self.live:
                problems.append("--market replay: plays a capture through the venue emulator; it cannot be combined "
                                "with live venues")
            if self.scenario is not None and self.scenario.startswith("replay:"):
                problems.append("give either --market replay:DATASET or --scenario replay:FRAMES, not both")
            for what, value in (("symbol rate", self.symbol_rate_hz), ("jumps per minute", self.jumps_per_min)):
                if value is not None:
                    problems.append(f"{what} sets the model's Binance side; replaying a capture, Binance is real")
        if self.record:
            if not self.capture:
                problems.append("record mode records through capture: it cannot be combined with --no-capture")
            if self.transport == "emulator":
                problems.append("record mode sends no orders: it cannot be combined with transport emulator")
            if self.chaos_every_s:
                problems.append("record mode runs no strategy or execution: chaos is for the trading fleet")
            for what, cfg in (("strategy", self.strategy_config), ("execution", self.execution_config)):
                if cfg is not None:
                    problems.append(f"record mode runs no {what}: drop its config")
        if self.symbol_rate_hz is not None and not self.symbol_rate_hz > 0:
            problems.append(f"symbol rate must be > 0 Hz, got {self.symbol_rate_hz}")
        if self.max_feed_books_per_s is not None and not 0 < self.max_feed_books_per_s < float("inf"):
            problems.append(f"books per feed process must be a number > 0, got {self.max_feed_books_per_s}")
        if self.progress not in ("auto", "rich", "lines", "none"):
            problems.append(f"progress {self.progress!r} is not one of auto, rich, lines, none")
        if problems:
            raise SessionConfigError("bad session options: " + "; ".join(problems))

    def resolved(self) -> dict[str, Any]:
        d = asdict(self)
        d["out"] = str(self.out)
        for key in ("strategy_config", "execution_config"):
            d[key] = str(Path(d[key]).resolve()) if d[key] else None
        if replay_dataset.is_replay(self.market):
            d["market"] = replay_dataset.PREFIX + str(Path(self.market[len(replay_dataset.PREFIX):]).resolve())
        elif Path(self.market).is_file():
            d["market"] = str(Path(self.market).resolve())
        d["duration_s"] = float(self.duration_s)
        if self.scenario and self.scenario.startswith("replay:"):
            d["scenario"] = "replay:" + str(Path(self.scenario[7:]).resolve())
        return d


def _dataset(market: str) -> replay_dataset.Dataset | None:
    """The replayed dataset ``market`` names (None: its problem is reported by :func:`_market_problem`)."""
    try:
        return replay_dataset.resolve(market)
    except ValueError:
        return None


def _market_problem(market: str) -> str | None:
    """The emulator's own check of a market preset or file (a typo or a bad key stops the session before it starts
    anything); for ``replay:DATASET``, that the dataset can be replayed."""
    if replay_dataset.is_replay(market):
        return _refusal(replay_dataset.resolve, market)
    try:
        from caerus.sim.core.market_config import load_market
    except ImportError:  # emulator not importable here: venue-sim will refuse it at start (exit 2)
        return None
    return _refusal(load_market, market)


def _scenario_problem(name: str) -> str | None:
    """The emulator's own check of a scenario name (so a typo stops the session before it starts anything)."""
    try:
        from caerus.sim.core.scenarios import get_scenario
    except ImportError:  # emulator not importable here: venue-sim will refuse it at start (exit 2)
        return None
    return _refusal(get_scenario, name)


def _refusal(check: Callable[[str], object], value: str) -> str | None:
    """The message of the ValueError ``check(value)`` raises, or None when it accepts ``value``."""
    try:
        check(value)
    except ValueError as exc:
        return str(exc)
    return None


def config_hash(opts: SessionOptions, plan: FleetPlan) -> str:
    """Hash of what determines the run (not where its output goes, not how progress is shown)."""
    doc = {k: v for k, v in opts.resolved().items() if k not in ("out", "progress", "exporter_port")}
    if doc.get("max_feed_books_per_s") is None:  # the default: sessions hash as they did before the option existed
        doc.pop("max_feed_books_per_s", None)
    for key in ("emulator_cpu", "execution_cpu"):  # likewise
        if doc.get(key) == "auto":
            doc.pop(key, None)
    doc["plan"] = plan.to_dict()
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:8]


def _toml_clean(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _toml_clean(v) for k, v in x.items() if v is not None}
    if isinstance(x, list | tuple):
        return [_toml_clean(v) for v in x]
    return x


def _wait_ready(r: launch.Running, path: Path, timeout: float, start_mono: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if r.poll(start_mono) is not None:
            lines = launch.tail(r.log_path)
            last = lines[-1].strip() if lines else "no output"
            raise RuntimeError(f"venue-sim exited with {r.proc.returncode} before it was ready ({last}); log tail:\n"
                               + "\n".join(lines))
        try:
            doc = json.loads(path.read_text())
            if {"binance_url", "hyperliquid_url", "ca_file"} <= set(doc):
                return doc
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    raise RuntimeError(f"venue-sim did not write {path} within {timeout:g} s (see {r.log_path})")


def _cleanup_segments(sid: str) -> list[str]:
    """Remove this session's leftover segment files (writers killed before unlinking)."""
    removed = []
    for p in shm_dir().glob(f"caerus-{sid}.*"):
        try:
            p.unlink()
            removed.append(p.name)
        except OSError:
            pass
    return removed


def headline_table(summary: dict[str, Any]) -> Table:
    t = Table(title=f"session {summary.get('session')}")
    for h in tables.HEADLINE_HEADERS[:-1]:
        t.add_column(h, justify="left" if h == "metric" else "right")
    for row in tables.headline_rows(summary):
        t.add_row(*row[:-1])
    return t


def print_opening(console: Console, session_dir: Path, summary: dict[str, Any], env: dict[str, Any] | None) -> None:
    """The report's opening section on the console (caerus.report.answer): paper fills and PnL against latency,
    from the backtest of the session's books at its own latency (run here, caerus.report.pricing, unless kept)."""
    pricing.ensure(session_dir, env=child_env("backtest"))
    op = answer.opening(session_dir, summary, env)
    console.print(f"{answer.TITLE}", style="bold", markup=False)
    for line in op.lead:
        console.print(line, markup=False)
    if op.fills_rows:
        console.print(_table("the strategy on the market it ran", op.fills_headers, op.fills_rows))
        for note in op.fills_notes:
            console.print(note, markup=False)
    console.print(op.points_intro, markup=False)
    if op.points_rows:
        console.print(_table("PnL against latency", answer.POINT_HEADERS, op.points_rows))
    for note in op.notes:
        console.print(note, markup=False)


def _table(title: str, headers: list[str], rows: list[list[str]]) -> Table:
    t = Table(title=title)
    for i, h in enumerate(headers):
        t.add_column(h, justify="left" if i < 2 else "right")
    for row in rows:
        t.add_row(*row)
    return t


def run_local_session(opts: SessionOptions, console: Console | None = None, price: bool = False) -> Path:
    """Run one local session; returns its folder (which holds everything, even when a process died). ``price``:
    open the printed headline with the report's opening section, backtesting the session's books at its latency
    (what ``caerus session`` does unless ``--no-report``)."""
    opts.validate()
    # a replay: the capture's instruments are the session's, its files are venue-sim's market
    dataset = replay_dataset.resolve(opts.market) if replay_dataset.is_replay(opts.market) else None
    if dataset is not None:
        opts = replace(opts, symbols=",".join(dataset.names))
    # wallets of earlier sessions whose runner is gone (SIGKILL, a crash): their keys must not outlive them
    for stale in sweep_stale_wallets():
        print(f"removed the stale order-desk wallet {stale} (its session's runner is gone)", file=sys.stderr)
    if console is None:
        console = Console()
        if not console.is_terminal:  # CI logs: do not wrap the headline table at 80 columns
            console = Console(width=160)
    plan = session_plan(opts)
    start_ns = time.time_ns()
    chash = config_hash(opts, plan)
    name = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(start_ns / 1e9)) + f"-{chash}"
    session_dir = Path(opts.out).resolve() / name
    n = 1
    while session_dir.exists():  # two sessions in the same second with the same config
        n += 1
        session_dir = Path(opts.out).resolve() / f"{name}-{n}"
    name = session_dir.name
    (session_dir / "logs").mkdir(parents=True)
    sid = f"s{chash[:6]}{os.getpid() % 100000:05d}"
    seg = launch.Segments(sid)
    # the trained model the strategy trades (signal = "model"): its content hash names it in env.json and the report
    model = strategy_model(opts.strategy_config) if opts.strategy_config is not None else None
    env = collect_env(plan=plan.to_dict(), extra={"session_id": sid, "model": model})
    (session_dir / "env.json").write_text(json.dumps(env, indent=1))

    start_mono = time.monotonic()
    procs: list[launch.Running] = []
    run: dict[str, Any] = {
        "session": name, "session_id": sid, "started_ns": start_ns, "duration_s": float(opts.duration_s),
        "options": {k: v for k, v in opts.resolved().items() if k != "out"}, "config_hash": chash,
        "plan": plan.to_dict(), "isolated": plan.isolated, "venues": "live" if opts.live else "emulator",
        "segments": seg.to_dict(),
        "kill_file": str(launch.kill_file_path(session_dir)),  # touch it to halt trading
    }
    live: LiveStats | None = None
    # Restart on failure with the one back-off, like the host's systemd units (caerus.session.supervise).
    restarter = Restarter(session_dir, start_mono,
                          on_event=lambda m: print(f"supervisor: {m}", file=sys.stderr, flush=True))
    rss = RssSampler()  # every fleet process's resident memory, from outside (summary.json "rss")
    chaos: ChaosMonkey | None = None
    growth: StoreGrowth | None = None
    recorded_s = 0.0
    continuity = OrderContinuity()  # every exec record of every execution incarnation, once
    recovery = RecoveryClock(start_mono)  # time from each restarted death to the first book / order
    config_written = False
    failure: str | None = None
    interrupted = False

    def write_processes() -> None:
        doc = {r.spec.name: {"pid": r.pid, "status": r.status} for r in procs}
        tmp = session_dir / "processes.json.tmp"
        tmp.write_text(json.dumps(doc))
        os.replace(tmp, session_dir / "processes.json")

    def on_term(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # stop early, still stop + collect (and remove the test wallet)

    # SIGTERM, and SIGHUP (the terminal went away) unless the runner was started to ignore it (nohup): both stop
    # the session the way Ctrl-C (SIGINT, KeyboardInterrupt) does, instead of killing the runner with its fleet
    # still running and the session's wallet key left on disk.
    old_handlers: dict[int, Any] = {}
    if _main_thread():
        for signum in (signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(signum) != signal.SIG_IGN:
                old_handlers[signum] = signal.signal(signum, on_term)
    desk: EmulatorOrderDesk | None = None
    exporter: subprocess.Popen[bytes] | None = None
    try:
        if opts.transport == "emulator":
            desk = EmulatorOrderDesk()
        try:
            urls: dict[str, Any] | None = None
            started: list[launch.ProcessSpec] = []
            if not opts.live:
                sim_spec = launch.venue_sim_spec(session_dir, plan, opts.seed, opts.scenario, opts.jumps_per_min,
                                                 desk.sim_env() if desk is not None else (),
                                                 symbols=_emulated(opts), rate_hz=opts.symbol_rate_hz,
                                                 market=replay_dataset.FOLLOWER_MARKET if dataset else opts.market,
                                                 captures=dataset.files if dataset else (),
                                                 yield_after_top=emulator_yields(opts.emulator_yield, plan))
                sim = launch.start(sim_spec, session_dir)
                procs.append(sim)
                started.append(sim_spec)
                write_processes()
                urls = _wait_ready(sim, session_dir / "venue-sim.ready.json", READY_TIMEOUT_S, start_mono)
            env["market"] = _market_record(opts, dataset, urls)
            console.print(f"market: {report_market.market_line(env['market'])}")
            # the instruments from the venues' listings, before any fleet process starts (an unlisted symbol
            # stops the session here, naming it)
            inst_file = _instruments(session_dir, opts, urls)
            strategy_config = opts.strategy_config or _default_strategy_config(session_dir, opts)
            specs = launch.fleet_specs(session_dir, plan, seg, urls, capture=opts.capture, transport=opts.transport,
                                       transport_args=desk.execution_args(urls) if desk is not None and urls else None,
                                       strategy_config=strategy_config, instruments=inst_file,
                                       feed_connections=opts.feed_connections,
                                       feed_warm_every_us=opts.feed_warm_every_us,
                                       execution_config=opts.execution_config, feed_client=opts.feed_client,
                                       trading=not opts.record)
            _write_config(session_dir, opts, plan, seg, [*started, *specs])
            config_written = True
            if opts.exporter_port is not None:
                exporter, run["exporter_port"] = start_exporter(session_dir, opts.exporter_port)
                console.print(f"metrics: http://127.0.0.1:{run['exporter_port']}/metrics")
            for spec in specs:
                procs.append(launch.start(spec, session_dir))
            write_processes()
            if not opts.record:  # nothing trades in record mode
                console.print(f"kill file: {run['kill_file']} (touch it to halt trading)")
            live = LiveStats(seg, [s.name for s in specs], start_ns)
            live.on_exec.append(continuity.add)
            run["fleet_started_ns"] = time.time_ns()
            rss.watch({r.spec.name: r.pid for r in procs})
            # the timed part starts once the whole fleet is launched (the emulator's start-up is not counted)
            if opts.chaos_every_s:
                chaos = ChaosMonkey(opts.chaos_every_s, plan.hot_processes, opts.seed, time.monotonic(),
                                    on_event=lambda m: print(m, file=sys.stderr, flush=True))
            if opts.capture:  # the store's size: what a recording host's disk fills at (store_growth)
                growth = StoreGrowth(session_dir / "capture", time.monotonic())
            _watch(opts, console, live, procs, start_mono, write_processes, time.monotonic(), rss, restarter,
                   chaos, recovery, growth)
        except KeyboardInterrupt:
            interrupted = True
            try:  # after SIGHUP the terminal may be gone (EIO): stopping the fleet must not depend on this line
                console.print("[yellow]interrupted: stopping the session early and collecting what it has[/yellow]")
            except OSError:
                pass
        except RuntimeError as exc:
            failure = str(exc)
            console.print(f"[red]session failed: {exc}[/red]")
        # -- stop: data producers first, so consumers can drain and flush; the emulator last
        if live is not None:
            live.poll()
            recovery.tick(restarter.tracks, live.snapshots, live.writer_pids, time.monotonic())
        rss.sample(force=True)  # the last reading before the fleet is stopped
        recorded_s = time.monotonic() - growth.start if growth is not None else 0.0
        if growth is not None:
            growth.sample(force=True)
        # the feeds first, so the strategy and execution read every book they published (a ring's last records are
        # not lost to a reader stopped at the same moment); then those two; capture (the rings' other reader) and
        # the emulator last
        traders = HOT_PROCESSES[len(FEEDS):]  # strategy, execution
        by_name = {r.spec.name: r for r in procs}
        for group in ([by_name[p] for p in plan.hot_processes if p in by_name and p not in traders],
                      [by_name[p] for p in traders if p in by_name],
                      [by_name[p] for p in ("capture", "venue-sim") if p in by_name]):
            launch.stop(group, opts.stop_grace_s, start_mono)
            if live is not None:
                live.poll()
        write_processes()
    finally:
        for restored, handler in old_handlers.items():
            signal.signal(restored, handler)
        if desk is not None:
            desk.close()  # the session's test wallet key goes with it
    end_ns = time.time_ns()
    if growth is not None:  # capture has exited: what its store keeps
        growth.finish(recorded_s)
    leftovers = _cleanup_segments(sid)
    if live is not None:
        live.close()
    if not config_written:  # the fleet never started: record what did run
        _write_config(session_dir, opts, plan, seg, [r.spec for r in procs])
    env.setdefault("chrony", {})["end"] = chrony_tracking()
    if dataset is not None and env.get("market", {}).get("kind") == "replay":
        env["market"] = replay_dataset.add_played(env["market"], session_dir)
    (session_dir / "env.json").write_text(json.dumps(env, indent=1))
    run.update({
        "ended_ns": end_ns, "elapsed_s": round((end_ns - start_ns) / 1e9, 3),
        "processes": {r.spec.name: {**r.record(start_mono, session_dir), **restarter.record(r.spec.name)}
                      for r in procs},
        "restarts": restarter.restarts(),
        "chaos": {"every_s": opts.chaos_every_s, "kills": chaos.kills} if chaos is not None else None,
        "counters": live.snapshots if live else {}, "exec": live.exec_summary() if live else {},
        "counters_earlier_incarnations": live.generations if live else {},
        "continuity": _continuity(continuity, live, restarter) if live else None,
        "interrupted": interrupted, "failure": failure, "segments_removed": leftovers,
        "live_errors": live.errors if live else [],
        "rss": rss.summary(),
        "capture_store": growth.summary() if growth is not None else None,
    })
    rss.write_series(session_dir / SERIES_FILE)  # every sample, for the report's RSS-over-time chart
    summary = collect(session_dir, run, env)
    if exporter is not None:
        stop_exporter(exporter)
    if price:
        print_opening(console, session_dir, summary, env)
    console.print(headline_table(summary))
    for note in tables.headline_notes(summary):
        console.print(note, markup=False)
    if summary.get("rss"):
        rss_table = Table(title="resident memory (RSS) per process")
        for h in tables.RSS_HEADERS:
            rss_table.add_column(h, justify="left" if h == "process" else "right")
        for row in tables.rss_rows(summary):
            rss_table.add_row(*row)
        console.print(rss_table)
    for c in summary["caveats"]:
        console.print(f"[yellow]caveat:[/yellow] {c}")
    not_ok = [f"{n} ({p['status']})" for n, p in summary["processes"].items() if p["status"] != "ok"]
    if not_ok:
        console.print(f"[red]processes not ok: {', '.join(not_ok)}[/red]")
    console.print(f"session folder: {session_dir}")
    return session_dir


def _market_record(opts: SessionOptions, dataset: replay_dataset.Dataset | None,
                   urls: dict[str, Any] | None) -> dict[str, Any]:
    """What ``env.json`` says the session's market was (the report's header names it)."""
    if dataset is not None:
        return replay_dataset.market_record(dataset, urls)
    if opts.live:
        return {"kind": "live", "binance": {"real": True}, "hyperliquid": {"real": True}}
    return replay_dataset.emulated_record(opts.market, opts.seed, _emulated(opts))


def _continuity(continuity: OrderContinuity, live: LiveStats, restarter: Restarter) -> dict[str, Any]:
    """Orders fired = consumed + counted lost (caerus.session.continuity), and where the positions ended."""
    strategy = [*live.generations.get("strategy", []), live.snapshots.get("strategy", {})]
    engine = restarter.tracks.get("execution")
    out = continuity.summary(strategy, len(engine.deaths) if engine is not None else 0)
    out["positions"] = {"strategy": live.snapshots.get("strategy", {}).get("position"),
                        "engine": live.snapshots.get("execution", {}).get("position")}
    # Ring continuity as capture saw it: every record of every writer incarnation read, or counted lost (capture
    # re-attaches to a restarted writer's ring; caerus.capture.reader).
    cap = live.snapshots.get("capture", {})
    roles = sorted(k.split(".", 1)[1] for k in cap if k.startswith("records."))
    if roles:
        out["capture"] = {"writer_restarts": int(cap.get("writer_restarts", 0)),
                          "rings": {r: {"records": int(cap.get(f"records.{r}", 0)),
                                        "lost": int(cap.get(f"lost.{r}", 0))} for r in roles}}
    return out


def emulator_yields(setting: str, plan: FleetPlan) -> bool:
    """Whether the venue emulator gives its CPU up after each top-of-book frame: ``on``/``off`` as said, ``auto`` when
    the plan puts it on a hot process's CPU. Measured on the 2-vCPU VM (benchmarks/wire_to_decision --quick
    --rounds 2, alternating, twice each): with the emulator sharing the strategy's CPU and running on after its
    send, the strategy waited for it; yielding took tick_to_decision (busy client) from 58-61 to 8.5-9.4 us p50 and
    wire_to_decision from 90-103 to 30-34 us p50."""
    if setting not in EMULATOR_YIELD:
        raise ValueError(f"emulator yield {setting!r} is not one of {', '.join(EMULATOR_YIELD)}")
    return plan.emulator_shares_hot_cpu if setting == "auto" else setting == "on"


def session_plan(opts: SessionOptions) -> FleetPlan:
    """The fleet plan for ``opts``: CPUs and wait policies, and each venue split across as many feed processes as
    its estimated book rate needs (caerus.plan.feed_shares; :func:`book_rates`)."""
    return plan_fleet(wait_policy=opts.wait_policy, instruments=len(parse_symbols(opts.symbols)),
                      emulator=opts.emulator_cpu, execution=opts.execution_cpu,
                      book_rate_hz=book_rates(opts),
                      max_feed_books_per_s=opts.max_feed_books_per_s or MAX_FEED_BOOKS_PER_S)


def book_rates(opts: SessionOptions) -> dict[str, float]:
    """Estimated books/s per instrument per venue: the emulated market's Binance rate (``--symbol-rate`` or the
    market's ``binance_rate_hz``) and block interval; the plan's documented estimates for live venues."""
    rates = dict(BOOK_RATE_HZ)
    if opts.live:
        return rates
    if opts.symbol_rate_hz is not None:
        rates["binance"] = float(opts.symbol_rate_hz)
    try:
        from caerus.sim.core.market_config import load_market
    except ImportError:  # emulator not importable here: the plan's estimates
        return rates
    if replay_dataset.is_replay(opts.market):  # a replay: the capture's own rate, the follower market's blocks
        dataset = _dataset(opts.market)
        if dataset is not None and dataset.head_rate_hz > 0:
            rates["binance"] = dataset.head_rate_hz / len(dataset.names)
        market = load_market(replay_dataset.FOLLOWER_MARKET)
    else:
        market = load_market(opts.market)
    if opts.symbol_rate_hz is None and not replay_dataset.is_replay(opts.market):
        rates["binance"] = float(market.binance_rate_hz)
    rates["hyperliquid"] = 1000.0 / float(market.hl_block_ms)
    return rates


def _emulated(opts: SessionOptions) -> tuple[str, ...]:
    """The emulator's market for the session: each requested instrument both emulated venues list (by its coin).

    A symbol the emulator does not list is left out here on purpose: the venues' listings then lack it and the
    instrument check names it before the fleet starts, as it would against the real venues."""
    from caerus.sim.core import catalogue

    both = {i.name for i in catalogue.LISTED if i.binance_symbol is not None and i.hl_asset is not None}
    return tuple(r.hl_coin for r in parse_symbols(opts.symbols) if r.hl_coin in both) or ("BTC",)


def _instruments(session_dir: Path, opts: SessionOptions, urls: dict[str, Any] | None) -> Path:
    """Fetch both venues' listings (the emulator's, or the real venues' when live) and write instruments.json."""
    from caerus.venues.binance.data import DEFAULT_BASE_URL as BINANCE_WS
    from caerus.venues.hyperliquid.data import DEFAULT_BASE_URL as HL_WS

    bn = str(urls["binance_url"]) if urls else BINANCE_WS
    hl = str(urls["hyperliquid_url"]) if urls else HL_WS
    try:
        return resolve_into(session_dir, parse_symbols(opts.symbols), bn, hl,
                            ca_file=str(urls["ca_file"]) if urls else None)
    except InstrumentError as exc:
        raise RuntimeError(f"instruments: {exc}") from None


#: many instruments, no strategy config given: size each entry to this notional (USD) instead of BTC's order_qty
MULTI_ORDER_NOTIONAL = 100.0


def _default_strategy_config(session_dir: Path, opts: SessionOptions) -> Path | None:
    """A strategy config for a many-instrument session without one: entries sized by notional per instrument."""
    if len(parse_symbols(opts.symbols)) == 1:
        return None
    path = session_dir / "strategy.toml"
    path.write_text(f"# written by caerus session: {len(parse_symbols(opts.symbols))} instruments, entries sized "
                    f"by notional\norder_notional = {MULTI_ORDER_NOTIONAL}\n")
    return path


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _write_config(session_dir: Path, opts: SessionOptions, plan: FleetPlan, seg: launch.Segments,
                  specs: list[launch.ProcessSpec]) -> None:
    doc = {
        "session": _toml_clean(opts.resolved()),
        "plan": _toml_clean(plan.to_dict()),
        "segments": seg.to_dict(),
        "processes": {s.name: {"argv": list(s.argv), "cpus": list(s.cpus), "wait_policy": s.wait_policy}
                      for s in specs},
    }
    (session_dir / "config.toml").write_text(tomli_w.dumps(doc))


def _watch(opts: SessionOptions, console: Console, live: LiveStats, procs: list[launch.Running],
           start_mono: float, write_processes: Any, fleet_start_mono: float, rss: RssSampler | None = None,
           restarter: Restarter | None = None, chaos: ChaosMonkey | None = None,
           recovery: RecoveryClock | None = None, growth: StoreGrowth | None = None) -> None:
    mode = opts.progress
    if mode == "auto":
        mode = "rich" if console.is_terminal else "lines"
    end = fleet_start_mono + opts.duration_s
    seen_dead: set[int] = set()  # pids already reported

    def say(msg: str, style: str = "bold red") -> None:
        if mode == "rich":
            console.log(f"[{style}]{msg}[/{style}]")
        elif mode == "lines":
            print(msg, file=sys.stderr, flush=True)

    def tick() -> float:
        live.poll()
        if rss is not None:
            rss.sample()
        for r in procs:
            r.poll(start_mono)
            if r.status == "died" and r.pid not in seen_dead:
                seen_dead.add(r.pid)
                write_processes()
                tail = " | ".join(launch.tail(r.log_path, 3))
                say(f"{r.spec.name} (pid {r.pid}) DIED with exit {r.proc.returncode}: {tail}")
        if restarter is not None and restarter.tick(procs):
            write_processes()  # the RSS sampler keeps following the first pid of a name (metrics/rss.py)
        if restarter is not None and recovery is not None:
            recovery.tick(restarter.tracks, live.snapshots, live.writer_pids, time.monotonic())
        if chaos is not None:
            chaos.tick(procs, time.monotonic())
        if growth is not None:
            growth.sample()
        return time.monotonic() - fleet_start_mono

    if mode == "rich":
        with Live(console=console, refresh_per_second=4, transient=False) as view:
            while time.monotonic() < end:
                elapsed = tick()
                view.update(render(live, procs, elapsed, opts.duration_s, start_mono))
                time.sleep(WATCH_PERIOD_S)
        return
    last_line = 0.0
    while time.monotonic() < end:
        elapsed = tick()
        if mode == "lines" and elapsed - last_line >= 5.0:
            print(one_line(live, procs, elapsed, opts.duration_s), flush=True)
            last_line = elapsed
        time.sleep(WATCH_PERIOD_S)
