"""Starting and stopping the session's processes: argv per process, one log file each, pinning, stop by PID.

Every process is a real subprocess (``python -m caerus <subcommand> ...``) in its own process group, with
stdout+stderr in ``<session>/logs/<process>.log``, and an allow-listed environment (caerus.session.environment:
never the runner's secrets). Stopping is SIGTERM, then SIGKILL after a grace period, by the
PID we started -- never by name. A process that exits before we asked it to is recorded as ``died``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from caerus.plan import FEED_WARM_EVERY_US, FEEDS, FleetPlan, feed_venue, format_cpu_list, warm_path_applies
from caerus.session.environment import child_env


@dataclass(frozen=True)
class Segments:
    """The session's shared-memory segment names (contract: ``S.book.<venue>``, ``S.events.<venue>`` ...)."""

    sid: str

    def book(self, venue: str) -> str:
        return f"{self.sid}.book.{venue}"

    def events(self, venue: str) -> str:
        return f"{self.sid}.events.{venue}"

    @property
    def orders(self) -> str:
        return f"{self.sid}.orders"

    @property
    def exec(self) -> str:
        return f"{self.sid}.exec"

    def stats(self, process: str) -> str:
        return f"{self.sid}.stats.{process}"

    def to_dict(self) -> dict[str, str]:
        return {
            "book.binance": self.book("binance"), "book.hyperliquid": self.book("hyperliquid"),
            "events.binance": self.events("binance"), "events.hyperliquid": self.events("hyperliquid"),
            "orders": self.orders, "exec": self.exec,
        }


@dataclass(frozen=True)
class ProcessSpec:
    name: str
    argv: tuple[str, ...]
    cpus: tuple[int, ...]
    wait_policy: str
    # added to the allow-listed environment (caerus.session.environment); never a secret (use a 0600 file)
    env: tuple[tuple[str, str], ...] = ()


def _common(name: str, seg: Segments, session_dir: Path, plan: FleetPlan) -> list[str]:
    p = plan.placement(name)
    return ["--stats-segment", seg.stats(name), "--metrics-dir", str(session_dir), "--wait-policy", p.wait_policy,
            "--cpus", format_cpu_list(p.cpus)]


@dataclass(frozen=True)
class FeedRing:
    """One feed process of the plan and its rings: ``key`` names them (``S.book.<key>``, ``S.events.<key>``)."""

    process: str  # feed-binance, or feed-binance-2 in a split
    venue: str
    key: str  # the venue, or <venue>-<share> in a split
    share: tuple[int, int] | None  # (first id, end id) in a split; None: every instrument


def feed_rings(plan: FleetPlan) -> list[FeedRing]:
    """Every feed process of the plan, venue by venue (Binance first), shares in order."""
    out = []
    for venue in (v for v in map(feed_venue, FEEDS) if v is not None):
        shares = plan.feed_split.get(venue)
        if not shares:
            out.append(FeedRing(plan.feeds(venue)[0], venue, venue, None))
            continue
        for i, (name, share) in enumerate(zip(plan.feeds(venue), shares, strict=True), 1):
            out.append(FeedRing(name, venue, f"{venue}-{i}", share))
    return out


def caerus_argv(sub: str, *args: str) -> tuple[str, ...]:
    return (sys.executable, "-m", "caerus", sub, *args)


def venue_sim_spec(session_dir: Path, plan: FleetPlan, seed: int, scenario: str | None,
                   jumps_per_min: float | None = None, env: tuple[tuple[str, str], ...] = (),
                   symbols: tuple[str, ...] = ("BTC",), rate_hz: float | None = None,
                   market: str | None = None, yield_after_top: bool = False,
                   captures: tuple[Path, ...] = ()) -> ProcessSpec:
    """venue-sim's process; ``captures``: real capture files it replays (``--replay`` each; ``market`` then models the
    Hyperliquid side)."""
    args = ["--cert-dir", str(session_dir / "certs"), "--host", "127.0.0.1", "--binance-port", "0",
            "--hyperliquid-port", "0", "--seed", str(seed), "--ready-file", str(session_dir / "venue-sim.ready.json"),
            "--metrics-dir", str(session_dir)]
    if market is not None:
        args += ["--market", str(Path(market).resolve()) if Path(market).is_file() else market]
    if jumps_per_min is not None:
        args += ["--jumps-per-min", f"{jumps_per_min:g}"]
    if tuple(symbols) != ("BTC",):
        args += ["--symbols", ",".join(symbols)]
    if rate_hz is not None:
        args += ["--binance-rate", f"{rate_hz:g}"]
    if yield_after_top:
        args.append("--yield-after-top")
    for capture in captures:
        args += ["--replay", str(Path(capture).resolve())]
    if scenario:
        if scenario.startswith("replay:"):
            args += ["--replay", scenario.split(":", 1)[1]]
        else:
            args += ["--scenario", scenario]
    p = plan.placement("venue-sim")
    return ProcessSpec("venue-sim", caerus_argv("venue-sim", *args), p.cpus, p.wait_policy, env)


def kill_file_path(session_dir: Path) -> Path:
    """The session's kill file: it does not exist at start; touching it halts trading (strategy and execution)."""
    return session_dir.resolve() / "KILL"


def fleet_specs(
    session_dir: Path, plan: FleetPlan, seg: Segments, urls: dict[str, Any] | None, *, capture: bool, transport: str,
    strategy_config: Path | None = None, execution_config: Path | None = None, kill_file: Path | None = None,
    feed_client: str | None = None, transport_args: list[str] | None = None, instruments: Path | None = None,
    feed_connections: int | None = None, feed_warm_every_us: float = FEED_WARM_EVERY_US, trading: bool = True,
) -> list[ProcessSpec]:
    """The fleet in start order: consumers first (they retry-attach either way; this just loses less data).

    ``urls`` is the emulator's ready document; None means live venues (the feeds' default URLs and system CAs).
    ``kill_file`` (default :func:`kill_file_path`) is given to the strategy and execution: touching it halts
    trading in both. ``transport_args`` replace ``--transport TRANSPORT`` (the emulator's order desk).
    ``instruments`` is the session's instruments.json (every process trades what it lists); None: BTC alone.
    ``feed_connections`` sets each feed's pool (``--connections``); None: the feed's own choice.
    ``feed_warm_every_us`` (0: off) is the warm path (``caerus feed --warm-every-us``) of every feed that can have
    it: the busy client on a busy-polling loop (the others have no shadow to read; their argv shows it).
    ``trading`` False (record mode): capture and the feeds only, no strategy and no execution.
    """
    kill = str(kill_file if kill_file is not None else kill_file_path(session_dir))
    specs: list[ProcessSpec] = []

    def venue(name: str) -> list[str]:
        if urls is None:
            return []
        return ["--url", str(urls[f"{name}_url"]), "--ca-file", str(urls["ca_file"])]

    inst = ["--instruments", str(Path(instruments).resolve())] if instruments is not None else []
    pool = ["--connections", str(feed_connections)] if feed_connections else []

    def add(name: str, sub: str, args: list[str]) -> None:
        p = plan.placement(name)
        specs.append(ProcessSpec(name, caerus_argv(sub, *args, *_common(name, seg, session_dir, plan)), p.cpus,
                                 p.wait_policy))

    rings = feed_rings(plan)
    if instruments is None and any(r.share is not None for r in rings):
        raise ValueError("the plan splits a venue across feed processes: that needs the instruments file")
    books = [a for r in rings for a in ("--segment", seg.book(r.key))]
    if capture:
        add("capture", "capture", [
            *books, *(a for r in rings for a in ("--segment", seg.events(r.key))),
            *(["--segment", seg.exec] if trading else []), "--store", str(session_dir / "capture"),
        ])
    if trading:
        add("execution", "execution", [
            "--segment", seg.orders, *(transport_args or ["--transport", transport]),
            *(a for r in rings for a in ("--book-segment", seg.book(r.key))), "--exec-segment", seg.exec,
            "--kill-file", kill, *inst,
            *(["--config", str(Path(execution_config).resolve())] if execution_config else []),
        ])
        add("strategy", "strategy", [
            *books, "--order-segment", seg.orders, "--exec-segment", seg.exec, "--kill-file", kill, *inst,
            *(["--config", str(Path(strategy_config).resolve())] if strategy_config else []),
        ])
    default_symbol = {"binance": "BTCUSDT", "hyperliquid": "BTC"}
    for r in rings:
        share: list[str] = []
        conns = pool
        if r.share is not None:
            share = ["--share", f"{r.share[0]}:{r.share[1]}", "--process-name", r.process]
            if feed_connections:  # a share carries fewer instruments than the session: at most one per connection
                conns = ["--connections", str(min(feed_connections, r.share[1] - r.share[0]))]
        client = feed_client or plan.placement(r.process).feed_client
        warm = ["--warm-every-us", str(feed_warm_every_us)] if feed_warm_every_us and warm_path_applies(
            client, plan.placement(r.process).wait_policy) else []
        add(r.process, "feed", [
            "--venue", r.venue, "--segment", seg.book(r.key), "--events-segment", seg.events(r.key),
            *venue(r.venue), *(inst or ["--symbol", default_symbol[r.venue]]), *share, *conns,
            "--client", client, *warm,
        ])
    return specs


@dataclass
class Running:
    """A started process and what became of it."""

    spec: ProcessSpec
    proc: subprocess.Popen
    log_path: Path
    log: IO[bytes]
    started_mono: float
    stop_requested: bool = False
    ended_mono: float | None = None
    status: str = "running"  # running | ok | died | exit_error | killed_after_grace
    notes: list[str] = field(default_factory=list)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def poll(self, session_start_mono: float) -> int | None:
        """Update the status when the process has exited; returns its exit code (None while running)."""
        code = self.proc.poll()
        if code is not None and self.ended_mono is None:
            self.ended_mono = time.monotonic()
            if not self.stop_requested:
                self.status = "died"
            elif self.status == "running":
                # 0, or death by the SIGTERM we sent (a process without a handler), is a clean stop
                self.status = "ok" if code in (0, -signal.SIGTERM) else "exit_error"
            self.log.close()
        return code

    def record(self, session_start_mono: float, session_dir: Path) -> dict[str, Any]:
        code = self.proc.poll()
        out: dict[str, Any] = {
            "pid": self.pid, "status": self.status, "exit_code": code,
            "argv": list(self.spec.argv), "cpus": list(self.spec.cpus), "wait_policy": self.spec.wait_policy,
            "log": str(self.log_path.relative_to(session_dir)),
        }
        if code is not None and code < 0:
            out["signal"] = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else -code
        if self.status == "died" and self.ended_mono is not None:
            out["died_after_s"] = round(self.ended_mono - session_start_mono, 3)
            out["log_tail"] = tail(self.log_path)
        if self.notes:
            out["notes"] = self.notes
        return out


def tail(path: Path, lines: int = 15) -> list[str]:
    try:
        return path.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return []


def start(spec: ProcessSpec, session_dir: Path) -> Running:
    log_path = session_dir / "logs" / f"{spec.name}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = open(log_path, "ab")  # noqa: SIM115 - closed when the process ends
    log.write(f"# {' '.join(spec.argv)}\n".encode())
    log.flush()
    proc = subprocess.Popen(spec.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env=child_env(spec.name, spec.env), cwd=str(session_dir), start_new_session=True)
    r = Running(spec=spec, proc=proc, log_path=log_path, log=log, started_mono=time.monotonic())
    if spec.cpus:
        try:  # the process pins itself too (--cpus); this covers processes without that flag
            os.sched_setaffinity(proc.pid, set(spec.cpus))
        except OSError as exc:
            r.notes.append(f"could not pin to {spec.cpus}: {exc}")
    return r


def stop(procs: list[Running], grace_s: float, session_start_mono: float) -> None:
    """SIGTERM every still-running process in ``procs``, SIGKILL those alive after ``grace_s``. By PID only."""
    for r in procs:
        r.poll(session_start_mono)
        if r.proc.returncode is None:
            r.stop_requested = True
            try:
                os.kill(r.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + grace_s
    for r in procs:
        left = deadline - time.monotonic()
        try:
            r.proc.wait(max(0.0, left))
        except subprocess.TimeoutExpired:
            try:
                os.kill(r.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            r.proc.wait(10)
            r.status = "killed_after_grace"
            r.notes.append(f"did not exit within {grace_s:g} s of SIGTERM; killed")
        r.poll(session_start_mono)
