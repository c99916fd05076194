"""Nothing forged or doubled, against a real `caerus execution` process: records pushed into its real order ring.

Duplicate and out-of-order sequences, stale orders and forged fields (side 0, NaN price, size <= 0, unknown
venue) are refused before any limit is looked at: each gets a RISK_REJECTED EXEC record with its reason, and the
engine's counter block counts them by reason. Only the well-formed orders are sent.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from caerus.ipc.counter_block import CounterBlock
from caerus.ipc.mpsc import MpscProducer
from caerus.ipc.swmr import SwmrReader
from caerus.records.exec import EXEC_OUTCOME, EXEC_RISK, EXEC_SEQ
from caerus.records.order import ORDER_SEQ
from caerus.wire import EXEC, ORDER, OrderReason, Outcome, RiskReject, Tif, Venue
from tests.fixtures.common import Started

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
S = "fo"
HL = int(Venue.HYPERLIQUID)
MS = 1_000_000


def _order(seq: int, *, side: int = 1, px: float = 95_000.0, qty: float = 0.001, venue: int = HL,
           t_decision: int | None = None, symbol: int = 0) -> tuple:
    t = time.time_ns() if t_decision is None else t_decision
    return ((1 << 48) | seq, 1, venue, side, int(Tif.IOC), int(OrderReason.ENTRY), int(Venue.BINANCE), 0, px, qty,
            7, t, t, t, t, seq, 0, symbol, 0)


@pytest.fixture
def execution(shm_dir: Path, tmp_path: Path) -> Iterator[Started]:
    # Null transport, no books: every well-formed order is SENT; require_book = false so no book is needed.
    cfg = tmp_path / "execution.toml"
    cfg.write_text("[risk]\nrequire_book = false\nmax_order_age_ms = 500.0\nmax_orders_per_s = 50\n")
    p = Started([sys.executable, "-m", "caerus", "execution", "--segment", f"{S}.orders", "--transport", "null",
                 "--exec-segment", f"{S}.exec", "--stats-segment", f"{S}.stats.execution", "--config", str(cfg),
                 "--wait-policy", "sleep"],
                env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT, log=tmp_path / "execution.log")
    try:
        yield p
    finally:
        p.stop(grace=10)


def test_duplicate_stale_forged_and_out_of_range_records_are_refused_and_counted(execution: Started) -> None:
    producer = MpscProducer.attach(f"{S}.orders", ORDER, timeout=30)
    reader = SwmrReader.attach(f"{S}.exec", EXEC, timeout=30)
    stats = CounterBlock.attach(f"{S}.stats.execution", timeout=30)
    base = time.time_ns()
    pushes = [
        (_order(base + 1), RiskReject.NONE),
        (_order(base + 1), RiskReject.DUPLICATE),  # the same slot delivered twice
        (_order(base + 2, side=-1), RiskReject.NONE),
        (_order(base + 1), RiskReject.OUT_OF_ORDER),  # an old order re-delivered after a newer one
        (_order(base + 3, t_decision=time.time_ns() - 2_000 * MS), RiskReject.STALE_ORDER),
        (_order(base + 4, side=0), RiskReject.BAD_SIDE),
        (_order(base + 5, px=math.nan), RiskReject.BAD_PRICE),
        (_order(base + 6, qty=0.0), RiskReject.BAD_SIZE),
        (_order(base + 7, qty=-0.001), RiskReject.BAD_SIZE),
        (_order(base + 8, venue=9), RiskReject.OUT_OF_RANGE),
        (_order(base + 9, symbol=3), RiskReject.UNKNOWN_INSTRUMENT),  # the process trades BTC alone (id 0)
        (_order(base + 10, side=-1), RiskReject.NONE),
    ]
    for rec, _ in pushes:
        assert producer.try_push(*rec)
    records: list[tuple] = []
    deadline = time.monotonic() + 30
    while len(records) < len(pushes):
        assert execution.alive(), execution.output()
        assert time.monotonic() < deadline, f"only {len(records)} EXEC records\n{execution.output()}"
        rec = reader.read_next()
        if rec is None:
            time.sleep(0.01)
        else:
            records.append(rec)
    got = [(r[EXEC_SEQ], r[EXEC_OUTCOME], r[EXEC_RISK]) for r in records]
    want = [(rec[ORDER_SEQ], Outcome.SENT if why == RiskReject.NONE else Outcome.RISK_REJECTED, why)
            for rec, why in pushes]
    assert got == want

    # The counter block counts by reason (housekeeping mirrors them every ~100 ms).
    expect = {"duplicate": 1, "out_of_order": 1, "stale_order": 1, "bad_side": 1, "bad_price": 1, "bad_size": 2,
              "out_of_range": 1, "unknown_instrument": 1}
    deadline = time.monotonic() + 10
    while {k: stats.get(f"risk.{k}") for k in expect} != expect:
        assert time.monotonic() < deadline, {k: stats.get(f"risk.{k}") for k in expect}
        time.sleep(0.05)
    assert stats.get("outcome.sent") == 3
    assert stats.get("outcome.risk_rejected") == 9
    assert stats.get("position") == pytest.approx(-0.001)  # +1, -1, -1 lots of 0.001: the forged ones moved nothing
    producer.close()
    reader.close()
