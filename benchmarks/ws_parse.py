"""The busy client's WebSocket framing per read: its frame splitter against ``websockets``' sans-I/O protocol.

Both take the plaintext of one read holding one venue frame (Binance bookTicker, Hyperliquid bbo, as the server
sends them: unmasked, unfragmented text) and give the message payload as ``bytes``, as the busy client hands it to
the feed's decoder. TLS decryption, the socket and the decoder are left out: they are the same for both. Rounds
are interleaved; every round first checks that both gave the same payloads.

    python -m benchmarks.ws_parse [--quick] [--json PATH]

``<frame> websockets`` = ``ClientProtocol.receive_data`` + ``events_received`` + ``bytes(frame.data)`` (what the
busy client did before the splitter); ``<frame> splitter`` = ``caerus.net.wsframes.FrameSplitter.feed``.
perf_counter_ns around each read, so ~50-100 ns of timer overhead is in both.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

import numpy as np
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.protocol import State
from websockets.uri import parse_uri

from benchmarks.common import emit, parse_sized, summarize, time_reads
from benchmarks.feed_parse import make_frames
from caerus.net.wsframes import FrameSplitter

MAX_SIZE = 1 << 20


def open_protocol() -> ClientProtocol:
    """A client protocol in the OPEN state, its parser waiting for the first frame (as after the upgrade)."""
    proto = ClientProtocol(parse_uri("wss://bench.invalid/ws"), max_size=MAX_SIZE)
    proto.state = State.OPEN
    proto.parser = proto.parse()
    next(proto.parser)
    return proto


def _contenders() -> dict[str, Callable[[bytes, list[bytes]], None]]:
    proto = open_protocol()
    splitter = FrameSplitter(MAX_SIZE, lambda frame: [])
    scratch: list[Any] = []

    def via_websockets(frame: bytes, got: list[bytes]) -> None:
        proto.receive_data(frame)
        for event in proto.events_received():
            got.append(bytes(event.data))

    def via_splitter(frame: bytes, got: list[bytes]) -> None:
        splitter.feed(frame, scratch)
        got += scratch
        scratch.clear()

    return {"websockets": via_websockets, "splitter": via_splitter}


def main(argv: list[str] | None = None) -> int:
    args, n = parse_sized(argv, __doc__, "frames", "frames per kind per round", 5_000, 20_000)
    rounds = 3 if args.quick else 7
    bt, bbo = make_frames(n, args.seed)
    kinds = {"bookTicker": bt, "bbo": bbo}
    wire = {k: [Frame(Opcode.TEXT, f).serialize(mask=False) for f in frames] for k, frames in kinds.items()}
    samples: dict[str, list[np.ndarray]] = {}
    gc.collect()
    gc.freeze()
    for rnd in range(rounds + 1):  # round 0 warms up and is dropped
        for kind, frames in wire.items():
            for name, read in _contenders().items():
                t, got = time_reads(read, frames)
                if got != kinds[kind]:
                    raise SystemExit(f"ws_parse: {name} gave other payloads than were sent ({kind}, round {rnd})")
                if rnd:
                    samples.setdefault(f"{kind} {name}", []).append(t)
    metrics = {name: summarize(np.concatenate(parts)) for name, parts in samples.items()}
    p50 = {k: v["p50"] for k, v in metrics.items()}
    ratios = {f"{kind} websockets/splitter (p50)": p50[f"{kind} websockets"] / p50[f"{kind} splitter"]
              for kind in kinds}
    emit("ws_parse", metrics, ratios=ratios, quick=args.quick, json_path=args.json,
         extra={"frames_per_round": n, "rounds": rounds})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
