"""`invoke bench --host HOST --symbols BTC,ETH` (issue 32 item 2) against the loopback sshd host: the real
`caerus session` runs on the host (the emulator there), reads both venues' listings at its start as a local
session does, trades both instruments, and the collected session folder renders into a report with a row per
instrument. A list the venues do not both carry is refused by the host's session, naming the symbol."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from invoke import Context

import tasks
from tests.fixtures.infra_sshd import InfraHost

pytestmark = [pytest.mark.integration,
              pytest.mark.serial("a whole-fleet session on the test host, pinned by its plan (taskset)")]

ROOT = Path(__file__).resolve().parents[3]


def _real_caerus(path: Path, shm: Path) -> str:
    """The host's caerus: this checkout's, run from its venv (the login shell of the test host has no PATH of
    ours)."""
    path.write_text(f"#!/bin/sh\ncd {ROOT}\nPYTHONPATH={ROOT} CAERUS_SHM_DIR={shm} exec {sys.executable} -m caerus "
                    f"\"$@\"\n")
    path.chmod(0o755)
    return str(path)


def test_bench_on_a_host_trades_the_symbols_and_ends_in_a_collected_report(
        infra_test_host: InfraHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    h = infra_test_host
    shm = Path("/dev/shm") / f"caerus-test-hostsym-{tmp_path.name}"
    shm.mkdir(exist_ok=True)
    h.record.extra.update(caerus_bin=_real_caerus(tmp_path / "caerus", shm), chronyc="true")
    h.store.save(h.record)
    monkeypatch.setenv("CAERUS_STATE_DIR", str(h.store.root))
    out, reports = tmp_path / "sessions", tmp_path / "reports"
    try:
        tasks.bench(Context(), host="loop", emulator=True, duration="6", out=str(out), symbols="BTC,ETH")
    finally:
        import shutil

        shutil.rmtree(shm, ignore_errors=True)
    [d] = [p for p in out.iterdir() if p.is_dir()]
    insts = json.loads((d / "instruments.json").read_text())["instruments"]  # from the host's venues' listings
    assert [(i["name"], i["binance_symbol"], i["hl_coin"]) for i in insts] == [("BTC", "BTCUSDT", "BTC"),
                                                                                ("ETH", "ETHUSDT", "ETH")]
    assert json.loads((d / "host.json").read_text())["symbols"] == "BTC,ETH"
    counters = json.loads((d / "summary.json").read_text())["counters"]
    assert counters["feed-binance"]["inst.1.books"] > 0 and counters["feed-hyperliquid"]["inst.1.books"] > 0
    tasks.report(Context(), session=[str(d)], out=str(reports))
    md = (d / "report.md").read_text()
    assert "## Instruments" in md and "| BTC |" in md and "| ETH |" in md and "| all 2 |" in md


def test_bench_on_a_host_refuses_a_malformed_symbol_list_before_connecting(
        infra_test_host: InfraHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("CAERUS_STATE_DIR", str(infra_test_host.store.root))
    with pytest.raises(SystemExit) as exc:
        tasks.bench(Context(), host="loop", emulator=True, duration="6", out=str(tmp_path), symbols="BTC,BTC")
    assert exc.value.code == 2 and "--symbols lists BTC twice" in capsys.readouterr().err
