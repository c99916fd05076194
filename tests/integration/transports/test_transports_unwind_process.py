"""The execution process leaves the venue clean (issue 33 item 6), end to end: ``caerus execution`` with a live
transport against a ``caerus venue-sim`` process over TLS. SIGTERM with an order resting: the process cancels it
before it exits (the venue's open-orders list is empty, the summary counts it). With ``flatten_on_halt`` a kill
file halts trading and the venue's position goes back to 0 while the process keeps running."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from caerus.ipc.mpsc import MpscProducer
from caerus.ipc.swmr import SwmrReader, SwmrWriter
from caerus.records.exec import EXEC_ORDER_ID, EXEC_RISK
from caerus.wire import BOOK, EXEC, ORDER, RiskReject, Tif
from tests.fixtures.common import Started
from tests.fixtures.pipeline import make_book
from tests.integration.transports.test_transports_unwind import _venue_open_orders
from tests.kit import records
from tests.kit.sim_account import sim_mid, start_sim_account, venue_code

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
WAIT_S = 30.0


@pytest.mark.parametrize("venue", ["binance", "hyperliquid"])
def test_the_execution_process_cancels_at_shutdown_and_flattens_on_halt(venue_sim_factory: Callable, shm_dir: Path,
                                                                        tmp_path: Path, venue: str) -> None:
    acct = start_sim_account(venue_sim_factory, tmp_path)
    sim, creds, api_key, secret, hl = acct.sim, acct.creds, acct.api_key, acct.secret, acct.hl
    url = acct.order_url(venue)
    wire_venue = venue_code(venue)
    mid = sim_mid(sim, venue)
    book = SwmrWriter.create(f"uwp.{venue}.book", BOOK, 64)
    reader = acct.transport(venue)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    kill = tmp_path / "kill"
    plain_cfg, flatten_cfg = tmp_path / "plain.toml", tmp_path / "flatten.toml"
    band = "[risk]\nprice_band_bps = 500.0\n"  # the resting order sits 3 % under the mid
    plain_cfg.write_text(band)
    flatten_cfg.write_text("flatten_on_halt = true\nhousekeeping_ms = 50.0\n" + band)

    def until(what: str, cond: Callable[[], Any], proc: Started) -> None:
        deadline = time.monotonic() + WAIT_S
        while not cond():
            assert proc.alive() and time.monotonic() < deadline, f"timed out waiting for {what}:\n{proc.output()}"
            book.publish(*make_book(wire_venue, mid - 0.5, mid + 0.5, time.time_ns()))  # keep the band's book fresh
            time.sleep(0.05)

    def execution(name: str, *extra: str) -> tuple[Started, tuple[MpscProducer, SwmrReader]]:
        (tmp_path / name).mkdir()
        proc = Started([sys.executable, "-m", "caerus", "execution", "--segment", f"uwp.{name}.orders",
                        "--transport", venue, "--enable-live", "--network", "testnet", "--credentials", str(creds),
                        "--url", url, "--ca-file", sim["ca_file"], "--wait-policy", "sleep", "--state-dir",
                        str(tmp_path / "state"), "--book-segment", f"uwp.{venue}.book", "--metrics-dir",
                        str(tmp_path / name), "--exec-segment", f"uwp.{name}.exec", *extra], env=env, cwd=ROOT,
                       log=tmp_path / f"{name}.log")
        return proc, (MpscProducer.attach(f"uwp.{name}.orders", ORDER, timeout=WAIT_S),
                      SwmrReader.attach(f"uwp.{name}.exec", EXEC, timeout=WAIT_S))

    seq = iter(range(1, 1000))

    def push(rings: tuple[MpscProducer, SwmrReader], px: float, tif: Tif) -> None:
        """Send one order through the process; again with a new id while it finds no book (the book ring not
        attached yet)."""
        producer, exec_ring = rings
        deadline = time.monotonic() + WAIT_S
        while True:
            oid = next(seq)
            book.publish(*make_book(wire_venue, mid - 0.5, mid + 0.5, time.time_ns()))
            assert producer.try_push(*records.order(oid, venue=wire_venue, px=px, qty=0.002, tif=tif,
                                                    t_decision=time.time_ns(), seq=oid))
            rec = None
            while rec is None or rec[EXEC_ORDER_ID] != oid:
                assert time.monotonic() < deadline, "no EXEC record for the order"
                rec = exec_ring.read_next()
                if rec is None:
                    time.sleep(0.02)
            if rec[EXEC_RISK] == 0:
                return
            assert rec[EXEC_RISK] == RiskReject.NO_BOOK, rec
            time.sleep(0.2)

    def summary(name: str) -> dict[str, Any]:
        return json.loads((tmp_path / name / f"{venue}.json").read_text())

    open_orders = lambda: _venue_open_orders(sim, venue, api_key, secret, hl.address)  # noqa: E731
    reader.start()
    try:
        # SIGTERM with an order resting: cancelled before the process exits.
        proc, rings = execution("stop", "--config", str(plain_cfg))
        try:
            push(rings, round(mid * 0.97, 0), Tif.GTC)
            until("the order to rest", lambda: len(open_orders()) == 1, proc)
        finally:
            rings[0].close()
            rings[1].close()
            assert proc.stop(grace=20) == 0, proc.output()
        assert open_orders() == []
        assert summary("stop")["shutdown_cancels"] == {"asked": 1, "canceled": 1, "gone": 0, "failed": 0}
        # flatten_on_halt: a position and a resting order, then the kill file: the venue's position goes to 0.
        proc, rings = execution("halt", "--config", str(flatten_cfg), "--kill-file", str(kill))
        try:
            push(rings, round(mid * 1.01, 0), Tif.IOC)
            until("a position", lambda: reader.venue_state(10.0).position > 0, proc)
            held = reader.venue_state(10.0).position
            push(rings, round(mid * 0.97, 0), Tif.GTC)
            until("the order to rest", lambda: len(open_orders()) == 1, proc)
            kill.touch()
            until("the flatten", lambda: reader.venue_state(10.0).position == 0.0, proc)
            assert proc.alive() and open_orders() == []
        finally:
            rings[0].close()
            rings[1].close()
            assert proc.stop(grace=20) == 0, proc.output()
        report = summary("halt")["flatten_on_halt"]
        assert report["failed"] == 0 and report["cancels"]["canceled"] == 1, report
        assert report["positions"] == {"0": held} and report["filled"] == {"0": pytest.approx(held)}, report
        assert "shutdown_cancels" not in summary("halt")  # the halt's flatten had cancelled it already
    finally:
        reader.close()
        book.close(unlink=True)
