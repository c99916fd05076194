"""`caerus session --transport emulator --symbols BTC,ETH,SOL` (issue 32): the strategy's orders for three
instruments leave, signed, through the live Hyperliquid transport to the emulator's order endpoint; each
instrument's orders are sized to a notional the venue accepts and fill (bench orders of BTC's 0.001 for ETH and SOL
were refused by the venue: $3 under its $10 minimum, and 0 on SOL's szDecimals); every fill is confirmed by the
account stream and by ``userFills``, and the report's Instruments table sets each instrument's position as the
venue reports it when trading stopped beside the engine's: equal; and each instrument's tick-to-decision,
feed-internal and information-age p50/p99 from its own tagged intervals in the strategy's and feeds' .hlogs."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.integration.session.test_session_e2e import _env, _fleet_files, _only_session, _session_cmd

pytestmark = [pytest.mark.integration,
              pytest.mark.serial("a whole-fleet session: the plan pins the hot processes to CPUs")]


def test_an_emulator_transport_session_trades_three_instruments_and_matches_the_venue(tmp_path: Path) -> None:
    # bench: an order on every Binance book, each instrument's sized to $100 at its first Hyperliquid book
    shm, out, reports, strategy_cfg, execution_cfg = _fleet_files(tmp_path, "live3",
                                                                  'mode = "bench"\norder_notional = 100.0\n')
    res = subprocess.run(_session_cmd(out, reports, 8, "--symbols", "BTC,ETH,SOL", "--symbol-rate", "10",
                                      "--transport", "emulator", "--strategy-config", str(strategy_cfg),
                                      "--execution-config", str(execution_cfg), "--no-capture"),
                         capture_output=True, text=True, env=_env(shm), timeout=300, check=False)
    shutil.rmtree(shm, ignore_errors=True)
    assert res.returncode == 0, f"session failed:\n{res.stdout[-4000:]}\n{res.stderr[-4000:]}"
    d = _only_session(out)
    venue = json.loads((d / "hyperliquid.json").read_text())
    c = venue["counters"]
    filled = c["filled"] + c["partial"]
    assert filled > 0 and c["sent"] > 0, c
    # venue truth: every fill confirmed by orderUpdates and by userFills, nothing contradicted
    assert c["stream_mismatch"] == 0 and c["fills_mismatch"] == 0 and venue["position_checks"]["mismatch"] == ""
    assert c["fills_confirmed"] + c["fills_resolved"] == c["fills"] > 0, c
    assert set(venue["reconciled"]["instruments"]) == {"BTC", "ETH", "SOL"}
    engine = venue["engine"]["positions"]
    assert venue["venue_positions"] == pytest.approx(engine, abs=1e-9)
    sent = venue["sent_by_instrument"]
    assert set(sent) == {"BTC", "ETH", "SOL"} and all(n > 0 for n in sent.values()), sent  # each one traded
    # and each one filled, by the venue's own account of it (userFills, per coin); none refused by the venue
    fills = venue["fills_by_instrument"]
    assert set(fills) == {"BTC", "ETH", "SOL"} and all(n > 0 for n in fills.values()), (fills, venue)
    assert sum(fills.values()) == c["fills"] and venue["rejects_by_reason"] == {} and c["rejected"] == 0, venue
    counters = json.loads((d / "summary.json").read_text())["counters"]["execution"]
    for i in range(3):
        assert counters[f"inst.{i}.venue_position"] == pytest.approx(counters[f"inst.{i}.position"], abs=1e-9)
    md = (d / "report.md").read_text()
    cells_of = {line.split("|")[1].strip(): [x.strip() for x in line.split("|")[1:-1]] for line in md.splitlines()
                if line.startswith(("| instrument |", "| BTC |", "| ETH |", "| SOL |", "| all 3 |"))}
    col = {h: k for k, h in enumerate(cells_of.pop("instrument"))}
    total = cells_of.pop("all 3")
    rows = cells_of
    assert set(rows) == {"BTC", "ETH", "SOL"}
    for name, cells in rows.items():
        venue_pos = cells[col["venue position"]]
        assert venue_pos == cells[col["position"]] and venue_pos != "-", (name, cells)  # venue's == engine's
    # per-instrument tick-to-decision (issue 32 item 4): each instrument's own histogram, the inst.<NAME> tagged
    # intervals of strategy.hlog, whose counts add up to the strategy's tick_to_decision
    metrics = json.loads((d / "summary.json").read_text())["metrics"]
    ttd = metrics["tick_to_decision"]
    per = {name: metrics[f"inst.{name}.tick_to_decision"] for name in ("BTC", "ETH", "SOL")}
    assert all(m["n"] > 0 for m in per.values()), per
    assert sum(m["n"] for m in per.values()) == ttd["n"] > 0
    for name, cells in rows.items():
        assert cells[col["tick-to-decision n"]] == f"{per[name]['n']:,}", (name, cells)
        assert cells[col["tick-to-decision p50"]] != "-" and cells[col["tick-to-decision p99"]] != "-"
    assert total[col["tick-to-decision n"]] == f"{ttd['n']:,}"
    # per-instrument feed_internal and info_age (issue 32 item 4): each venue's feed's inst.<NAME>.<tag> intervals,
    # whose counts add up to the feed's own, and the table's p50 / p99 cells for each
    for tag in ("feed_internal.binance", "feed_internal.hyperliquid", "info_age.binance", "info_age.hyperliquid"):
        own = {name: metrics[f"inst.{name}.{tag}"] for name in ("BTC", "ETH", "SOL")}
        assert all(m["n"] > 0 for m in own.values()) and sum(m["n"] for m in own.values()) == metrics[tag]["n"]
    for name, cells in {**rows, "all 3": total}.items():
        for header in ("feed internal p50 / p99, Binance", "feed internal p50 / p99, Hyperliquid",
                       "info age p50 / p99, Binance", "info age p50 / p99, Hyperliquid"):
            assert " / " in cells[col[header]], (name, header, cells)
