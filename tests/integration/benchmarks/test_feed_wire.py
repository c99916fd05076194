"""benchmarks.feed_wire against its real TLS WebSocket server (its own process, loopback): both clients read the
same numbered messages, and the server's after-send stamps line up with what each client received."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks import feed_wire

pytestmark = pytest.mark.serial("the benchmark pins its server and client to CPUs")


def test_message_stamp_reads_the_before_send_stamp_and_the_number_from_bytes_and_text() -> None:
    assert feed_wire.message_stamp(b'{"t":1733000000123456789,"k":0}') == (1733000000123456789, 0)
    assert feed_wire.message_stamp('{"t":5,"k":4711}') == (5, 4711)


def test_after_send_leaves_out_messages_the_server_never_stamped(tmp_path: Path) -> None:
    stamps = feed_wire.SentStamps(tmp_path / "sent.i64", 4)
    stamps.reset()
    stamps.arr[1] = 100
    stamps.arr[3] = 300
    sent, missing = stamps.after_send(np.array([1, 2, 3]), np.array([150, 250, 330]), timeout_s=0.05)
    assert sent.tolist() == [50, 30] and missing == 1


def test_every_client_and_policy_gets_both_measures_for_every_message(tmp_path: Path) -> None:
    out = tmp_path / "fw.json"
    assert feed_wire.main(["--messages", "60", "--rounds", "1", "--interval-us", "300", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    m = doc["metrics"]
    assert doc["extra"]["messages_without_after_send_stamp"] == {f"{c} {w}": 0 for c in feed_wire.CLIENTS
                                                       for w in feed_wire.POLICIES}
    for client in feed_wire.CLIENTS:
        for policy in feed_wire.POLICIES:
            send, sent = m[f"send->callback {client} {policy}"], m[f"sent->callback {client} {policy}"]
            assert send["n"] == sent["n"] == 60
            # the after-send stamp of a message is taken after its before-send stamp: per message, sent->callback
            # is never longer than send->callback (a stamp matched to the wrong message would break this)
            for q in ("p50", "p90", "max"):
                assert sent[q] <= send[q], (client, policy, q)
    for policy in feed_wire.POLICIES:
        assert m[f"stack busy {policy}"]["n"] == 60
    assert set(doc["ratios"]) == {f"busy/asyncio {measure} p50 {w}" for measure in ("send->callback", "sent->callback")
                                  for w in feed_wire.POLICIES}
