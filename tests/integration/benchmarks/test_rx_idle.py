"""benchmarks.rx_idle over real loopback TCP sockets: every contender times every message, the warm ones through a
shadow session that really reads its records (decrypted, split and delivered in order, batch after batch)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import rx_idle, rx_path


def test_every_contender_is_measured_and_the_warm_ones_read_the_shadow(tmp_path: Path) -> None:
    out = tmp_path / "idle.json"
    assert rx_idle.main(["--quick", "--messages", "20", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert set(doc["metrics"]) == set(rx_idle.contenders((100, 1000)))
    assert all(m["n"] == 3 * 20 for m in doc["metrics"].values())  # 3 quick rounds, the warm-up dropped
    # a warm message's 1000 us gap holds ~10 shadow reads, a 100 us one 1: 4 rounds x 20 x (1 + 10), give or take
    assert doc["extra"]["shadow_reads"] >= 4 * 20 * 2
    assert set(doc["ratios"]) == {f"{g} us idle {what} (p50)" for g in (100, 1000)
                                  for what in ("warm/cold", "cold/back to back")}


def test_the_shadow_session_reads_its_records_in_order_across_batches() -> None:
    frames = [b'{"n":1}', b'{"n":22}', b'{"n":333}']
    wire = [rx_path.Frame(rx_path.Opcode.TEXT, f).serialize(mask=False) for f in frames]
    loop = rx_path.asyncio.new_event_loop()
    try:
        with rx_path.tcp_pair(stamped=True) as (reader, sender):
            shadow = rx_idle.Shadow(rx_path.OpenSession(rx_path.trustme.CA(), reader, loop), sender, wire)
            for _ in range(7):  # three batches: the TLS records of each made after the last was read
                shadow.read_one()
            assert shadow.reads == 7
            assert shadow.op.got == (frames * 3)[:7]
    finally:
        loop.close()
