"""The busy client's receive buffers against a real TLS server on loopback: reused buffers lose and mix nothing.

caerus.net.busy reads ciphertext into one preallocated buffer and decrypts into another, both reused on every read;
the frame splitter keeps what it holds of a message across reads. A message longer than one plaintext read
(READ_SIZE), TLS records split across reads, and bursts of small messages coalesced into one read must all arrive
whole, in order and byte for byte: were a view of a reused buffer kept instead of a copy, the next read would
overwrite a message still being assembled and these payloads (each different) would not compare equal.
"""

from __future__ import annotations

import asyncio

from websockets.asyncio.server import ServerConnection

from caerus.net.busy import READ_SIZE, BusyWsSession
from caerus.net.ws import WsSession, client_ssl_context
from caerus.wire import FailureClass


def _payload(i: int, size: int) -> bytes:
    """``size`` bytes that differ from every other payload's at every offset a stale buffer could show."""
    unit = f"{i:06d}:".encode()
    return (unit * (size // len(unit) + 1))[:size]


# small, one TLS record's worth (16 KiB) crossed, more than one plaintext read, then a burst of small ones
SIZES = [7, 20_000, READ_SIZE + 50_000, 3, 2 * READ_SIZE + 1, *([180] * 200), 65_536, 1]


def test_messages_across_reads_and_records_arrive_whole(tls_ws_server) -> None:
    sent = [_payload(i, n) for i, n in enumerate(SIZES)]

    async def burst(ws: ServerConnection) -> None:
        for i, data in enumerate(sent):
            await ws.send(data if i % 2 else data.decode())  # binary and text frames
        await ws.close(1000, "done")

    srv = tls_ws_server(burst)
    got: list[bytes] = []

    def on_message(raw: bytes, t_recv: int, s: WsSession) -> bool:
        got.append(bytes(raw))
        return True

    async def main() -> BusyWsSession:
        s = BusyWsSession(srv.url + "/ws", 1, on_message, ssl_context=client_ssl_context(srv.ca_file),
                          open_timeout_s=5.0, close_timeout_s=1.0)
        await asyncio.wait_for(s.serve(), 20)
        return s

    s = asyncio.run(main())
    assert s.failure is not None and s.failure.cls is FailureClass.CLOSED_BY_PEER, s.failure
    assert len(got) == len(sent)
    bad = [i for i, (a, b) in enumerate(zip(got, sent, strict=True)) if a != b]
    assert bad == [], f"messages {bad[:5]} differ from what was sent"
