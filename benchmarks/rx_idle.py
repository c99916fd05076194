"""The busy client's receive path after its loop sat idle, left cold or kept warm by a shadow session.

Issue 30 asks to keep the feed's parse path warm between messages (a synthetic frame off the record path, the
feed-side twin of shadow orders), on the theory that code which sat idle runs slower: its caches and branch state go
cold while the loop polls. This measures whether that holds for the busy client's path, before anything is built.

One process, as ``benchmarks.rx_path``: a loopback TCP connection with receive stamps and the session opened in
memory on it, one bookTicker frame per TLS record. Per message the loop first idles for the gap, polling an epoll
with timeout 0 as the spin policy's selector does, then the record is sent (untimed) and ``_on_readable`` is timed
from its first line to ``on_message``. Contenders, interleaved per round (the order reversed every other round):

- ``back to back``: no gap (the reference: the path as warm as it gets);
- ``<gap> us idle, cold``: the gap spent polling only;
- ``<gap> us idle, warm``: the gap spent polling, and every 100 us a shadow session (its own socket and TLS) reads a
  synthetic record through the very same code: read and stamp, decrypt, split, deliver.

    python -m benchmarks.rx_idle [--quick] [--json PATH] [--messages N]
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import select
import socket
import time
from collections.abc import Callable

import numpy as np
import trustme
from websockets.frames import Frame, Opcode

from benchmarks.common import emit, measure_rounds, parse_sized
from benchmarks.feed_parse import make_frames
from benchmarks.rx_path import OpenSession, round_session, tcp_pair

WARM_EVERY_NS = 100_000  # how often the shadow session reads a record while the loop idles
BACK_TO_BACK = "back to back"


def contenders(gaps_us: tuple[int, ...]) -> tuple[str, ...]:
    return (BACK_TO_BACK, *(f"{g} us idle, {mode}" for g in gaps_us for mode in ("cold", "warm")))


class Shadow:
    """A second opened session on its own socket, fed synthetic records: the warm-up that never reaches a ring."""

    def __init__(self, op: OpenSession, sender: socket.socket, frames: list[bytes]) -> None:
        self.op = op
        self.sender = sender
        self.frames = frames
        self.records: list[bytes] = []
        self.reads = 0

    def read_one(self) -> None:
        if not self.records:  # records in TLS sequence order, made a batch at a time
            self.records = self.op.tls.records(self.frames)[::-1]
        self.sender.sendall(self.records.pop())
        self.op.session._on_readable()
        self.reads += 1


def idle_gap(gap_ns: int, shadow: Shadow | None, poll: select.epoll) -> Callable[[], None]:
    """The loop idling ``gap_ns`` before a message: epoll polled with timeout 0, and with a ``shadow`` one of its
    records read every WARM_EVERY_NS."""
    pc = time.perf_counter_ns

    def idle() -> None:
        now = pc()
        end, next_warm = now + gap_ns, now
        while now < end:
            poll.poll(0)
            if shadow is not None and now >= next_warm:
                shadow.read_one()
                next_warm = pc() + WARM_EVERY_NS
            now = pc()

    return idle


def main(argv: list[str] | None = None) -> int:
    args, n = parse_sized(argv, __doc__, "messages", "messages per contender per round", 150, 400)
    gaps_us = (100, 1000) if args.quick else (100, 1000, 10_000)
    rounds = 3 if args.quick else 5
    payloads, _ = make_frames(n * 2, args.seed)
    frames = [Frame(Opcode.TEXT, f).serialize(mask=False) for f in payloads[:n]]
    shadow_frames = [Frame(Opcode.TEXT, f).serialize(mask=False) for f in payloads[n:]]
    names = contenders(gaps_us)
    ca = trustme.CA()
    loop = asyncio.new_event_loop()
    shadow: Shadow | None = None
    try:
        with contextlib.ExitStack() as stack:
            reader, sender = stack.enter_context(tcp_pair(stamped=True))
            shadow_reader, shadow_sender = stack.enter_context(tcp_pair(stamped=True))
            op = OpenSession(ca, reader, loop)
            shadow = Shadow(OpenSession(ca, shadow_reader, loop), shadow_sender, shadow_frames)
            poll = stack.enter_context(contextlib.closing(select.epoll()))
            poll.register(reader.fileno(), select.EPOLLIN)
            gc.collect()
            gc.freeze()

            def measure(name: str) -> np.ndarray:
                gap_us = 0 if name == BACK_TO_BACK else int(name.split(" ", 1)[0])
                idle = idle_gap(gap_us * 1000, shadow if name.endswith("warm") else None, poll) if gap_us else None
                return round_session(op, sender, frames, payloads[:n], idle)

            metrics = measure_rounds(rounds, names, measure)
    finally:
        gc.unfreeze()
        loop.close()
    ratios = {f"{g} us idle warm/cold (p50)":
              metrics[f"{g} us idle, warm"]["p50"] / metrics[f"{g} us idle, cold"]["p50"] for g in gaps_us}
    ratios.update({f"{g} us idle cold/back to back (p50)":
                   metrics[f"{g} us idle, cold"]["p50"] / metrics[BACK_TO_BACK]["p50"] for g in gaps_us})
    emit("rx_idle", metrics, ratios=ratios, quick=args.quick, json_path=args.json,
         extra={"messages_per_round": n, "rounds": rounds, "gaps_us": list(gaps_us),
                "warm_every_us": WARM_EVERY_NS // 1000, "shadow_reads": shadow.reads if shadow else 0})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
