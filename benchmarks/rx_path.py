"""The busy client's receive path per message, in one process: what each stage from the socket to the callback costs.

A loopback TCP connection (TCP_NODELAY both ends; the reading end asks for the kernel's receive stamp as
``caerus.net.busy`` does), TLS over memory BIOs on the sending side (trustme certificate), one Binance bookTicker
frame per TLS record. Per message the sending end writes one record into the socket (untimed; on loopback the bytes
are in the reader's queue when ``send`` returns), then the contender reads it, timed with perf_counter_ns:

- ``recv_into``: the read alone, without the stamp (asyncio's transport and picows read this way);
- ``recvmsg_into``: the read with the stamp's ancillary data (the busy client's read);
- ``recvmsg_into + rx_stamp``: and the stamp parsed out of it;
- ``busy client``: ``BusyWsSession._on_readable`` from its first line to ``on_message`` (read and stamp, TLS
  decryption into its buffer, frame split, delivery), the session opened in memory on that socket.

The busy client's p50 minus ``recvmsg_into + rx_stamp``'s is what runs in Python after the kernel (decrypt, split,
deliver); ``benchmarks.tls_read`` and ``benchmarks.ws_parse`` measure two of those parts alone. Each contender has
its own connection; rounds are interleaved (the order reversed every other round); the busy client's payloads are
checked against the frames sent.

    python -m benchmarks.rx_path [--quick] [--json PATH]
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import socket
import time
from collections.abc import Callable, Iterator

import numpy as np
import trustme
from websockets.frames import Frame, Opcode

from benchmarks.common import emit, measure_rounds, parse_sized
from benchmarks.feed_parse import make_frames
from benchmarks.tls_read import TlsPair
from benchmarks.ws_parse import MAX_SIZE, open_protocol
from caerus.net.busy import READ_SIZE, BusyWsSession
from caerus.net.stamps import RX_ANCILLARY_SIZE, enable_rx_timestamps, rx_stamp
from caerus.net.wsframes import FrameSplitter

URL = "wss://localhost/ws"
CONTENDERS = ("recv_into", "recvmsg_into", "recvmsg_into + rx_stamp", "busy client")


@contextlib.contextmanager
def tcp_pair(stamped: bool) -> Iterator[tuple[socket.socket, socket.socket]]:
    """(reader, sender) over loopback TCP; the reader non-blocking, with receive stamps when ``stamped``."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        reader = socket.create_connection(listener.getsockname(), timeout=5)
        sender, _ = listener.accept()
    with reader, sender:
        for s in (reader, sender):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if stamped and not enable_rx_timestamps(reader):
            raise SystemExit("rx_path: the kernel refused SO_TIMESTAMPING on a loopback TCP socket")
        reader.setblocking(False)
        yield reader, sender


class OpenSession:
    """A BusyWsSession as after its opening (TLS done in memory, the protocol OPEN, the splitter on), on ``reader``.

    The opening's handshake over the network is what ``serve`` does and is not measured here; this sets the state
    it leaves behind, so ``_on_readable`` runs its hot path unchanged.
    """

    def __init__(self, ca: trustme.CA, reader: socket.socket, loop: asyncio.AbstractEventLoop) -> None:
        self.got: list[bytes] = []
        self.t_callback = 0
        self.session = s = BusyWsSession(URL, 1, self._on_message)
        self.tls = TlsPair(ca, client_bios=(s._in, s._out))
        s._sock, s._tls = reader, self.tls.client
        s._proto = open_protocol()
        s._splitter = FrameSplitter(MAX_SIZE, s._to_protocol)
        s._plain = s._plain_frames
        s._ended = loop.create_future()

    def _on_message(self, raw: bytes, t_recv: int, session: object) -> bool:
        self.t_callback = time.perf_counter_ns()
        self.got.append(raw)
        return True


def _read(name: str, reader: socket.socket) -> Callable[[], int]:
    """The read ``name`` on ``reader``; it returns the bytes read."""
    buf = bytearray(READ_SIZE)
    buffers = [buf]
    recv_into, recvmsg_into = reader.recv_into, reader.recvmsg_into

    def plain() -> int:
        return recv_into(buf)

    def with_anc() -> int:
        return recvmsg_into(buffers, RX_ANCILLARY_SIZE)[0]

    def with_stamp() -> int:
        size, anc, _, _ = recvmsg_into(buffers, RX_ANCILLARY_SIZE)
        rx_stamp(anc)
        return size

    return {"recv_into": plain, "recvmsg_into": with_anc, "recvmsg_into + rx_stamp": with_stamp}[name]


def _round_reads(read: Callable[[], int], sender: socket.socket, records: list[bytes]) -> np.ndarray:
    pc = time.perf_counter_ns
    out = np.empty(len(records), dtype=np.int64)
    for i, record in enumerate(records):
        sender.sendall(record)
        t0 = pc()
        size = read()
        out[i] = pc() - t0
        if size != len(record):  # a split read would leave bytes for the next one and time two half reads
            raise SystemExit(f"rx_path: a read took {size} bytes of a {len(record)}-byte record")
    return out


def round_session(op: OpenSession, sender: socket.socket, frames: list[bytes], payloads: list[bytes],
                   before_each: Callable[[], None] | None = None) -> np.ndarray:
    """Each frame as one TLS record into the socket, ``_on_readable`` timed to the callback; ``before_each`` runs
    untimed before each record is sent (benchmarks.rx_idle's idle gap)."""
    pc = time.perf_counter_ns
    on_readable = op.session._on_readable
    records = op.tls.records(frames)
    out = np.empty(len(records), dtype=np.int64)
    op.got.clear()
    for i, record in enumerate(records):
        if before_each is not None:
            before_each()
        sender.sendall(record)
        t0 = pc()
        on_readable()
        out[i] = op.t_callback - t0
    if op.got != payloads:
        raise SystemExit("the busy client delivered other payloads than were sent")
    return out


def main(argv: list[str] | None = None) -> int:
    args, n = parse_sized(argv, __doc__, "messages", "messages per contender per round", 2_000, 10_000)
    rounds = 3 if args.quick else 7
    payloads = make_frames(n, args.seed)[0]
    frames = [Frame(Opcode.TEXT, f).serialize(mask=False) for f in payloads]
    ca = trustme.CA()
    loop = asyncio.new_event_loop()
    try:
        with contextlib.ExitStack() as stack:
            pairs = {name: stack.enter_context(tcp_pair(stamped=name != "recv_into")) for name in CONTENDERS}
            reads = {name: _read(name, reader) for name, (reader, _) in pairs.items() if name != "busy client"}
            session = OpenSession(ca, pairs["busy client"][0], loop)
            # the same bytes a record carries, for the plain reads (their content does not matter to recv)
            records = TlsPair(ca).records(frames)
            gc.collect()
            gc.freeze()

            def measure(name: str) -> np.ndarray:
                sender = pairs[name][1]
                if name == "busy client":
                    return round_session(session, sender, frames, payloads)
                return _round_reads(reads[name], sender, records)

            metrics = measure_rounds(rounds, CONTENDERS, measure)
    finally:
        gc.unfreeze()
        loop.close()
    p50 = {name: m["p50"] for name, m in metrics.items()}
    ratios = {
        "recvmsg_into/recv_into (p50)": p50["recvmsg_into"] / p50["recv_into"],
        "busy client/recv_into (p50)": p50["busy client"] / p50["recv_into"],
        "kernel read share of the busy client (p50)": p50["recvmsg_into + rx_stamp"] / p50["busy client"],
    }
    emit("rx_path", metrics, ratios=ratios, quick=args.quick, json_path=args.json,
         extra={"messages_per_round": n, "rounds": rounds,
                "python_after_the_read_p50_ns": p50["busy client"] - p50["recvmsg_into + rx_stamp"]})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
