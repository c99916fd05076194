"""`caerus calibrate` end to end through a real capture store: offline emulator books written into a chDB store
with the capture schema (a session folder: capture/ + instruments.json), read back by caerus.data, calibrated by
the CLI in its own process, the TOML it writes loaded by the emulator's market model, and a real venue-sim process
started with ``--market`` that file, serving books (stopped by PID)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from caerus.sim.market import BinanceQuote, HlBlock, MarketModel
from caerus.sim.market_config import load_market
from tests.fixtures.research_books import offline_books, write_session
from tests.fixtures.venue_sim import start_venue_sim

REPO = Path(__file__).resolve().parents[3]
TRUE = load_market("default", seed=5)  # the stochastic default market


def _calibrate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "caerus", "calibrate", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def session_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_session(offline_books(TRUE, 6.0), tmp_path_factory.mktemp("calibrate") / "session")


def test_calibrate_reads_a_capture_store_and_writes_a_market_the_emulator_loads(session_dir: Path,
                                                                                 tmp_path: Path) -> None:
    out = tmp_path / "market.toml"
    done = _calibrate(str(session_dir), "-o", str(out), "--symbol", "BTC")
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert f"# source: {session_dir}" in text and "# symbol: BTC" in text
    settings = tomllib.loads(text)
    # 6 minutes of the default market: loose (the round-trip unit test holds the tight tolerances)
    assert abs(settings["hl_lag_ms"] - TRUE.hl_lag_ms) <= 250.0
    assert abs(settings["hl_block_ms"] - TRUE.hl_block_ms) <= 3.0
    assert 0.3 <= settings["flicker_share"] <= 0.8 and 0.3 <= settings["catch_up"] <= 0.9
    cfg = load_market(out)  # the emulator's own loader: keys and ranges checked
    assert not cfg.fixed_follower  # a stochastic market, not the fixed-lag one
    events = MarketModel(cfg).events()
    first = [next(events) for _ in range(200)]
    assert any(isinstance(e, BinanceQuote) for e in first) and any(isinstance(e, HlBlock) for e in first)
    # the emulator itself starts on that file and serves books
    sim = start_venue_sim(tmp_path / "sim", args=["--market", str(out)])
    try:
        import json
        import urllib.request

        ctx = sim.ssl_context()
        url = sim["binance_url"].replace("wss://", "https://") + "/fapi/v1/ticker/bookTicker?symbol=BTCUSDT"
        with urllib.request.urlopen(url, context=ctx, timeout=10) as resp:
            book = json.loads(resp.read())
        assert float(book["bidPrice"]) > 0 and float(book["askPrice"]) >= float(book["bidPrice"])
        assert sim.proc.alive()
    finally:
        assert sim.stop() is not None


def test_calibrate_names_what_is_wrong_in_one_line(session_dir: Path, tmp_path: Path) -> None:
    done = _calibrate(str(session_dir), "-o", str(tmp_path / "m.toml"), "--symbol", "ETH")
    assert done.returncode == 2
    assert done.stderr.startswith("caerus calibrate: ") and "ETH" in done.stderr
    assert done.stderr.count("\n") == 1
    assert not (tmp_path / "m.toml").exists()
