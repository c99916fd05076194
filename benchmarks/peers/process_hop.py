"""Process hop: one-way latency of a stamp from a writer process to a reader process, Caerus's SWMR ring against
multiprocessing.Queue, pyzmq (PUSH/PULL over ipc; PAIR over inproc between two threads of one process, which is what
inproc is for), multiprocessing.shared_memory guarded by a naive lock, and faster-fifo.

The processes, pinning (writer on the first CPU, reader on the last), pacing and stamping are benchmarks.ipc_hop's
(``_run``): one definition of how a hop is measured. The ring's reader spins and its writer spins between messages
(the fleet's setting); the others block in their receive and their writer sleeps, as each is normally used (a
spinning writer would starve multiprocessing.Queue's feeder thread). A spinning ring against blocking peers is not
like for like (the peers pay a kernel wake-up the ring never waits for), so pyzmq ipc also runs spin against spin:
its reader polls with ``recv(zmq.NOBLOCK)`` (pyzmq's non-blocking receive: ``zmq.Again`` when nothing is there)
and its writer spins between messages, as the ring's do; both pyzmq rows stand side by side.

benchmarks/protocol's rules: every transport runs the same number of interleaved rounds (the order rotated each
round), in fresh processes each round, whose first ``ipc_hop.WARMUP`` messages are dropped (the warm-up, inside
every round); p50/p99 over all rounds.
"""

from __future__ import annotations

import os
import struct
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks import ipc_hop
from benchmarks.peers.table import Row, rows_for
from caerus.plan import available_cpus
from caerus.records.book import BOOK_T_RECV

_Q = struct.Struct("<qq")  # (sequence, stamp) of the shared-memory transport
LOST = 1 << 62  # the stamp a lost message gets: its sample is negative, dropped and counted


def _swmr_hybrid(seg: str) -> tuple[Callable, Callable]:
    """The ring with the reader the fleet runs on a shared core: hybrid wait (spin, then sched_yield when idle)."""
    from caerus import wire
    from caerus.ipc.swmr import SwmrReader
    from caerus.ipc.wait import make_waiter

    writer_setup, _ = ipc_hop._swmr(seg)

    def reader_setup() -> Callable[[], int]:
        r = SwmrReader.attach(seg, wire.BOOK, timeout=30)
        read_next, waiter, t_idx = r.read_next, make_waiter("hybrid"), BOOK_T_RECV
        idle, reset = waiter.idle, waiter.reset

        def recv() -> int:
            while True:
                rec = read_next()
                if rec is not None:
                    reset()
                    return rec[t_idx]  # type: ignore[no-any-return]
                idle()

        return recv

    return writer_setup, reader_setup


def _zmq_ipc(path: str, n: int, spin: bool = False) -> tuple[Callable, Callable]:
    """PUSH/PULL over ipc; ``spin``: the reader polls with NOBLOCK instead of blocking in recv."""

    def writer_setup() -> Callable[[int], None]:
        import zmq

        ctx = zmq.Context()
        sock = ctx.socket(zmq.PUSH)
        sock.connect(f"ipc://{path}")
        raw_send = sock.send
        sent = [0]

        def send(t: int) -> None:
            raw_send(t.to_bytes(8, "little"))
            sent[0] += 1
            if sent[0] == n:  # the process ends with os._exit: flush what zmq's I/O thread still holds first
                sock.close(linger=10_000)
                ctx.term()

        return send

    def reader_setup() -> Callable[[], int]:
        import zmq

        sock = zmq.Context.instance().socket(zmq.PULL)
        sock.bind(f"ipc://{path}")
        recv = sock.recv
        time.sleep(0.2)  # the writer connects: messages sent before the pipe exists would wait in its queue
        if not spin:
            return lambda: int.from_bytes(recv(), "little")
        noblock, again = zmq.NOBLOCK, zmq.Again

        def recv_spin() -> int:
            while True:
                try:
                    return int.from_bytes(recv(noblock), "little")
                except again:
                    pass

        return recv_spin

    return writer_setup, reader_setup


def _shm_lock() -> tuple[Callable, Callable, object]:
    """multiprocessing.shared_memory with a multiprocessing.Lock around every write and every poll (the naive way)."""
    from multiprocessing import shared_memory

    shm = shared_memory.SharedMemory(create=True, size=_Q.size)
    lock = ipc_hop.CTX.Lock()

    def writer_setup() -> Callable[[int], None]:
        buf = shm.buf
        seq = [0]

        def send(t: int) -> None:
            seq[0] += 1
            with lock:
                _Q.pack_into(buf, 0, seq[0], t)

        return send

    def reader_setup() -> Callable[[], int]:
        buf = shm.buf
        last = [0, 0]  # newest sequence seen, messages overwritten before this reader saw them (still owed)

        def recv() -> int:
            if last[1]:  # a message overwritten unseen: a one-slot mailbox loses it; counted, never timed
                last[1] -= 1
                return LOST
            while True:
                with lock:
                    s, t = _Q.unpack_from(buf, 0)
                if s != last[0]:
                    last[1] = s - last[0] - 1
                    last[0] = s
                    return t  # type: ignore[no-any-return]

        return recv

    return writer_setup, reader_setup, shm


def _zmq_inproc(n: int, gap_ns: int) -> np.ndarray:
    """PAIR over inproc between a writer thread and this thread (the GIL is part of what inproc costs in CPython)."""
    import zmq

    ctx = zmq.Context.instance()
    a, b = ctx.socket(zmq.PAIR), ctx.socket(zmq.PAIR)
    b.bind("inproc://peers-hop")
    a.connect("inproc://peers-hop")

    def writer() -> None:
        ipc_hop._writer_loop(lambda t: a.send(t.to_bytes(8, "little")), n, gap_ns, ipc_hop._pace_sleep)

    th = threading.Thread(target=writer, daemon=True)
    b.setsockopt(zmq.RCVTIMEO, 60_000)
    out = np.zeros(n, dtype=np.int64)
    th.start()
    for i in range(n):
        msg = b.recv()
        out[i] = time.perf_counter_ns() - int.from_bytes(msg, "little")
    th.join(60)
    a.close(0)
    b.close(0)
    return out[ipc_hop.WARMUP:]


def compare(quick: bool, settings: dict[str, object]) -> list[Row]:
    from importlib.metadata import version

    from benchmarks import protocol

    n = (3000 if quick else 20_000) + ipc_hop.WARMUP
    rounds = 2 if quick else 4
    gap_ns = 300_000
    cpus_all = available_cpus()
    cpus = (cpus_all[0], cpus_all[-1])
    zmq_v = version("pyzmq")
    names = ["caerus SWMR ring", "caerus SWMR ring, hybrid reader", "multiprocessing.Queue",
             f"pyzmq {zmq_v} ipc (PUSH/PULL)", f"pyzmq {zmq_v} ipc (PUSH/PULL), spinning",
             f"pyzmq {zmq_v} inproc (PAIR, threads)", "shared_memory + naive Lock",
             f"faster-fifo {version('faster-fifo')}"]
    lost = dict.fromkeys(names, 0)
    with tempfile.TemporaryDirectory(prefix="caerus-peers-hop-") as tmp:
        out_dir = Path(tmp)

        def transport(k: int, rnd: int) -> tuple[Callable, Callable, Callable[[int], None], object]:
            """(writer setup, reader setup, writer pacing, shared memory to release) of transport ``k``, round
            ``rnd``: fresh segments, sockets and paths every round."""
            if k == 0:
                return (*ipc_hop._swmr(f"peers.hop{rnd}"), ipc_hop._pace_spin, None)
            if k == 1:
                return (*_swmr_hybrid(f"peers.hophy{rnd}"), ipc_hop._pace_spin, None)
            if k == 2:
                return (*ipc_hop._mp_queue(), ipc_hop._pace_sleep, None)
            if k in (3, 4):
                spin = k == 4
                return (*_zmq_ipc(str(out_dir / f"zmq{k}-{rnd}.sock"), n, spin),
                        ipc_hop._pace_spin if spin else ipc_hop._pace_sleep, None)
            if k == 6:
                w, r, shm = _shm_lock()
                return w, r, ipc_hop._pace_sleep, shm
            return (*ipc_hop._faster_fifo(), ipc_hop._pace_sleep, None)

        def one_round(k: int, rnd: int) -> np.ndarray:
            if k == 5:
                return _zmq_inproc(n, gap_ns)
            w, r, pace, shm = transport(k, rnd)
            try:
                s = ipc_hop._run(f"r{rnd}-{k}", w, r, n, gap_ns, pace, cpus, out_dir)
            finally:
                if shm is not None:
                    shm.close()  # type: ignore[attr-defined]
                    shm.unlink()  # type: ignore[attr-defined]
            lost[names[k]] += int((s < 0).sum())
            return s[s >= 0]

        warm = f"inside each round: fresh processes, their first {ipc_hop.WARMUP} messages dropped"
        timed = protocol.interleaved([protocol.Contender(name, lambda rnd, k=k: one_round(k, rnd), None, warm)
                                      for k, name in enumerate(names)], rounds)
    settings["hop"] = {"load_average_at_end": os.getloadavg(),
                       "samples_per_round": n - ipc_hop.WARMUP, "rounds": rounds, "gap_us": gap_ns / 1000,
                       "writer_cpu": cpus[0], "reader_cpu": cpus[1]}
    settings.setdefault("protocol", {})["process hop"] = protocol.as_json(timed)  # type: ignore[index]
    samples = {t.name: np.concatenate(t.results) for t in timed}
    notes = {names[0]: "reader spins, writer spins (a core each)",
             names[1]: "writer spins, reader spins then sched_yields (the fleet's setting on a shared core)",
             names[3]: "reader blocks in recv, writer sleeps between messages (its usual use): pays a kernel wake-up",
             names[4]: "reader polls recv(NOBLOCK), writer spins between messages: spin against spin, like the ring",
             names[5]: "two threads of one process: not a process hop",
             names[6]: f"one-slot mailbox polled under the lock; {lost[names[6]]} messages overwritten unseen"}
    return rows_for(HOP, samples, names[0], notes)


HOP = "process hop (one-way, 300 us pacing)"
