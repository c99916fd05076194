"""benchmarks.rx_path over real loopback TCP sockets: every contender reads every message; the busy client,
opened in memory on its socket, delivers every payload sent (the run stops otherwise)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import rx_path


def test_every_stage_is_measured_on_every_message(tmp_path: Path) -> None:
    out = tmp_path / "rx.json"
    assert rx_path.main(["--quick", "--messages", "60", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert set(doc["metrics"]) == set(rx_path.CONTENDERS)
    assert all(m["n"] == 3 * 60 for m in doc["metrics"].values())  # 3 quick rounds, the warm-up dropped
    assert doc["extra"]["python_after_the_read_p50_ns"] == (doc["metrics"]["busy client"]["p50"]
                                                          - doc["metrics"]["recvmsg_into + rx_stamp"]["p50"])


def test_the_busy_client_opened_in_memory_reads_its_socket_to_the_callback() -> None:
    frames = [b'{"a":1}', b'{"b":22}']
    wire = [rx_path.Frame(rx_path.Opcode.TEXT, f).serialize(mask=False) for f in frames]
    loop = rx_path.asyncio.new_event_loop()
    try:
        with rx_path.tcp_pair(stamped=True) as (reader, sender):
            op = rx_path.OpenSession(rx_path.trustme.CA(), reader, loop)
            t = rx_path.round_session(op, sender, wire, frames)
            assert len(t) == 2 and op.got == frames
            assert op.session.t_wire > 0  # the kernel's receive stamp came with the read
    finally:
        loop.close()
