"""Invoke entry point: wires the task collections; the logic lives in infra/, caerus/ and benchmarks/.

    invoke bench                   local session against the venue emulator, then its report
    invoke bench --host NAME       the same on a provisioned host (see infra/)
    invoke bench --market replay:DATASET   the fleet on a real capture (Binance real, Hyperliquid modelled)
    invoke record                  record the venues for hours (feeds + capture, no orders)
    invoke test                    the test suite (installs the servers it needs first); --fast: the fast tier
    invoke provision|configure|deploy|collect|teardown|status
    invoke report [SESSION ...]    reports for session folders
    invoke regress [--base REV]    latency regression check
    invoke bench --monitor         a local session scraped by a real Prometheus (invoke monitor reopens its data)

Imports are inside the task bodies so `invoke --list` stays fast and one missing optional piece cannot break
every task.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

from invoke import Collection, Context, task

ROOT = Path(__file__).resolve().parent
#: the folder `invoke test` shares among its passes and workers for the deploy tests' wheelhouse (one download)
TEST_WHEELHOUSE_ENV = "CAERUS_TEST_WHEELHOUSE"


@task(
    help={
        "duration": "session length: 30, 90s, 15m, 4h or 1h30m (the same grammar locally and with --host)",
        "out": "sessions folder (default: ./sessions)",
        "seed": "market model seed",
        "scenario": "emulator fault scenario name, or replay:PATH",
        "wait_policy": "force a wait policy on every hot process: spin | hybrid | sleep",
        "no_capture": "do not run the capture process",
        "transport": "execution transport: paper (default) | null | emulator (signed orders over TLS: t_wire_out)",
        "host": "run on a provisioned host instead of locally",
        "emulator": "with --host: run the venue emulator on the host instead of live venues",
        "no_report": "skip rendering the report at the end",
        "chaos": "seconds: SIGKILL a random hot process this often (local only); the supervisor restarts it",
        "strategy_config": "strategy TOML (local)",
        "execution_config": "execution TOML (local)",
        "market": "local: emulated market, a preset (default, fixed-lag) or a market TOML file (default: default); "
                  "or replay:DATASET, a real capture (an imported store or an hftbacktest file) played through the "
                  "fleet, Binance real and Hyperliquid modelled",
        "jumps_per_min": "local: emulated information jumps per minute (default: the market's own)",
        "live": "local: the feeds read the live venues (no emulator); orders still go to the paper transport",
        "feed_client": "local: force the feeds' WebSocket client, asyncio | busy (default: the fleet plan's choice)",
        "symbols": "instruments to trade, comma-separated (default BTC), e.g. BTC,ETH,SOL (with --host too)",
        "symbol_rate": "local: emulated Binance bookTicker rate per instrument, Hz (default: the emulator's)",
        "feed_connections": "local: connections per feed, the instruments split among them (default: the fewest)",
        "max_books_per_feed_process": "local: books/s one feed process carries; a venue above it is split across "
                                      "feed processes (default: caerus.plan.MAX_FEED_BOOKS_PER_S)",
        "host_key": "with --host, first contact: verified (default for an EC2 instance) | tofu",
        "monitor": "local: a real Prometheus scrapes the session's exporter; its data stays in the session folder",
        "prometheus_lifecycle": "with --monitor: turn on Prometheus's lifecycle API (POST /-/quit, /-/reload; no "
                                "authentication: any local user can stop it). Off by default",
    }
)
def bench(
    c: Context,
    duration: str = "30",
    out: str = "sessions",
    seed: int = 1,
    scenario: str = "",
    wait_policy: str = "",
    no_capture: bool = False,
    transport: str = "paper",
    host: str = "",
    emulator: bool = False,
    no_report: bool = False,
    chaos: float = 0.0,
    strategy_config: str = "",
    execution_config: str = "",
    market: str = "default",
    jumps_per_min: float = 0.0,
    live: bool = False,
    feed_client: str = "",
    symbols: str = "BTC",
    symbol_rate: float = 0.0,
    feed_connections: int = 0,
    max_books_per_feed_process: float = 0.0,
    host_key: str = "",
    monitor: bool = False,
    prometheus_lifecycle: bool = False,
) -> None:
    """Run a timed session of the whole fleet and report it (locally against the emulator by default).

    Locally this is exactly `caerus session` (one code path: same options, duration grammar and exit codes: 1 when
    the session failed, 2 for bad input); with --host it runs that on the host and collects the result."""
    if prometheus_lifecycle and not monitor:
        print("bench: --prometheus-lifecycle needs --monitor (it is an option of the Prometheus --monitor starts)",
              file=sys.stderr)
        sys.exit(2)
    if host:
        from infra.hosts import StateError
        from infra.remote import HostKeyMismatch, RemoteError
        from infra.remote_bench import BenchError, run_remote_bench

        try:
            run_remote_bench(c, host=host, duration=duration, emulator=emulator, out=Path(out), host_key=host_key,
                             symbols=symbols)
        except (BenchError, StateError, HostKeyMismatch, RemoteError, ValueError) as exc:
            print(f"bench --host {host}: {exc}", file=sys.stderr)
            sys.exit(2 if isinstance(exc, ValueError) else 1)
        return
    import argparse

    from caerus.session.app import add_arguments
    from caerus.session.app import run as run_session

    argv = ["--duration", duration, "--out", out, "--seed", str(seed), "--transport", transport,
            "--market", market, "--chaos", str(chaos), "--reports", str(ROOT / "reports"), "--symbols", symbols]
    if jumps_per_min:
        argv += ["--jumps-per-min", str(jumps_per_min)]
    if symbol_rate:
        argv += ["--symbol-rate", str(symbol_rate)]
    if feed_connections:
        argv += ["--feed-connections", str(feed_connections)]
    if max_books_per_feed_process:
        argv += ["--max-books-per-feed-process", str(max_books_per_feed_process)]
    for flag, value in (("--scenario", scenario), ("--wait-policy", wait_policy),
                        ("--strategy-config", strategy_config), ("--execution-config", execution_config),
                        ("--feed-client", feed_client)):
        if value:
            argv += [flag, value]
    argv += [flag for flag, on in (("--no-capture", no_capture), ("--no-report", no_report), ("--live", live)) if on]
    parser = argparse.ArgumentParser(prog="invoke bench", exit_on_error=False)
    add_arguments(parser)
    try:
        args = parser.parse_args(argv)
    except (argparse.ArgumentError, SystemExit) as exc:
        print(f"bench: {exc}", file=sys.stderr)
        sys.exit(2)
    if not monitor:
        rc = run_session(args)
    else:
        from caerus.monitoring.local_monitor import monitored
        from caerus.monitoring.prometheus import PrometheusError

        try:
            with monitored(Path(out), lifecycle=prometheus_lifecycle) as exporter_port:
                args.exporter_port = exporter_port
                rc = run_session(args)
        except PrometheusError as exc:
            print(f"bench --monitor: {exc}", file=sys.stderr)
            sys.exit(1)
    if rc:
        sys.exit(rc)


@task(help={
    "duration": "how long to record: 90s, 15m, 4h or 1h30m (default 1h)",
    "out": "sessions folder (default ./recordings)",
    "symbols": "instruments, comma-separated (default BTC)",
    "emulator": "record the venue emulator instead of the live venues (a dry run)",
    "market": "record the venue emulator playing this market: a preset, a market TOML or replay:DATASET",
    "report": "render the session report at the end",
})
def record(c: Context, duration: str = "1h", out: str = "recordings", symbols: str = "BTC", emulator: bool = False,
           market: str = "", report: bool = False) -> None:
    """Record the venues through the capture path for hours (the feeds + capture into chDB, no strategy, no orders):
    `caerus record` (docs/sessions.md, Recording)."""
    import argparse

    from caerus.session.record_app import add_arguments
    from caerus.session.record_app import run as run_record

    argv = ["--duration", duration, "--out", out, "--symbols", symbols]
    argv += [flag for flag, on in (("--emulator", emulator), ("--report", report)) if on]
    if market:
        argv += ["--market", market]
    parser = argparse.ArgumentParser(prog="invoke record", exit_on_error=False)
    add_arguments(parser)
    try:
        args = parser.parse_args(argv)
    except (argparse.ArgumentError, SystemExit) as exc:
        print(f"record: {exc}", file=sys.stderr)
        sys.exit(2)
    rc = run_record(args)
    if rc:
        sys.exit(rc)


@task(help={"session": "a session folder run with bench --monitor: serve its kept metrics",
            "host": "a provisioned host: SSH tunnel to its exporter, a local Prometheus scraping through it",
            "port": "Prometheus port on 127.0.0.1 (default 9090)", "out": "sessions folder (default ./sessions)",
            "state_dir": "local state folder (default ./.state)",
            "prometheus_lifecycle": "turn on Prometheus's lifecycle API (POST /-/quit, /-/reload; no authentication: "
                                    "any local user can stop it). Off by default"})
def monitor(c: Context, session: str = "", host: str = "", port: int = 9090, out: str = "sessions",
            state_dir: str = "", prometheus_lifecycle: bool = False) -> None:
    """A real Prometheus on loopback: over a session's kept metrics, or scraping a host through an SSH tunnel
    (docs/monitoring.md)."""
    from caerus.monitoring.local_monitor import serve_saved
    from caerus.monitoring.prometheus import PrometheusError

    if bool(session) == bool(host):
        print("monitor: give --session DIR (a session run with invoke bench --monitor) or --host NAME",
              file=sys.stderr)
        sys.exit(2)
    try:
        if session:
            serve_saved(Path(session), port, lifecycle=prometheus_lifecycle)
            return
        import time

        from infra.hosts import HostStore, StateError
        from infra.monitor import monitor_host
        from infra.remote import HostKeyMismatch, RemoteError

        def until_interrupted(prom_port: int, tunnel_port: int) -> None:
            print("Ctrl-C stops the tunnel and Prometheus")
            try:
                while True:
                    time.sleep(1.0)
            except KeyboardInterrupt:
                pass

        store = HostStore(state_dir or None)
        try:
            monitor_host(store.load(host), store.known_hosts, Path(out) / f"{host}-monitor", port, until_interrupted,
                         lifecycle=prometheus_lifecycle)
        except (StateError, HostKeyMismatch, RemoteError, OSError) as exc:
            print(f"monitor --host {host}: {exc}", file=sys.stderr)
            sys.exit(1)
    except PrometheusError as exc:
        print(f"monitor: {exc}", file=sys.stderr)
        sys.exit(1)


@task(iterable=["session"], help={
    "session": "a session folder, or several comma-separated (repeatable too); default: the newest",
    "sessions_dir": "where the newest session is looked for (default ./sessions)",
    "out": "reports folder",
})
def report(c: Context, session: list[str] | None = None, out: str = "reports", sessions_dir: str = "sessions") -> None:
    """Render report.md/report.html per session, a comparison for several, and reports/index.html."""
    from caerus.report.render import SessionNotFound, newest_session, render_sessions

    given = [p.strip() for s in (session or []) for p in s.split(",") if p.strip()]
    try:
        paths = [Path(s) for s in given] if given else [newest_session(Path(sessions_dir))]
        render_sessions(paths, out_dir=Path(out))
    except SessionNotFound as exc:
        print(f"report: {exc}", file=sys.stderr)
        sys.exit(2)


@task(
    iterable=["only", "metric_threshold"],
    help={
        "base": "git revision to compare against (built in a separate worktree)",
        "quick": "short repetitions (a few minutes)",
        "report_only": "never exit non-zero on a regression (CI on shared machines)",
        "repetitions": "repetitions per side (>= 9)",
        "out": "output folder for regress.json / regress.md",
        "only": "suite member to run (repeatable)",
        "threshold": "default per-metric threshold, as a fraction (0.10 = 10%)",
        "metric_threshold": "PATTERN=FRACTION, fnmatch on metric id, e.g. 'session/*.p99=0.25' (repeatable)",
        "alpha": "Mann-Whitney significance level",
        "update_baseline": "store head as this machine's baseline",
        "baseline_gate": "with --base: baseline regressions fail too",
        "no_baseline": "skip the stored-baseline signal",
        "suite": "suite file (default benchmarks/regress/suite.toml)",
        "machine_key": "baseline file stem override",
        "no_confirm": "fail on the first pass (skip re-measuring flagged gating metrics)",
        "confirm_repetitions": "repetitions per side in the confirm pass (default: twice --repetitions)",
        "aa": "A/A mode: N checks of --base (default HEAD) against itself; prints the false-alarm rate",
    },
)
def regress(
    c: Context,
    base: str = "",
    quick: bool = False,
    report_only: bool = False,
    repetitions: int = 9,
    out: str = "regress-out",
    only: list[str] | None = None,
    threshold: float = 0.10,
    metric_threshold: list[str] | None = None,
    alpha: float = 0.01,
    update_baseline: bool = False,
    baseline_gate: bool = False,
    no_baseline: bool = False,
    suite: str = "",
    machine_key: str = "",
    no_confirm: bool = False,
    confirm_repetitions: int = 0,
    aa: int = 0,
) -> None:
    """Decide whether HEAD is slower than BASE (or the stored baseline): Mann-Whitney U per metric, Holm over the
    gating metrics, a confirm pass before failing. `--base HEAD` is an A/A run; `--aa N` repeats it N times."""
    from benchmarks.regress.runner import RegressOptions, UsageError, parse_thresholds, run_aa, run_regress

    try:
        thresholds = parse_thresholds(metric_threshold or [])
    except UsageError as exc:
        print(f"regress: {exc}", file=sys.stderr)
        sys.exit(2)
    opts = RegressOptions(
        base=base or None,
        quick=quick,
        report_only=report_only,
        repetitions=repetitions,
        out=Path(out),
        repo=ROOT,
        only=tuple(only or ()),
        threshold=threshold,
        thresholds=thresholds,
        alpha=alpha,
        update_baseline=update_baseline,
        baseline_gate=baseline_gate,
        no_baseline=no_baseline,
        suite=Path(suite) if suite else None,
        machine_key=machine_key or None,
        confirm=not no_confirm,
        confirm_repetitions=confirm_repetitions,
    )
    code = run_aa(opts, aa) if aa else run_regress(opts)
    if code:
        sys.exit(code)


@task(help={
    "k": "pytest -k expression",
    "unit": "unit tests only (no servers)",
    "fast": "the fast tier: everything not marked slow (unit and in-process tests), for the edit-test loop",
    "no_deps": "skip system deps",
    "workers": "parallel test processes for the tests that can share the machine (default: one per CPU this "
               "process may use; 1: everything in one serial run)",
    "coverage": "measure line coverage of caerus/ (subprocesses included) and print the report",
})
def test(c: Context, k: str = "", unit: bool = False, fast: bool = False, no_deps: bool = False, workers: int = 0,
         coverage: bool = False) -> None:
    """Install the system packages the integration tests need (when missing), then run pytest: the tests that can
    share the machine on every CPU (pytest-xdist), then those marked ``serial`` alone (docs/testing.md)."""
    if not (unit or fast or no_deps):
        c.run(f"bash {shlex.quote(str(ROOT / 'scripts' / 'install-test-deps.sh'))}", pty=False)
    if coverage:
        with c.cd(str(ROOT)):
            c.run(shlex.join([sys.executable, "-m", "coverage", "erase"]), pty=False)
    codes = []
    # one download of the fleet lock's wheels for every deploy test of both passes (tests/integration/infra)
    wheelhouse = tempfile.mkdtemp(prefix="caerus-test-wheelhouse-")
    try:
        for argv in suite_commands(k=k, unit=unit, fast=fast, workers=workers or len(os.sched_getaffinity(0)),
                                  coverage=coverage):
            # The shell runs this line: every value is shell-quoted (a Python repr is not shell quoting: `$(...)`
            # inside single quotes of a repr that switched to double quotes would run).
            with c.cd(str(ROOT)):
                # Bytecode caches on (the environment may say otherwise): the suite starts hundreds of Python
                # processes that would each compile caerus/ again, and pytest keeps its rewritten test modules there.
                result = c.run(shlex.join(argv), pty=False, warn=True,
                               env={"PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "",
                                    TEST_WHEELHOUSE_ENV: wheelhouse})
            codes.append(result.exited)
    finally:
        shutil.rmtree(wheelhouse, ignore_errors=True)
    if coverage:
        with c.cd(str(ROOT)):
            c.run(shlex.join([sys.executable, "-m", "coverage", "combine", "-q"]), pty=False, warn=True)
            c.run(shlex.join([sys.executable, "-m", "coverage", "report"]), pty=False, warn=True)
    # 5 (pytest: no test selected) is fine for one pass (-k may match only the other one), not for all of them
    failed = [code for code in codes if code not in (0, 5)] or ([5] if set(codes) == {5} else [])
    if failed:
        sys.exit(failed[0])


def suite_commands(*, k: str = "", unit: bool = False, fast: bool = False, workers: int = 2,
                  coverage: bool = False) -> list[list[str]]:
    """The pytest runs of `invoke test`: with more than one worker, the tests not marked ``serial`` on
    ``workers`` xdist processes, then the ``serial`` ones in one process on an otherwise quiet machine."""
    runner = [sys.executable, "-m", *(["coverage", "run", "-m"] if coverage else []), "pytest"]
    paths = ["tests/unit" if unit else "tests"]
    selected = "not slow" if fast else ""
    tail = ["-k", k] if k else []
    if workers <= 1:
        return [[*runner, *paths, *(["-m", selected] if selected else []), *tail]]

    def marks(serial: str) -> list[str]:
        return ["-m", f"{serial} and ({selected})" if selected else serial]

    return [[*runner, *paths, *marks("not serial"), "-n", str(workers), "--dist", "loadgroup", *tail],
            [*runner, *paths, *marks("serial"), "-p", "no:xdist", *tail]]


@task
def lint(c: Context) -> None:
    """ruff over the whole tree, the import contract (.importlinter) and the type check of caerus/ (mypy)."""
    bindir = Path(sys.executable).parent
    failed = []
    with c.cd(str(ROOT)):
        for name, cmd in (("ruff", f"{sys.executable} -m ruff check ."),
                          ("import contract", f"{bindir / 'lint-imports'}"),
                          ("mypy", f"{sys.executable} -m mypy")):
            if c.run(cmd, pty=False, warn=True, env={"PYTHONPATH": str(ROOT)}).failed:
                failed.append(name)
    if failed:
        print(f"lint: failed: {', '.join(failed)}", file=sys.stderr)
        sys.exit(1)


@task(help={"upgrade": "move every pin to the newest release the constraints allow (default: keep the pins)"})
def lock(c: Context, upgrade: bool = False) -> None:
    """Compile locks/dev.txt (everything a checkout runs) and locks/fleet.txt (what a host runs, the same versions)
    from pyproject.toml with uv, hashes for every file. Run after changing a dependency."""
    from infra.locks import LockCompileError, compile_locks

    try:
        compile_locks(upgrade=upgrade)
    except LockCompileError as exc:
        print(f"lock: {exc}", file=sys.stderr)
        sys.exit(1)
    print("lock: locks/dev.txt, locks/fleet.txt and locks/peers.txt compiled; commit them")


@task(iterable=["param"], help={
    "param": "NAME=V1,V2,... a strategy setting and its values (repeatable): every combination is backtested",
    "session": "source: a session folder (its capture store)", "offline": "source: the market model, SECONDS",
    "train": "A..B: the range parameters are chosen on", "test": "A..B: the out-of-sample range",
    "latency": "constant order latency (e.g. 1ms)", "latency_from": "a session whose measured latency to draw",
    "workers": "worker processes (default: CPUs - 1)", "out": "sweep folder (resumable)",
    "market": "with --offline: a market preset (default, fixed-lag) or a market TOML (default: default)",
    "market_seed": "with --offline: the market model's seed",
})
def sweep(c: Context, param: list[str] | None = None, session: str = "", offline: float = 0.0, train: str = "",
          test: str = "", latency: str = "0", latency_from: str = "", workers: int = 0, seed: int = 1,
          out: str = "sweeps/latest", market: str = "default", market_seed: int = 1) -> None:
    """Backtest a parameter grid in parallel (caerus.research.backtest.sweep): train/test heatmaps, resumable."""
    from caerus.research.backtest.sweep import main as sweep_main

    argv = [a for p in (param or []) for a in ("--param", p)] + ["--train", train, "--test", test, "--seed", str(seed),
                                                                 "--out", out]
    argv += (["--session", session] if session else
             ["--offline", str(offline), "--market", market, "--market-seed", str(market_seed)])
    argv += ["--latency-from", latency_from] if latency_from else ["--latency", latency]
    argv += ["--workers", str(workers)] if workers else []
    rc = sweep_main(argv)
    if rc:
        sys.exit(rc)


@task
def train(c: Context, out: str = "models/model.json", market: str = "default", seeds: str = "1,2,3",
          minutes: float = 10.0, session: str = "", kind: str = "auto", seed: int = 1) -> None:
    """Train the lead-lag model (caerus train): walk-forward folds, model file with its metadata and hash."""
    from caerus import cli

    argv = ["train", "-o", out, "--market", market, "--seeds", seeds, "--minutes", str(minutes), "--kind", kind,
            "--seed", str(seed)] + (["--session", session] if session else [])
    rc = cli.main(argv)
    if rc:
        sys.exit(rc)


def _infra_collection() -> Collection:
    from infra import invoke_tasks

    return Collection.from_module(invoke_tasks)


ns = Collection(bench, record, monitor, report, regress, test, lint, lock, sweep, train)
try:
    # provision / configure / deploy / collect / teardown / status
    for _t in _infra_collection().tasks.values():
        ns.add_task(_t)
except ImportError as exc:  # pragma: no cover - only when infra/ is broken
    print(f"warning: infra tasks unavailable: {exc}", file=sys.stderr)

os.environ.setdefault("PYTHONPATH", str(ROOT))
