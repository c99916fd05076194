"""The whole fleet path against the venue emulator with live order entry: `caerus venue-sim` -> two `caerus feed`
processes -> `caerus strategy` -> `caerus execution --transport hyperliquid --enable-live` (signed orders to the
emulator's Hyperliquid endpoint). Checks that venue replies come back through the engine as EXEC records: one SENT
and one final record per order, same order_id, fills at the emulated touch, and no secret in any log.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from eth_account import Account

from caerus.execution.engine import EXEC_FLAG_REPLY
from caerus.ipc.counter_block import CounterBlock
from caerus.ipc.swmr import SwmrReader
from caerus.records.exec import (
    EXEC_FILL_PX,
    EXEC_FILL_QTY,
    EXEC_FLAGS,
    EXEC_ORDER_ID,
    EXEC_OUTCOME,
    EXEC_PX,
    EXEC_SIDE,
    EXEC_T_DECISION,
    EXEC_T_PICKUP,
    EXEC_T_SENT,
)
from caerus.wire import EXEC, Outcome
from tests.fixtures.common import CaerusProcesses

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
FINAL = {Outcome.FILLED, Outcome.PARTIAL, Outcome.NOT_FILLED, Outcome.VENUE_REJECTED}


def test_strategy_to_live_hyperliquid_transport_on_emulator(venue_sim_factory: Callable, shm_dir: Path,
                                                            tmp_path: Path) -> None:
    hl = Account.create()
    sim = venue_sim_factory(env={"CAERUS_SIM_HL_ADDRESS": hl.address})
    creds = tmp_path / "credentials.toml"
    creds.write_text(f'[hyperliquid]\nprivate_key = "{hl.key.hex()}"\n')
    os.chmod(creds, 0o600)
    # Fire often on the emulated market: tiny entry threshold, short cooldown; IOCs cross by 5 bps.
    (tmp_path / "strategy.toml").write_text("entry_bps = 0.5\nexit_bps = 0.1\nreversal_bps = 2.0\nwarmup_ms = 300\n"
                                            "cooldown_ms = 300\nmax_hold_ms = 1000\nslippage_bps = 5.0\n")
    (tmp_path / "execution.toml").write_text("[risk]\nmax_orders_per_s = 50\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = CaerusProcesses(env, ROOT, tmp_path)
    start, logs = procs.start, procs.logs

    try:
        for venue in ("binance", "hyperliquid"):
            start(f"feed-{venue}", ["feed", "--venue", venue, "--segment", f"lv.book.{venue}", "--url",
                                    sim[f"{venue}_url"], "--ca-file", sim["ca_file"], "--wait-policy", "sleep"])
        start("execution", ["execution", "--segment", "lv.orders", "--transport", "hyperliquid", "--enable-live",
                            "--network", "testnet", "--credentials", str(creds), "--url", sim["hyperliquid_url"],
                            "--ca-file", sim["ca_file"], "--state-dir", str(tmp_path / "state"),
                            "--book-segment", "lv.book.hyperliquid", "--exec-segment",
                            "lv.exec", "--stats-segment", "lv.stats.execution", "--config",
                            str(tmp_path / "execution.toml"), "--wait-policy", "sleep", "--metrics-dir",
                            str(tmp_path / "metrics")])
        start("strategy", ["strategy", "--segment", "lv.book.binance", "--segment", "lv.book.hyperliquid",
                           "--order-segment", "lv.orders", "--exec-segment", "lv.exec",
                           "--stats-segment", "lv.stats.strategy", "--config",
                           str(tmp_path / "strategy.toml"), "--wait-policy", "sleep"])
        exe = CounterBlock.attach("lv.stats.execution", timeout=30)
        reader = SwmrReader.attach("lv.exec", EXEC, timeout=30)
        records: list[tuple] = []

        def two_fills() -> bool:
            while (rec := reader.read_next()) is not None:
                records.append(rec)
            return sum(1 for r in records if r[EXEC_OUTCOME] == Outcome.FILLED) >= 2

        procs.wait_for(two_fills, 90,
                       lambda: f"fewer than 2 fills from the emulator; execution counters {exe.snapshot()}")
        assert procs["strategy"].stop(grace=10) == 0, logs()
        time.sleep(1.0)  # replies still in flight settle (any that do not are simply not asserted on)
        assert procs["execution"].stop(grace=15) == 0, logs()
        while (rec := reader.read_next()) is not None:
            records.append(rec)
        counters = exe.snapshot()
        reader.close()
        exe.close()
    finally:
        for p in procs.values():
            p.stop(grace=10)

    sent = {r[EXEC_ORDER_ID]: r for r in records if r[EXEC_OUTCOME] == Outcome.SENT}
    finals = [r for r in records if r[EXEC_OUTCOME] in FINAL]
    assert sent and finals
    for f in finals:  # every final answers an order we sent, once, with the SENT record's timestamps
        s = sent[f[EXEC_ORDER_ID]]
        assert (f[EXEC_T_PICKUP], f[EXEC_T_SENT]) == (s[EXEC_T_PICKUP], s[EXEC_T_SENT])
        assert s[EXEC_T_DECISION] <= s[EXEC_T_PICKUP] <= s[EXEC_T_SENT]
    assert len({f[EXEC_ORDER_ID] for f in finals}) == len(finals)
    assert all(f[EXEC_FLAGS] & EXEC_FLAG_REPLY for f in finals)
    for f in finals:
        if f[EXEC_OUTCOME] == Outcome.FILLED:
            assert f[EXEC_FILL_PX] > 0 and f[EXEC_FILL_QTY] > 0
            side = f[EXEC_SIDE]
            assert (f[EXEC_FILL_PX] <= f[EXEC_PX]) if side > 0 else (f[EXEC_FILL_PX] >= f[EXEC_PX])
    assert counters["replies"] >= len(finals) and counters["replies.unknown"] == 0
    assert counters["outcome.send_failed"] == 0, logs()
    assert (tmp_path / "metrics" / "hyperliquid.json").exists()
    for p in procs.values():
        assert hl.key.hex() not in p.output() and hl.key.hex()[2:] not in p.output()
