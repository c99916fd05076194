"""`caerus calibrate` end to end through a real capture store: offline emulator books written into a chDB store
with the capture schema (a session folder: capture/ + instruments.json), read back by caerus.data, calibrated by
the CLI in its own process, and the TOML it writes loaded by the emulator's market model."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from caerus.sim.market import BinanceQuote, HlBlock, MarketConfig, MarketModel
from tests.fixtures.research_books import offline_books, write_session

REPO = Path(__file__).resolve().parents[3]
TRUE = MarketConfig(seed=5, jumps_per_min=30.0, hl_lag_ms=300.0)  # many jumps: 3 minutes give ~90 moves


def _calibrate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "caerus", "calibrate", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def session_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_session(offline_books(TRUE, 3.0), tmp_path_factory.mktemp("calibrate") / "session")


def test_calibrate_reads_a_capture_store_and_writes_a_market_the_emulator_loads(session_dir: Path,
                                                                                 tmp_path: Path) -> None:
    out = tmp_path / "market.toml"
    done = _calibrate(str(session_dir), "-o", str(out), "--symbol", "BTC")
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert f"# source: {session_dir}" in text and "# symbol: BTC" in text
    settings = tomllib.loads(text)
    assert abs(settings["hl_lag_ms"] - TRUE.hl_lag_ms) <= 25.0
    assert abs(settings["hl_block_ms"] - TRUE.hl_block_ms) <= 3.0
    cfg = MarketConfig(**settings)
    cfg.validate()
    events = MarketModel(cfg).events()
    first = [next(events) for _ in range(200)]
    assert any(isinstance(e, BinanceQuote) for e in first) and any(isinstance(e, HlBlock) for e in first)


def test_calibrate_names_what_is_wrong_in_one_line(session_dir: Path, tmp_path: Path) -> None:
    done = _calibrate(str(session_dir), "-o", str(tmp_path / "m.toml"), "--symbol", "ETH")
    assert done.returncode == 2
    assert done.stderr.startswith("caerus calibrate: ") and "ETH" in done.stderr
    assert done.stderr.count("\n") == 1
    assert not (tmp_path / "m.toml").exists()
