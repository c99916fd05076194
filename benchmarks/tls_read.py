"""The busy client's TLS decryption per read: into its preallocated buffer, against ``SSLObject.read(n)``'s own.

One TLS record holding one venue frame (Binance bookTicker, as the server sends it) goes into the client's
incoming ``MemoryBIO``; each contender decrypts it and hands the plaintext on as ``bytes``, as
``caerus.net.busy`` gives it to its frame splitter:

- ``buffer``: ``read(READ_SIZE, buffer)`` into one reused bytearray, then ``bytes(view[:n])`` (what the client does);
- ``alloc``: ``read(READ_SIZE)``, which allocates a READ_SIZE (256 KiB) bytes object per call and shrinks it to
  the n bytes read. Where that allocation comes from is glibc's choice: above its mmap threshold (128 KiB in a
  new process) it is an mmap, the shrink an mremap and the free a munmap, three syscalls per read; once the
  process has freed a larger mmapped block, the dynamic threshold has risen and it comes from the heap. A
  process's history decides which, so both are measured, the threshold fixed with ``mallopt`` for each round:
  ``alloc mmap`` (128 KiB) and ``alloc heap`` (1 MiB). On a libc without ``mallopt`` only ``alloc`` is run.
  Even from the heap the cost is not fixed: a block that merges back into the top of the heap can be trimmed and
  regrown (brk) on every read; a hand-run loop in a fresh interpreter, threshold at 1 MiB, measured 7.5 us a read.

Rounds are interleaved and each contender has its own TLS connection (an in-memory pair, trustme certificate);
every plaintext is checked against what was sent (outside the timed read). perf_counter_ns around each read.

    python -m benchmarks.tls_read [--quick] [--json PATH]
"""

from __future__ import annotations

import gc
import ssl
from collections.abc import Callable

import numpy as np
import trustme
from websockets.frames import Frame, Opcode

from benchmarks.common import emit, measure_rounds, parse_sized, time_reads
from benchmarks.feed_parse import make_frames
from caerus.net.busy import READ_SIZE
from caerus.runtime import malloc

THRESHOLDS = {"alloc mmap": 128 * 1024, "alloc heap": 1 << 20}


class TlsPair:
    """A TLS client and server over memory BIOs, handshake done: the server encrypts, the client decrypts."""

    def __init__(self, ca: trustme.CA, client_bios: tuple[ssl.MemoryBIO, ssl.MemoryBIO] | None = None) -> None:
        """``client_bios``: the client's (incoming, outgoing) BIOs when it has its own (a BusyWsSession's)."""
        server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ca.issue_cert("localhost").configure_cert(server_ctx)
        client_ctx = ssl.create_default_context()
        ca.configure_trust(client_ctx)
        self.s_in, self.s_out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.c_in, self.c_out = client_bios or (ssl.MemoryBIO(), ssl.MemoryBIO())
        self.server = server_ctx.wrap_bio(self.s_in, self.s_out, server_side=True)
        self.client = client_ctx.wrap_bio(self.c_in, self.c_out, server_hostname="localhost")
        for _ in range(10):
            done = [self._step(self.client), self._step(self.server)]
            self.s_in.write(self.c_out.read())
            self.c_in.write(self.s_out.read())
            if all(done):
                break
        else:
            raise SystemExit("tls_read: the in-memory TLS handshake did not complete")

    @staticmethod
    def _step(end: ssl.SSLObject) -> bool:
        try:
            end.do_handshake()
            return True
        except ssl.SSLWantReadError:
            return False

    def records(self, frames: list[bytes]) -> list[bytes]:
        """Each frame as the ciphertext of one server write."""
        out = []
        for f in frames:
            self.server.write(f)
            out.append(self.s_out.read())
        return out


def _contenders(pairs: dict[str, TlsPair]) -> dict[str, Callable[[bytes, list[bytes]], None]]:
    def alloc(pair: TlsPair) -> Callable[[bytes, list[bytes]], None]:
        bio, read = pair.c_in, pair.client.read

        def via_alloc(record: bytes, got: list[bytes]) -> None:
            bio.write(record)
            got.append(read(READ_SIZE))
        return via_alloc

    def buffered(pair: TlsPair) -> Callable[[bytes, list[bytes]], None]:
        bio, read = pair.c_in, pair.client.read
        buf = bytearray(READ_SIZE)
        view = memoryview(buf)

        def via_buffer(record: bytes, got: list[bytes]) -> None:
            bio.write(record)
            size: int = read(READ_SIZE, buf)  # type: ignore[assignment]  # with a buffer: the byte count
            got.append(bytes(view[:size]))
        return via_buffer

    return {name: buffered(pair) if name == "buffer" else alloc(pair) for name, pair in pairs.items()}


def _timed(read: Callable[[bytes, list[bytes]], None], records: list[bytes], sent: list[bytes]) -> np.ndarray:
    """ns per record; each plaintext is checked against what was sent (untimed), then dropped, as the client
    drops it once split (kept, every ``alloc`` block would stay mapped and skew the reads after it)."""

    def check_and_drop(i: int, got: list[bytes]) -> None:
        if got.pop() != sent[i]:
            raise SystemExit(f"tls_read: record {i} decrypted to other bytes than were sent")

    return time_reads(read, records, check_and_drop)[0]


def main(argv: list[str] | None = None) -> int:
    args, n = parse_sized(argv, __doc__, "frames", "records per contender per round", 2_000, 10_000)
    rounds = 3 if args.quick else 7
    frames = [Frame(Opcode.TEXT, f).serialize(mask=False) for f in make_frames(n, args.seed)[0]]
    mallopt = malloc.mallopt()
    names = ["buffer", *(THRESHOLDS if mallopt is not None else ["alloc"])]
    ca = trustme.CA()
    pairs = {name: TlsPair(ca) for name in names}
    contenders = _contenders(pairs)
    gc.collect()
    gc.freeze()

    def measure(name: str) -> np.ndarray:
        records = pairs[name].records(frames)
        if mallopt is not None and name in THRESHOLDS:
            mallopt(malloc.M_MMAP_THRESHOLD, THRESHOLDS[name])
        return _timed(contenders[name], records, frames)

    metrics = measure_rounds(rounds, names, measure)
    if mallopt is not None:
        mallopt(malloc.M_MMAP_THRESHOLD, THRESHOLDS["alloc heap"])
    ratios = {f"{name}/buffer (p50)": metrics[name]["p50"] / metrics["buffer"]["p50"] for name in names[1:]}
    emit("tls_read", metrics, ratios=ratios, quick=args.quick, json_path=args.json,
         extra={"records_per_round": n, "rounds": rounds, "read_size": READ_SIZE,
                "mallopt": mallopt is not None})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
