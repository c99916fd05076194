"""How late the emulator sends what it schedules: one sample per top-of-book frame actually sent.

Each Binance ``bookTicker`` and Hyperliquid ``bbo`` frame is stamped with its scheduled time as the exchange time
(caerus.sim.core.driver). Its lateness is the wall time just after it was handed to the subscribers' sockets minus that
scheduled time, so on loopback a feed's information age (``t_recv - t_exchange``) splits into emulator lateness +
wire + the client's stack. Samples go into a preallocated buffer per venue and are written once a second to
``<metrics-dir>/venue-sim.hlog`` (tags ``emulator_lateness.binance`` / ``.hyperliquid``), which the session merges
with the fleet's histograms.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from caerus.metrics.hdr import IntervalLog, SampleBuffer

TAGS = ("emulator_lateness.binance", "emulator_lateness.hyperliquid")
FLUSH_S = 1.0


class Lateness:
    """Per-venue lateness samples (ns), drained to an interval log when one is given."""

    def __init__(self, capacity: int = 1 << 15) -> None:
        self.buffers = {"binance": SampleBuffer(capacity), "hyperliquid": SampleBuffer(capacity)}
        self._log: IntervalLog | None = None

    def record(self, venue: str, late_ns: int) -> None:
        buf = self.buffers[venue]
        if buf.n < buf.capacity:
            buf.arr[buf.n] = late_ns
            buf.n += 1
        else:
            buf.full += 1

    def open_log(self, metrics_dir: Path) -> None:
        metrics_dir.mkdir(parents=True, exist_ok=True)
        self._log = IntervalLog(metrics_dir / "venue-sim.hlog", list(TAGS), interval_s=FLUSH_S,
                                comment="caerus venue-sim: emulator lateness (actual send - scheduled time)")

    def drain(self) -> None:
        log = self._log
        for venue, buf in self.buffers.items():
            if log is not None:
                log.drain(f"emulator_lateness.{venue}", buf)
            else:
                buf.n = 0
        if log is not None:
            log.maybe_flush()

    async def run(self) -> None:
        """Drain once a second until cancelled (then the last samples are written by ``close``)."""
        while True:
            await asyncio.sleep(FLUSH_S)
            self.drain()

    def close(self) -> None:
        if self._log is not None:
            self.drain()
            with contextlib.suppress(OSError):
                self._log.close()
            self._log = None
