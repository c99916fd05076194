"""A real Prometheus (Debian's) on loopback scrapes the caerus exporter of a real short emulator session, and its
HTTP API gives the session's counts and latency percentile as summary.json has them.

The session starts its exporter (``--exporter-port``); Prometheus scrapes it every 2 s (the scrape timeout is the
interval: 2 s leaves a niced exporter room on a loaded 2-core machine whose cores the fleet busy-polls) and the
exporter lingers on stop for one more scrape, so the last stored samples are the fleet's final counts.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from caerus.monitoring import prometheus
from tests.fixtures.common import free_port, require_binary

pytestmark = [pytest.mark.integration,
              pytest.mark.serial("a whole-fleet session: the plan pins the hot processes to CPUs")]

ROOT = Path(__file__).resolve().parents[3]
SESSION_TIMEOUT_S = 240


def _wait_for(path_glob: Path, pattern: str, proc: subprocess.Popen[str], timeout: float) -> Path:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = list(path_glob.glob(pattern))
        if found:
            return found[0]
        assert proc.poll() is None, f"session exited early:\n{proc.stdout.read() if proc.stdout else ''}"
        time.sleep(0.1)
    raise AssertionError(f"no {pattern} under {path_glob} within {timeout} s")


@pytest.fixture(scope="module")
def scraped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any], int]]:
    require_binary("prometheus", "prometheus")
    base = tmp_path_factory.mktemp("monitor")
    shm = Path("/dev/shm") / f"caerus-test-monitor-{os.getpid()}"
    shm.mkdir(exist_ok=True)
    out = base / "sessions"
    cfg = base / "strategy.toml"
    cfg.write_text('mode = "bench"\n')  # fires on every Binance book: tick-to-decision gets samples in seconds
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CAERUS_SHM_DIR": str(shm)}
    # Prometheus first, scraping the exporter's port before the session opens it: its scrapes then cover the
    # fleet's whole life however slow the machine is to start either of them.
    port, prom_port = free_port(), free_port()
    prom = prometheus.start(base / "prom", [f"127.0.0.1:{port}"], prom_port, scrape_interval_s=2.0)
    proc = subprocess.Popen([sys.executable, "-m", "caerus", "session", "--duration", "8", "--out", str(out),
                             "--progress", "none", "--no-report", "--no-capture", "--strategy-config", str(cfg),
                             "--exporter-port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        ready = _wait_for(out, "*/exporter.ready.json", proc, 120)
        time.sleep(0.2)  # the ready file is written whole (os.replace), it may just have appeared
        assert json.loads(ready.read_text())["port"] == port
        try:
            stdout, _ = proc.communicate(timeout=SESSION_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate(timeout=10)
            raise
        assert proc.returncode == 0, stdout[-4000:]
        session_dir = ready.parent
        summary = json.loads((session_dir / "summary.json").read_text())
        yield session_dir, summary, prom_port
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        prometheus.stop(prom)
        shutil.rmtree(shm, ignore_errors=True)


def last(prom_port: int, promql: str) -> float:
    """The newest stored value of one series (looking back over the whole short session)."""
    res = prometheus.query(prom_port, f"last_over_time({promql}[5m])")
    assert len(res) == 1, (promql, res)
    return float(res[0]["value"][1])


def test_fires_and_books_match_the_summary(scraped: tuple[Path, dict[str, Any], int]) -> None:
    session_dir, summary, port = scraped
    counters = summary["counters"]
    assert counters["strategy"]["orders"] > 0
    assert last(port, f'caerus_fires_total{{session="{session_dir.name}"}}') == counters["strategy"]["orders"]
    assert last(port, 'caerus_books_total{process="feed-binance"}') == counters["feed-binance"]["books"]
    assert last(port, 'caerus_orders_total{outcome="filled"}') == counters["execution"]["outcome.filled"]


def test_tick_to_decision_count_and_p99_match_the_summary(scraped: tuple[Path, dict[str, Any], int]) -> None:
    _, summary, port = scraped
    ttd = summary["metrics"]["tick_to_decision"]
    assert ttd["n"] > 0
    assert last(port, 'caerus_latency_seconds_count{metric="tick_to_decision"}') == ttd["n"]
    # the 60 s window holds the whole 8 s session, so its p99 is the session's
    p99 = last(port, 'caerus_latency_window_seconds{metric="tick_to_decision",window="60s",quantile="0.99"}')
    assert p99 == pytest.approx(ttd["p99"] / 1e9, rel=1e-9)


def test_rss_is_served_per_process(scraped: tuple[Path, dict[str, Any], int]) -> None:
    _, _, port = scraped
    res = prometheus.query(port, "max_over_time(caerus_process_resident_memory_bytes[5m])")
    by_process = {r["metric"]["process"]: float(r["value"][1]) for r in res}
    assert {"strategy", "execution", "feed-binance", "feed-hyperliquid"} <= set(by_process)
    assert all(v > 10e6 for v in by_process.values()), by_process
