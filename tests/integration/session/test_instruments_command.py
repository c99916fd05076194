"""`caerus instruments` (what the host's caerus-instruments unit runs at every fleet start) against a real
``caerus venue-sim``: the list is resolved from the emulator's exchangeInfo and meta into instruments.json, which
the fleet's processes load; a symbol a venue does not list exits 1 naming it and writes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from caerus import instruments

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]


def _run(sim: Any, out: Path, symbols: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "caerus", "instruments", "--symbols", symbols, "--out-dir", str(out),
                           "--binance-url", sim["binance_url"], "--hyperliquid-url", sim["hyperliquid_url"],
                           "--ca-file", sim["ca_file"]], capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_the_instruments_command_writes_the_list_the_fleet_reads(shared_venue_sim: Any, tmp_path: Path) -> None:
    venue_sim = shared_venue_sim  # reads the venues' listings only
    res = _run(venue_sim, tmp_path / "ok", "BTC,ETH,SOL")
    assert res.returncode == 0, res.stderr
    insts = instruments.load(tmp_path / "ok" / instruments.FILE_NAME)
    assert insts.names == ("BTC", "ETH", "SOL") and insts[0] == instruments.BTC
    assert insts.by_coin["ETH"].hl_asset != insts.by_coin["SOL"].hl_asset
    bad = _run(venue_sim, tmp_path / "bad", "BTC,NOPE=NOPEUSDT/NOPE")
    assert bad.returncode == 1 and "NOPE: Binance lists no trading perpetual NOPEUSDT" in bad.stderr
    assert not (tmp_path / "bad" / instruments.FILE_NAME).exists()
