"""A real local session end to end: venue emulator over TLS, both feeds, strategy, execution (paper), capture.

Runs what `invoke bench` runs (``python -m caerus session``) for a few seconds and checks every output file, that
each ``.hlog`` decodes with an independent HdrHistogram implementation (hdr-histogram-js under node) to the same
counts and percentiles as our decoder, that the report names every metric, and that a process killed mid-session
is reported as died while the session still writes everything else.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from caerus.metrics import hdr
from caerus.metrics.rss import SERIES_FILE, read_series
from caerus.report import tables
from tests.fixtures.common import require_binary

pytestmark = [pytest.mark.integration,
              pytest.mark.serial("whole-fleet sessions: the plan pins the hot processes to CPUs")]

ROOT = Path(__file__).resolve().parents[3]
NODE_MODULES = ROOT / ".cache" / "node" / "node_modules"
JS_DECODER = ROOT / "tests" / "fixtures" / "metrics_hlog_decode.js"
PCTS = ("0", "50", "90", "99", "99.9", "100")
RECORDING = ("feed-binance", "feed-hyperliquid", "strategy", "execution", "venue-sim")
ALL_PROCESSES = (*RECORDING, "capture")


def _session_cmd(out: Path, reports: Path, duration: float, *extra: str) -> list[str]:
    return [sys.executable, "-m", "caerus", "session", "--duration", str(duration), "--out", str(out),
            "--reports", str(reports), "--progress", "lines", "--stop-grace", "15", *extra]


def _fleet_files(tmp_path: Path, name: str, strategy_toml: str) -> tuple[Path, Path, Path, Path, Path]:
    """A three-instrument session's shared-memory folder (made; the caller removes it), sessions and reports
    folders, and strategy (``strategy_toml``) and execution (risk limits for ~100 orders/s) config files."""
    shm = Path("/dev/shm") / f"caerus-test-{name}-{os.getpid()}"
    shm.mkdir(exist_ok=True)
    strategy_cfg = tmp_path / "strategy.toml"
    strategy_cfg.write_text(strategy_toml)
    execution_cfg = tmp_path / "execution.toml"
    execution_cfg.write_text("[risk]\nmax_orders_per_s = 100\nprice_band_bps = 500.0\n")
    return shm, tmp_path / "sessions", tmp_path / "reports", strategy_cfg, execution_cfg


def _env(shm: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "CAERUS_SHM_DIR": str(shm)}


def _only_session(out: Path) -> Path:
    found = [p for p in out.iterdir() if p.is_dir()]
    assert len(found) == 1, found
    return found[0]


@pytest.fixture(scope="module")
def session(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Path, Path, Path, subprocess.CompletedProcess]]:
    base = tmp_path_factory.mktemp("e2e")
    shm = Path("/dev/shm") / f"caerus-test-e2e-{os.getpid()}"
    shm.mkdir(exist_ok=True)
    out, reports = base / "sessions", base / "reports"
    # bench mode: the strategy fires on every Binance book, so tick-to-decision and queue transit get samples
    # in a few seconds (the real strategy may rightly not trade at all in 8 s)
    strategy_cfg = base / "strategy.toml"
    strategy_cfg.write_text('mode = "bench"\n')
    res = subprocess.run(_session_cmd(out, reports, 8, "--strategy-config", str(strategy_cfg)),
                         capture_output=True, text=True, env=_env(shm), timeout=300, check=False)
    try:
        assert res.returncode == 0, f"session failed:\n{res.stdout[-4000:]}\n{res.stderr[-4000:]}"
        yield _only_session(out), reports, shm, res
    finally:
        shutil.rmtree(shm, ignore_errors=True)


def test_every_file_is_written(session: tuple[Path, Path, Path, subprocess.CompletedProcess]) -> None:
    d, reports, _, _ = session
    for name in ("config.toml", "env.json", "summary.json", "report.md", "report.html"):
        assert (d / name).is_file(), name
    for p in ALL_PROCESSES:
        assert (d / "logs" / f"{p}.log").is_file(), p
    for p in RECORDING:
        assert (d / f"{p}.hlog").is_file(), p
        assert (d / f"{p}.hlog.json").is_file(), p
    for tag in hdr.FLEET_TAGS:
        assert (d / f"{tag}.hgrm").is_file(), tag
    assert (d / "capture").is_dir()
    assert (reports / "index.html").read_text().count(d.name) >= 1
    assert (reports / d.name / "report.html").is_file()
    env = json.loads((d / "env.json").read_text())
    assert "plan" in env and "start" in env["chrony"] and "end" in env["chrony"]


def test_processes_ran_and_stopped_cleanly(session: tuple[Path, Path, Path, subprocess.CompletedProcess]) -> None:
    d, _, shm, _ = session
    summary = json.loads((d / "summary.json").read_text())
    statuses = {n: p["status"] for n, p in summary["processes"].items()}
    assert statuses == dict.fromkeys(ALL_PROCESSES, "ok"), statuses
    assert summary["headline_counts"]["books"] > 0
    assert summary["headline_counts"]["fires"] > 0 and summary["exec"]["orders"] > 0
    for tag in hdr.FLEET_TAGS:
        assert summary["metrics"][tag]["n"] > 0, tag
    assert summary["isolated"] is False and any("NOT ISOLATED" in c for c in summary["caveats"])
    assert not list(shm.glob(f"caerus-{summary['session_id']}.*")), "segments left behind"


def test_hlogs_decode_identically_with_hdr_histogram_js(
    session: tuple[Path, Path, Path, subprocess.CompletedProcess],
) -> None:
    d, _, _, _ = session
    node = require_binary("node", "nodejs")
    if not (NODE_MODULES / "hdr-histogram-js").is_dir():
        pytest.fail(f"hdr-histogram-js missing under {NODE_MODULES}: run scripts/install-test-deps.sh")
    checked: set[str] = set()
    for p in RECORDING:
        path = d / f"{p}.hlog"
        res = subprocess.run([node, str(JS_DECODER), str(NODE_MODULES), str(path), *PCTS], capture_output=True,
                             text=True, timeout=120, check=False)
        assert res.returncode == 0, res.stderr
        js = json.loads(res.stdout)
        ours = hdr.read_hlog(path)
        assert ours.bad_lines == []
        merged = ours.merged_all()
        assert set(js) == set(merged), p
        for tag, h in merged.items():
            assert js[tag]["total"] == h.total_count, (p, tag)
            assert js[tag]["intervals"] == sum(1 for iv in ours.intervals if iv.tag == tag)
            if h.total_count:
                assert js[tag]["max"] == h.get_max_value()
                mine = hdr.percentiles(h, [float(x) for x in PCTS])
                for x in PCTS:
                    assert js[tag]["percentiles"][x] == mine[float(x)], (p, tag, x)
                checked.add(tag)
    # every fleet metric carried samples and was compared (and the optional ones that had samples, e.g. the
    # fires-only decision segments; stack and wire-to-decision need the busy client: none on 2 shared CPUs)
    assert set(hdr.FLEET_TAGS) <= checked, set(hdr.FLEET_TAGS) - checked


def test_report_contains_every_metric(session: tuple[Path, Path, Path, subprocess.CompletedProcess]) -> None:
    d, _, _, res = session
    md = (d / "report.md").read_text()
    page = (d / "report.html").read_text()
    for tag in hdr.FLEET_TAGS:
        assert tables.label(tag) in md, tag
        assert tables.label(tag) in page, tag
    assert "data:image/png;base64," in page
    assert "tick-to-decision" in res.stdout  # the headline table was printed
    # every process's resident memory, sample by sample, drawn over time
    series = read_series(d / SERIES_FILE)
    # in MB, every sample a reading (> 0); a process sampled just after its exec may hold under 1 MB (0.49 MB seen
    # on a busy machine), but every one ends as a running Python process, several MB
    assert set(ALL_PROCESSES) <= set(series)
    assert all(mb.size >= 1 and mb.min() > 0 and mb[-1] > 5 for _, mb in series.values()), series
    assert "Resident memory (RSS) per process over the session" in md and (d / "charts" / "rss.png").is_file()


def test_killed_process_is_reported_and_restarted(tmp_path: Path) -> None:
    shm = Path("/dev/shm") / f"caerus-test-kill-{os.getpid()}"
    shm.mkdir(exist_ok=True)
    out, reports = tmp_path / "sessions", tmp_path / "reports"
    proc = subprocess.Popen(_session_cmd(out, reports, 10), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=_env(shm), start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        victim = None
        while time.monotonic() < deadline and proc.poll() is None:
            dirs = [p for p in out.glob("*/processes.json")] if out.exists() else []
            if dirs:
                try:
                    doc = json.loads(dirs[0].read_text())
                except ValueError:
                    doc = {}
                if "strategy" in doc and doc["strategy"]["status"] == "running":
                    victim = doc["strategy"]["pid"]
                    break
            time.sleep(0.1)
        assert victim is not None, "the session never started its strategy"
        time.sleep(3.0)  # mid-session
        os.kill(victim, signal.SIGKILL)  # a process this test's session started
        output, _ = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)  # the session we started stops its own fleet
            proc.wait(30)
        leftovers = list(shm.iterdir())
        shutil.rmtree(shm, ignore_errors=True)
    assert leftovers == [], leftovers
    assert proc.returncode == 0, output[-4000:]
    d = _only_session(out)
    summary = json.loads((d / "summary.json").read_text())
    strat = summary["processes"]["strategy"]
    # Like a systemd unit: the death is recorded, the process is started again and ends the session cleanly.
    assert strat["restarts"] == 1 and summary["restarts"] == {"strategy": 1}
    death = strat["deaths"][0]
    assert death["pid"] == victim and death["signal"] == "SIGKILL" and death["exit_code"] == -signal.SIGKILL
    assert death["at_s"] > 0 and death["new_pid"] != victim and death["restarted_after_s"] >= 0
    assert strat["pid"] == death["new_pid"]
    assert {p["status"] for p in summary["processes"].values()} == {"ok"}, summary["processes"]
    assert any(c.startswith("Process strategy was RESTARTED 1 time") for c in summary["caveats"])
    assert "strategy" in output and "DIED" in output and "restarted" in output
    md = (d / "report.md").read_text()
    assert "Deaths and restarts" in md and "SIGKILL" in md
    for p in ("feed-binance", "feed-hyperliquid", "execution"):  # the rest still wrote their metrics
        assert (d / f"{p}.hlog").stat().st_size > 0
    assert summary["metrics"]["info_age.binance"]["n"] > 0


def test_chaos_kills_hot_processes_and_the_supervisor_restarts_each(tmp_path: Path) -> None:
    shm = Path("/dev/shm") / f"caerus-test-chaos-{os.getpid()}"
    shm.mkdir(exist_ok=True)
    out, reports = tmp_path / "sessions", tmp_path / "reports"
    try:
        res = subprocess.run(_session_cmd(out, reports, 16, "--chaos", "5", "--no-capture"), capture_output=True,
                             text=True, env=_env(shm), timeout=300, start_new_session=True)
        leftovers = list(shm.iterdir())
    finally:
        shutil.rmtree(shm, ignore_errors=True)
    assert leftovers == [], leftovers
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    d = _only_session(out)
    summary = json.loads((d / "summary.json").read_text())
    kills = summary["chaos"]["kills"]
    assert summary["chaos"]["every_s"] == 5.0 and len(kills) >= 2, summary["chaos"]
    deaths = {(name, x["pid"]): x for name, p in summary["processes"].items() for x in p.get("deaths", [])}
    for kill in kills:  # every kill is a recorded death of that process, by SIGKILL
        assert deaths[(kill["process"], kill["pid"])]["signal"] == "SIGKILL"
    restarted = [k for k in kills if deaths[(k["process"], k["pid"])].get("new_pid")]
    assert len(restarted) >= len(kills) - 1  # the last kill may come too close to the end to be restarted
    assert all(p["status"] in ("ok", "died") for p in summary["processes"].values())
    assert "chaos: killed" in res.stderr
    # Recovery: every restart that had time to show work got its time to the first book (a feed's first valid
    # book, the strategy's or the engine's first book read), measured from the death.
    recovered = [deaths[(k["process"], k["pid"])] for k in restarted]
    assert any("first_book_after_s" in x for x in recovered), recovered
    for x in recovered:
        if "first_book_after_s" in x:
            assert x["first_book_after_s"] >= x["restarted_after_s"] > 0
    # Continuity: every order consumed once or counted lost; nothing doubled, nothing unexplained.
    c = summary["continuity"]
    assert c["duplicates"] == 0 and c["unexplained"] == 0, c
    assert c["gaps"] <= c["counted_lost"] + c["engine_deaths"], c
    md = (d / "report.md").read_text()
    assert f"Chaos: {len(kills)} hot processes killed with SIGKILL, one every 5 s" in md
    assert "Order continuity: nothing lost uncounted or doubled" in md and "first book after" in md


def test_orders_leave_through_a_real_socket_with_kernel_stamps_both_ways(tmp_path: Path) -> None:
    """`--transport emulator --feed-client busy`: the strategy's orders go, signed, over TLS to the emulator's order
    endpoint, so the session measures the whole path from kernel in (the busy feed's receive stamp) to kernel out
    (the order socket's transmit stamp). The session's test wallet key never lands in the session folder and its
    private folder is gone when the session ends."""
    import tempfile

    shm = Path("/dev/shm") / f"caerus-test-w2w-{os.getpid()}"
    shm.mkdir(exist_ok=True)
    out, reports = tmp_path / "sessions", tmp_path / "reports"
    strategy_cfg = tmp_path / "strategy.toml"
    strategy_cfg.write_text('mode = "bench"\n')
    proc = subprocess.Popen(_session_cmd(out, reports, 8, "--strategy-config", str(strategy_cfg), "--transport",
                                         "emulator", "--feed-client", "busy", "--no-capture"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(shm))
    try:
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
        shutil.rmtree(shm, ignore_errors=True)
    assert proc.returncode == 0, f"session failed:\n{stdout[-4000:]}\n{stderr[-4000:]}"
    d = _only_session(out)
    summary = json.loads((d / "summary.json").read_text())
    metrics = summary["metrics"]
    for tag in ("pickup_to_wire_out", "decision_to_wire_out", "wire_to_wire", "sent_after_wire_out"):
        assert metrics.get(tag, {}).get("n", 0) > 0, (tag, sorted(metrics))
    outcomes = summary["headline_counts"].get("orders_by_outcome", {})
    assert {k.lower() for k in outcomes} & {"filled", "partial", "not_filled"}, outcomes  # the emulator answered
    # the warm path (caerus.feed.warm, on by default) ran in every busy feed on a polling loop, and only there
    warmed = []
    for feed in ("feed-binance", "feed-hyperliquid"):
        head = (d / "logs" / f"{feed}.log").read_text().splitlines()[0]
        c = summary["counters"][feed]
        if "--warm-every-us" in head:
            warmed.append(feed)
            assert c["warm_reads"] > 0 and c["books"] > 0, (feed, c)
        else:
            assert c["warm_reads"] == 0, (feed, c)
    assert warmed, "no feed ran the warm path"
    argv = (d / "config.toml").read_text()
    assert "--transport" in argv and "hyperliquid" in argv and "--enable-live" in argv
    for f in d.rglob("*"):
        if f.is_file() and f.stat().st_size < 50_000_000:
            assert b"private_key" not in f.read_bytes(), f
    # this runner's desk folder (named after its pid) is removed at the end; other runners' come and go
    assert not list(Path(tempfile.gettempdir()).glob(f"caerus-order-desk-{proc.pid}-*"))
    md = (d / "report.md").read_text()
    assert "wire-to-wire (fires)" in md and "engine to kernel out" in md


def test_a_session_of_many_instruments_trades_each_and_reports_each(tmp_path: Path) -> None:
    """`--symbols BTC,ETH,SOL`: the instruments come from the emulator's exchangeInfo and meta (cached in the
    session folder), one feed per venue carries all three on one connection, the strategy decides per instrument
    (bench mode: an order per Binance book, sized by notional), execution fills each against its own book, and the
    report has a row per instrument plus the fleet's totals."""
    shm, out, reports, strategy_cfg, execution_cfg = _fleet_files(tmp_path, "many", 'mode = "bench"\n')
    res = subprocess.run(_session_cmd(out, reports, 8, "--symbols", "BTC,ETH,SOL", "--symbol-rate", "10",
                                      "--strategy-config", str(strategy_cfg), "--execution-config",
                                      str(execution_cfg), "--no-capture"),
                         capture_output=True, text=True, env=_env(shm), timeout=300, check=False)
    shutil.rmtree(shm, ignore_errors=True)
    assert res.returncode == 0, f"session failed:\n{res.stdout[-4000:]}\n{res.stderr[-4000:]}"
    d = _only_session(out)
    insts = json.loads((d / "instruments.json").read_text())["instruments"]
    assert [(i["id"], i["name"], i["binance_symbol"], i["hl_coin"]) for i in insts] == [
        (0, "BTC", "BTCUSDT", "BTC"), (1, "ETH", "ETHUSDT", "ETH"), (2, "SOL", "SOLUSDT", "SOL")]
    assert (d / "listings.json").is_file()
    counters = json.loads((d / "summary.json").read_text())["counters"]
    for feed in ("feed-binance", "feed-hyperliquid"):
        c = counters[feed]
        assert c["instruments"] == 3 and c["connects"] == 1, (feed, c)  # all three on one connection
        for i in range(3):
            assert c[f"inst.{i}.books"] > 0, (feed, i)
    for i in range(3):
        assert counters["strategy"][f"inst.{i}.orders"] > 0, i
    assert counters["strategy"]["books.lost"] == 0
    md = (d / "report.md").read_text()
    assert "## Instruments" in md and "| SOL |" in md and "| all 3 |" in md


def test_an_unlisted_symbol_stops_the_session_before_the_fleet_starts(tmp_path: Path) -> None:
    shm = Path("/dev/shm") / f"caerus-test-unlisted-{os.getpid()}"
    shm.mkdir(exist_ok=True)
    out, reports = tmp_path / "sessions", tmp_path / "reports"
    res = subprocess.run(_session_cmd(out, reports, 5, "--symbols", "BTC,NOPE=NOPEUSDT/NOPE", "--no-capture"),
                         capture_output=True, text=True, env=_env(shm), timeout=180, check=False)
    shutil.rmtree(shm, ignore_errors=True)
    assert res.returncode == 1, res.stderr
    text = res.stdout + res.stderr
    assert "NOPE: Binance lists no trading perpetual NOPEUSDT" in text and "NOPE: Hyperliquid" in text
    processes = json.loads((_only_session(out) / "summary.json").read_text())["processes"]
    assert set(processes) == {"venue-sim"}, processes  # no fleet process was started


@pytest.mark.parametrize("transport", ["paper", "emulator"])
def test_a_session_whose_plan_splits_binance_trades_every_instrument_and_loses_no_book(tmp_path: Path,
                                                                                      transport: str) -> None:
    """The plan splits a venue when its estimated book rate is above one feed process's: 3 instruments x 40 Hz of
    Binance books over a 60 books/s limit are two Binance feed processes (ids 0-1 and 2), each with its own ring and
    placement, while Hyperliquid (3 x ~14 books/s) stays one; paper fills, or signed orders to the emulator's order
    endpoints. The strategy and execution read all three rings,
    capture stores all of them, every instrument gets orders, and no book is lost: no reader was lapped, and the
    strategy read every record capture stored from the rings and every book the feeds counted per instrument."""
    shm, out, reports, strategy_cfg, execution_cfg = _fleet_files(tmp_path, "split", 'mode = "bench"\n')
    res = subprocess.run(_session_cmd(out, reports, 8, "--symbols", "BTC,ETH,SOL", "--symbol-rate", "40",
                                      "--max-books-per-feed-process", "60", "--strategy-config", str(strategy_cfg),
                                      "--execution-config", str(execution_cfg), "--transport", transport),
                         capture_output=True, text=True, env=_env(shm), timeout=300, check=False)
    shutil.rmtree(shm, ignore_errors=True)
    assert res.returncode == 0, f"session failed:\n{res.stdout[-4000:]}\n{res.stderr[-4000:]}"
    d = _only_session(out)
    summary = json.loads((d / "summary.json").read_text())
    assert summary["plan"]["feed_split"] == {"binance": [[0, 2], [2, 3]]}
    processes = summary["processes"]
    feeds = sorted(p for p in processes if p.startswith("feed-"))
    assert feeds == ["feed-binance-1", "feed-binance-2", "feed-hyperliquid"], feeds
    assert all(p["status"] == "ok" for p in processes.values()), processes
    config = tomllib.loads((d / "config.toml").read_text())["processes"]
    sid = summary["session_id"]
    for name, share, ring in (("feed-binance-1", "0:2", "binance-1"), ("feed-binance-2", "2:3", "binance-2")):
        argv = config[name]["argv"]
        assert argv[argv.index("--share") + 1] == share and argv[argv.index("--segment") + 1] == f"{sid}.book.{ring}"
        assert (d / f"{name}.hlog").is_file()
    rings = [f"{sid}.book.binance-1", f"{sid}.book.binance-2", f"{sid}.book.hyperliquid"]
    strategy_argv = config["strategy"]["argv"]
    assert [strategy_argv[i + 1] for i, a in enumerate(strategy_argv) if a == "--segment"] == rings
    execution_argv = config["execution"]["argv"]
    assert [execution_argv[i + 1] for i, a in enumerate(execution_argv) if a == "--book-segment"] == rings
    counters = summary["counters"]
    assert counters["feed-binance-1"]["instruments"] == 2 and counters["feed-binance-2"]["instruments"] == 1
    share_of = {0: "feed-binance-1", 1: "feed-binance-1", 2: "feed-binance-2"}
    strategy, capture = counters["strategy"], counters["capture"]
    for i in range(3):
        other = "feed-binance-2" if share_of[i] == "feed-binance-1" else "feed-binance-1"
        assert counters[share_of[i]][f"inst.{i}.books"] > 0 and f"inst.{i}.books" not in counters[other], i
        assert strategy[f"inst.{i}.orders"] > 0, i
        published = sum(int(counters[f].get(f"inst.{i}.books", 0)) for f in feeds)
        assert strategy[f"inst.{i}.books"] >= published, (i, strategy[f"inst.{i}.books"], published)
    # no reader was lapped, and the strategy read every record of every ring (capture, stopped last, read them all)
    assert strategy["books.lost"] == 0
    assert [k for k, v in capture.items() if k.startswith("lost.") and v] == []
    assert strategy["books.binance"] == capture["records.book.binance-1"] + capture["records.book.binance-2"] > 0
    assert strategy["books.hyperliquid"] == capture["records.book.hyperliquid"] > 0
    md = (d / "report.md").read_text()
    assert "| all 3 |" in md and "| SOL |" in md
