"""Process hop: one-way latency of a stamp from a writer process to a reader process, Caerus's SWMR ring against
multiprocessing.Queue, pyzmq (PUSH/PULL over ipc; PAIR over inproc between two threads of one process, which is what
inproc is for), multiprocessing.shared_memory guarded by a naive lock, and faster-fifo.

The processes, pinning (writer on the first CPU, reader on the last), pacing and stamping are benchmarks.ipc_hop's
(``_run``): one definition of how a hop is measured. The ring's reader spins and its writer spins between messages
(the fleet's setting); the others block in their receive and their writer sleeps, as each is normally used (a
spinning writer would starve multiprocessing.Queue's feeder thread). Rounds are interleaved: every transport runs
once per round, in the same order.
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
        read_next, waiter, t_idx = r.read_next, make_waiter("hybrid"), wire.BOOK_I.T_RECV
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


def _zmq_ipc(path: str, n: int) -> tuple[Callable, Callable]:
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
        return lambda: int.from_bytes(recv(), "little")

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

    n = (3000 if quick else 20_000) + ipc_hop.WARMUP
    rounds = 2 if quick else 4
    gap_ns = 300_000
    cpus_all = available_cpus()
    cpus = (cpus_all[0], cpus_all[-1])
    names = ["caerus SWMR ring", "caerus SWMR ring, hybrid reader", "multiprocessing.Queue",
             f"pyzmq {version('pyzmq')} ipc (PUSH/PULL)",
             f"pyzmq {version('pyzmq')} inproc (PAIR, threads)", "shared_memory + naive Lock",
             f"faster-fifo {version('faster-fifo')}"]
    parts: dict[str, list[np.ndarray]] = {k: [] for k in names}
    lost = dict.fromkeys(names, 0)
    with tempfile.TemporaryDirectory(prefix="caerus-peers-hop-") as tmp:
        out_dir = Path(tmp)
        for rnd in range(rounds):
            shm_w, shm_r, shm = _shm_lock()
            runs = {
                names[0]: (*ipc_hop._swmr(f"peers.hop{rnd}"), ipc_hop._pace_spin),
                names[1]: (*_swmr_hybrid(f"peers.hophy{rnd}"), ipc_hop._pace_spin),
                names[2]: (*ipc_hop._mp_queue(), ipc_hop._pace_sleep),
                names[3]: (*_zmq_ipc(str(out_dir / f"zmq{rnd}.sock"), n), ipc_hop._pace_sleep),
                names[5]: (shm_w, shm_r, ipc_hop._pace_sleep),
                names[6]: (*ipc_hop._faster_fifo(), ipc_hop._pace_sleep),
            }
            try:
                for name in names:
                    if name == names[4]:
                        parts[name].append(_zmq_inproc(n, gap_ns))
                        continue
                    w, r, pace = runs[name]
                    s = ipc_hop._run(f"r{rnd}-{names.index(name)}", w, r, n, gap_ns, pace, cpus, out_dir)
                    lost[name] += int((s < 0).sum())
                    parts[name].append(s[s >= 0])
            finally:
                shm.close()  # type: ignore[attr-defined]
                shm.unlink()  # type: ignore[attr-defined]
    settings["hop"] = {"load_average_at_end": os.getloadavg(),
                       "samples_per_round": n - ipc_hop.WARMUP, "rounds": rounds, "gap_us": gap_ns / 1000,
                       "writer_cpu": cpus[0], "reader_cpu": cpus[1]}
    samples = {k: np.concatenate(v) for k, v in parts.items()}
    notes = {names[0]: "reader spins, writer spins (a core each)",
             names[1]: "writer spins, reader spins then sched_yields (the fleet's setting on a shared core)",
             names[4]: "two threads of one process: not a process hop",
             names[5]: f"one-slot mailbox polled under the lock; {lost[names[5]]} messages overwritten unseen"}
    return rows_for("process hop (one-way, 300 us pacing)", samples, names[0], notes)
