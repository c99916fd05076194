"""No order left in limbo, end to end (issue 14 item 4): the engine and a live transport against a
``caerus venue-sim`` process whose order entry executes the first order and never answers it (scenario
``lost-reply``). The order passes its reply deadline, becomes UNKNOWN (counted in full toward the position), the
engine asks the venue (Binance ``order.status`` by client order id, Hyperliquid ``orderStatus`` by cloid) and
settles it from the answer; the order itself is sent exactly once."""

from __future__ import annotations

import json
import os
import secrets
import ssl
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from eth_account import Account

from caerus.execution.books import LatestBooks
from caerus.execution.config import RiskConfig
from caerus.execution.credentials import load_credentials
from caerus.execution.engine import EXEC_FLAG_REPLY, Engine
from caerus.execution.risk import RiskChecker
from caerus.execution.transports.live import make_live_transport
from caerus.ipc.mpsc import MpscConsumer, MpscProducer
from caerus.ipc.swmr import SwmrReader, SwmrWriter
from caerus.records.exec import EXEC_FILL_QTY, EXEC_FLAGS, EXEC_OUTCOME
from caerus.wire import EXEC, ORDER, Outcome, Venue
from tests.fixtures.pipeline import make_book
from tests.kit import records

pytestmark = pytest.mark.integration

WAIT_S = 30.0


def _mid(sim: Any, venue: str) -> float:
    """The emulated market's current mid, over its REST API (the same numbers its order entry fills against)."""
    ctx = ssl.create_default_context(cafile=sim["ca_file"])
    base = "https" + sim[f"{venue}_url"].removeprefix("wss")
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            if venue == "hyperliquid":
                req = urllib.request.Request(base + "/info", data=b'{"type":"allMids"}', method="POST")
                with urllib.request.urlopen(req, context=ctx, timeout=5) as r:
                    return float(json.loads(r.read())["BTC"])
            with urllib.request.urlopen(base + "/fapi/v1/ticker/bookTicker?symbol=BTCUSDT", context=ctx,
                                        timeout=5) as r:
                t = json.loads(r.read())
                return (float(t["bidPrice"]) + float(t["askPrice"])) / 2
        except (KeyError, OSError, ValueError):  # no market yet (503 / empty mids): bounded retry
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@pytest.mark.parametrize("venue", ["binance", "hyperliquid"])
def test_a_lost_reply_is_resolved_by_a_status_query_without_a_second_order(venue_sim_factory, shm_dir: Path,
                                                                          tmp_path: Path, venue: str) -> None:
    api_key, secret, hl = secrets.token_hex(32), secrets.token_hex(32), Account.create()
    sim = venue_sim_factory(scenario="lost-reply", env={
        "CAERUS_SIM_BINANCE_API_KEY": api_key, "CAERUS_SIM_BINANCE_SECRET": secret,
        "CAERUS_SIM_HL_ADDRESS": hl.address})
    creds = tmp_path / "credentials.toml"
    creds.write_text(f'[binance]\napi_key = "{api_key}"\nsecret = "{secret}"\n\n'
                     f'[hyperliquid]\nprivate_key = "{hl.key.hex()}"\n')
    os.chmod(creds, 0o600)
    url = sim["binance_order_url"] if venue == "binance" else sim["hyperliquid_url"]
    engine: Engine | None = None

    def on_reply(reply: Any) -> None:
        assert engine is not None
        engine.on_reply(reply)

    transport = make_live_transport(venue, network="testnet", credentials=load_credentials(venue, creds),
                                    enable_live=True, url=url, ca_file=sim["ca_file"], on_reply=on_reply)
    wire_venue = Venue.BINANCE if venue == "binance" else Venue.HYPERLIQUID
    mid = _mid(sim, venue)
    books = LatestBooks()
    books.put(make_book(wire_venue, mid - 0.5, mid + 0.5, time.time_ns()))
    consumer = MpscConsumer.create("sq.orders", ORDER, 8)
    producer = MpscProducer.attach("sq.orders", ORDER, timeout=1)
    exec_w = SwmrWriter.create("sq.exec", EXEC, 64)
    exec_r = SwmrReader.attach("sq.exec", EXEC, timeout=1)
    engine = Engine(consumer, transport, RiskChecker(RiskConfig(), books), books, exec_w, reply_timeout_ms=1000.0)
    try:
        transport.start()
        now = time.time_ns()
        px = round(mid * 1.002, 1 if venue == "binance" else 0)  # through the ask: the IOC fills
        assert producer.try_push(*records.order(7, venue=wire_venue, px=px, qty=0.002, t_decision=now, seq=1))
        assert engine.step()
        deadline = time.monotonic() + WAIT_S
        while engine.pending and time.monotonic() < deadline:
            engine.idle_work(time.time_ns())
            time.sleep(0.01)
        outcomes = []
        while (rec := exec_r.read_next()) is not None:
            outcomes.append((Outcome(rec[EXEC_OUTCOME]), bool(rec[EXEC_FLAGS] & EXEC_FLAG_REPLY),
                             rec[EXEC_FILL_QTY]))
        stats = transport.stats()
    finally:
        transport.close()
        exec_r.close()
        exec_w.close(unlink=True)
        producer.close()
        consumer.close(unlink=True)
    assert not engine.pending, f"the order was never resolved: {stats}"
    # Sent once, its reply lost, UNKNOWN at the deadline, then settled by the venue's own record of it.
    # (PARTIAL when the emulated touch was smaller than the order: the IOC rest expired.)
    assert [o for o, _, _ in outcomes[:2]] == [Outcome.SENT, Outcome.UNKNOWN], outcomes
    assert len(outcomes) == 3 and outcomes[-1][0] in (Outcome.FILLED, Outcome.PARTIAL), outcomes
    fill = outcomes[-1][2]
    assert outcomes[-1][1] and 0 < fill <= 0.002
    assert stats["sent"] == 1 and stats["queries"] >= 1 and stats["query_answers"] == 1, stats
    assert (engine.orders_timed_out, engine.resolved_by_query, engine.unknown) == (1, 1, set())
    assert engine.risk.position == pytest.approx(fill)  # the confirmed fill, not the worst case or zero
