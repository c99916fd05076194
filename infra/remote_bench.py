"""`invoke bench --host NAME`: run a timed session on a provisioned host with the pinned fleet, show progress,
then collect the session folder into the local sessions folder (ready for ``invoke report``).

The session runs detached on the host (``setsid nohup``) so a dropped SSH connection does not kill a 4-hour
run; this side polls its exit-code file. The runner itself sits on the housekeeping CPUs (``taskset``); it
places each fleet process per the same plan configure tuned the host for. Live venues by default
(``caerus session --live``), the venue emulator on the host with ``emulator=True``. ``symbols`` is the
instrument list (``--symbols BTC,ETH``): the session on the host reads both venues' listings at its start and
writes its instruments.json, exactly as a local session does; a list the venues do not both list stops it there.
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import paramiko

from caerus.durations import parse_duration
from caerus.instruments import parse_symbols
from caerus.plan import format_cpu_list
from infra.chrony import TrackingParseError, parse_tracking
from infra.collect import collect_from, list_sessions
from infra.deploy import APP_DIR, SESSIONS_DIR
from infra.facts import gather
from infra.fleetplan import host_plan
from infra.hosts import HostStore
from infra.remote import HostKeyMismatch, RemoteHost, open_host, shell_words
from infra.ttl import TtlError, check_fits


class BenchError(RuntimeError):
    """The remote session failed or did not finish."""


def session_command(caerus: str, seconds: float, sessions_dir: str, emulator: bool,
                    supported: str = "", symbols: str = "BTC") -> str:
    """The ``caerus session`` command line. ``supported`` is the host's ``caerus session --help`` text: optional
    flags (line progress, no report on the host) are added only when that build has them; ``symbols`` other than
    BTC alone need a build with ``--symbols`` (BenchError otherwise)."""
    cmd = [caerus, "session", "--duration", f"{seconds:g}", "--out", sessions_dir]
    if symbols != "BTC":
        if supported and "--symbols" not in supported:
            raise BenchError(f"the caerus deployed on the host has no `caerus session --symbols`: it trades BTC "
                             f"alone; deploy a newer build to trade {symbols}")
        cmd += ["--symbols", symbols]
    if not emulator:
        cmd.append("--live")
    if "--progress" in supported:
        cmd += ["--progress", "lines"]  # detached: no terminal, a line every few seconds in session.log
    if "--no-report" in supported:
        cmd.append("--no-report")  # reports are rendered locally from the collected folder
    return " ".join(shlex.quote(c) for c in cmd)


def check_session_cli(host: RemoteHost, caerus: str, emulator: bool, name: str) -> str:
    """The host's ``caerus session --help``; a clear error when the deployed build cannot run what was asked."""
    r = host.run(f"{shlex.quote(caerus)} session --help", check=False)
    if r.exited != 0:
        raise BenchError(f"`caerus session --help` failed on {name} (exit {r.exited}): "
                         f"{(r.stderr or r.stdout).strip()[-500:]}; run `invoke deploy --host {name}`")
    if not emulator and "--live" not in r.stdout:
        raise BenchError(f"the caerus deployed on {name} has no `caerus session --live` (live venues); "
                         f"run with --emulator, or deploy a build whose session runner supports live venues")
    return r.stdout


def _fmt(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600:d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def start_detached(host: RemoteHost, command: str, run_dir: str, cpus: str) -> None:
    q = shlex.quote
    inner = f"taskset -c {q(cpus)} {command} > {q(run_dir)}/session.log 2>&1; echo $? > {q(run_dir)}/rc"
    host.run(f"mkdir -p {q(run_dir)}")
    host.run(f"setsid nohup sh -c {q(inner)} > /dev/null 2>&1 < /dev/null & echo $! > {q(run_dir)}/pid")


def wait_finished(host: RemoteHost, run_dir: str, seconds: float, say: Callable[[str], None],
                  poll_s: float, grace_s: float) -> int:
    """Poll the detached session's exit-code file, printing progress. A dropped SSH connection is retried
    (Fabric reopens it on the next command, host key still pinned) until the deadline: the session itself keeps
    running on the host either way."""
    q = shlex.quote
    start = time.monotonic()
    deadline = start + seconds + grace_s
    while time.monotonic() < deadline:
        try:
            rc = host.run(f"cat {q(run_dir)}/rc 2>/dev/null", check=False).stdout.strip()
            if rc:
                return int(rc)
            last = host.run(f"tail -n 1 {q(run_dir)}/session.log 2>/dev/null", check=False).stdout.strip()
        except paramiko.BadHostKeyException as exc:
            raise HostKeyMismatch(f"SSH host key changed while waiting for the session: {exc}") from exc
        except (paramiko.SSHException, OSError, EOFError) as exc:
            say(f"  connection lost ({type(exc).__name__}: {exc}); retrying in {poll_s:g} s")
            host.close()
            time.sleep(poll_s)
            continue
        elapsed = time.monotonic() - start
        say(f"  bench {_fmt(elapsed)} / {_fmt(seconds)} ({min(100.0, 100 * elapsed / seconds):.0f}%)"
            + (f"  | {last[:100]}" if last else ""))
        time.sleep(poll_s)
    raise BenchError(f"session did not finish within {seconds + grace_s:.0f} s; it may still be running "
                     f"(pid in {run_dir}/pid); `invoke collect` can fetch it later")


def host_snapshot(host: RemoteHost, chronyc: str) -> dict[str, Any]:
    """Tuning state at the end of the run: facts, chrony tracking (None when unparseable)."""
    facts = gather(host)
    r = host.run(f"{shell_words(chronyc, 'chronyc command')} -c tracking", check=False)
    try:
        tracking: dict | None = parse_tracking(r.stdout).to_dict()
    except TrackingParseError:
        tracking = None
    return {"facts": facts.to_dict(), "chrony_tracking": tracking}


def run_remote_bench(c: Any, host: str, duration: str, emulator: bool, out: Path,
                     state_dir: str | None = None, say: Callable[[str], None] = print,
                     poll_s: float | None = None, grace_s: float = 600.0, host_key: str = "",
                     symbols: str = "BTC") -> list[Path]:
    """Run ``caerus session`` on host ``host`` for ``duration`` ("4h", "30m", "90s", "30") trading ``symbols``
    (``BTC,ETH,SOL``) and collect it."""
    seconds = parse_duration(duration)
    symbols = ",".join(r.name if (r.binance_symbol, r.hl_coin) == (f"{r.name}USDT", r.name)
                       else f"{r.name}={r.binance_symbol}/{r.hl_coin}" for r in parse_symbols(symbols))
    if poll_s is None:  # a progress line every ~5% of the run, between 0.5 s and 10 s apart
        poll_s = min(10.0, max(0.5, seconds / 20))
    store = HostStore(state_dir)
    record = store.load(host)
    try:  # before anything runs: a host that powers off mid-session takes the session with it
        check_fits(record, seconds)
    except TtlError as exc:
        raise BenchError(str(exc)) from None
    rh = open_host(record, store.known_hosts, say, host_key=host_key)
    try:
        facts = gather(rh)
        plan = host_plan(store, record.name, facts)
        sessions_dir = record.extra.get("sessions_dir", SESSIONS_DIR)
        caerus = record.extra.get("caerus_bin") or rh.path(f"{APP_DIR}/venv/bin/caerus")
        if not rh.run(f"test -x {shlex.quote(caerus)}", check=False).exited == 0:
            raise BenchError(f"{caerus} is not installed on {host}; run `invoke deploy --host {host}` first")
        data = rh.path(sessions_dir)
        if rh.root:
            rh.run(f"mkdir -p {shlex.quote(data)}")
        elif rh.run(f"test -d {shlex.quote(data)} -a -w {shlex.quote(data)}", check=False).exited != 0:
            raise BenchError(f"{data} on {host} is missing or not writable by the login user "
                             f"{rh.login_user()}; run `invoke deploy --host {host}` (it creates it for that user)")
        before = set(list_sessions(rh, sessions_dir))
        run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        run_dir = rh.path(f"{sessions_dir}/.runs/{run_id}")
        supported = check_session_cli(rh, caerus, emulator, host)
        command = session_command(caerus, seconds, rh.path(sessions_dir), emulator, supported, symbols)
        hk = format_cpu_list(plan.housekeeping)
        say(f"bench on {host}: {'emulator' if emulator else 'live venues'}, {symbols}, {_fmt(seconds)}, "
            f"runner on CPUs {hk}, "
            f"hot CPUs {format_cpu_list(plan.hot)}")
        start_detached(rh, command, run_dir, hk)
        try:
            rc = wait_finished(rh, run_dir, seconds, say, poll_s, grace_s)
        except KeyboardInterrupt:
            say(f"interrupted here; the session keeps running on {host} (pid in {run_dir}/pid): "
                f"`invoke collect --host {host}` once it is done")
            raise
        if rc != 0:
            tail = rh.run(f"tail -n 30 {shlex.quote(run_dir)}/session.log", check=False).stdout
            raise BenchError(f"session on {host} exited {rc}:\n{tail}")
        new = sorted(set(list_sessions(rh, sessions_dir)) - before)
        if not new:
            raise BenchError(f"session on {host} exited 0 but wrote no session folder under {sessions_dir}")
        snapshot = host_snapshot(rh, record.extra.get("chronyc", "chronyc"))
        paths = collect_from(rh, out, new, sessions_dir, say)
    finally:
        rh.close()
    meta = {
        "host": record.name,
        "instance_id": record.instance_id,
        "instance_type": record.instance_type,
        "region": record.region,
        "emulator": emulator,
        "duration_s": seconds,
        "symbols": symbols,
        "plan": plan.to_dict(),
        **snapshot,
    }
    for p in paths:
        (p / "host.json").write_text(json.dumps(meta, indent=2, sort_keys=True, default=str) + "\n")
    say(f"bench done: {', '.join(str(p) for p in paths)}; `invoke report --session {paths[-1]}`")
    return paths
