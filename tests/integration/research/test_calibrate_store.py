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

from caerus.sim.core.market import BinanceQuote, HlBlock, MarketModel
from caerus.sim.core.market_config import load_market
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


@pytest.fixture(scope="module")
def short_session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2 minutes of the default market (seed 1): too few moves to identify its 650 ms lag (6 answered; 7 before the
    quote arrivals were refit, issue 46)."""
    return write_session(offline_books(load_market("default", seed=1), 2.0), tmp_path_factory.mktemp("short") / "s")


def test_calibrate_refuses_a_lag_the_books_do_not_identify_and_says_why(short_session: Path,
                                                                         tmp_path: Path) -> None:
    # issue 45: this wrote hl_lag_ms = 0 with SE 1.4 ms (the Hayashi-Yoshida peak under fading) and exited 0
    out = tmp_path / "market.toml"
    done = _calibrate(str(short_session), "-o", str(out), "--symbol", "BTC")
    print(done.stderr, end="")
    assert done.returncode == 3, done.stderr
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("caerus calibrate: hl_lag_ms, hl_lag_sd_ms not identified: 6 answered moves "
                                  "(need 20; ")
    assert done.stderr.rstrip().endswith("capture more data, or pass --lag-from-preset to write the default "
                                         "preset's value")
    assert not out.exists()


def test_lag_from_preset_writes_the_preset_s_lag_and_says_so(short_session: Path, tmp_path: Path) -> None:
    out = tmp_path / "market.toml"
    done = _calibrate(str(short_session), "-o", str(out), "--symbol", "BTC", "--lag-from-preset")
    assert done.returncode == 0, done.stderr
    assert "hl_lag_ms, hl_lag_sd_ms not identified: 6 answered moves" in done.stderr
    assert "the default preset's value written (--lag-from-preset)" in done.stderr
    text = out.read_text()
    preset = load_market("default")
    settings = tomllib.loads(text)
    assert (settings["hl_lag_ms"], settings["hl_lag_sd_ms"]) == (preset.hl_lag_ms, preset.hl_lag_sd_ms)
    assert (f"#   hl_lag_ms = {preset.hl_lag_ms}   not estimated: from preset; not identified: 6 answered moves"
            in text)
    fitted = next(line for line in text.splitlines() if line.startswith("# fitted from these books: "))
    assert "hl_lag_ms" not in fitted


def test_binance_only_fits_binance_and_carries_every_hyperliquid_setting(session_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "binance.toml"
    done = _calibrate(str(session_dir), "-o", str(out), "--symbol", "BTC", "--binance-only")
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert "# rows: binance " in text and "hyperliquid" not in text.split("# rows:")[1].splitlines()[0]
    assert "note: Binance only: no follower read" in text
    fitted = next(line for line in text.splitlines() if line.startswith("# fitted from these books:"))
    for key in ("annual_vol", "jumps_per_min", "flicker_share", "binance_rate_hz", "binance_batch_alpha"):
        assert key in fitted
    assert "hl_" not in fitted and "catch_up" not in fitted
    cfg = load_market(out)
    preset = load_market("default")
    for key in ("hl_lag_ms", "hl_lag_sd_ms", "hl_block_ms", "catch_up", "hl_fade", "hl_basis_half_life_s"):
        assert getattr(cfg, key) == getattr(preset, key), key


def test_binance_only_refuses_a_capture_shorter_than_a_minute(tmp_path: Path) -> None:
    fixture = REPO / "tests" / "fixtures" / "data" / "real" / "usdm_btcusdt_20240808_head.gz"
    imp = subprocess.run([sys.executable, "-m", "caerus", "data", "import", str(tmp_path / "store"), str(fixture),
                          "--jobs", "1"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert imp.returncode == 0, imp.stderr
    done = _calibrate(str(tmp_path / "store"), "-o", str(tmp_path / "m.toml"), "--symbol", "BTCUSDT", "--binance-only")
    assert done.returncode == 2
    assert "BTCUSDT: binance's books span 2.0 s, need at least 60 s" in done.stderr
    assert not (tmp_path / "m.toml").exists()
