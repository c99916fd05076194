"""Placing a file's receive clock against the venue's: the offset, its spread, and the rule for rows lacking one.

Sign convention (the key ``clock_offset_ns`` in ``<store>/import.json``): how far the receive clock runs *ahead* of
the venue clock, the systematic part of ``t_recv - t_exchange``: the median over every frame that carries an event
time (Binance ``E`` of bookTicker, depth and trade frames; Hyperliquid block ``time`` of l2Book/bbo). Positive when
receive stamps are later than the venue's; it includes the one-way latency (one clock cannot tell latency from clock
error). hftbacktest's 2024-08-08 recordings come out near -1.27e9: their receive stamps run ~1.27 s *behind* ``E``.

Rows without a venue time (spot bookTicker) get ``t_exchange = t_recv - clock_offset_ns`` and rows without a receive
time (a CSV of venue times) get ``t_recv = t_exchange + clock_offset_ns``; both are marked derived in import.json. A
file with receive stamps but no event time at all, or with event times but no receive stamps, has no measurable
offset: it is refused unless ``--clock-offset-ms`` gives one. Receive times are stored as measured, never shifted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: samples kept per file for the quantiles: beyond it every other sample is dropped (systematic, deterministic)
MAX_SAMPLES = 4_000_000


class ClockSamples:
    """Receive-minus-event samples of one file, thinned evenly once there are more than MAX_SAMPLES."""

    def __init__(self) -> None:
        self._parts: list[np.ndarray] = []
        self._kept = 0
        self._step = 1  # every _step-th sample of the stream is kept
        self._phase = 0
        self.total = 0

    def add(self, samples: np.ndarray) -> None:
        n = len(samples)
        if not n:
            return
        self.total += n
        take = samples[self._phase::self._step] if self._step > 1 else samples
        self._phase = (self._phase - n) % self._step
        self._parts.append(np.ascontiguousarray(take, dtype=np.int64))
        self._kept += len(take)
        while self._kept > MAX_SAMPLES:
            self._parts = [np.concatenate(self._parts)[::2]]
            self._kept = len(self._parts[0])
            self._step *= 2
            self._phase = (self._phase * 2) % self._step  # approximate phase after thinning: still even spacing

    def values(self) -> np.ndarray:
        return np.concatenate(self._parts) if self._parts else np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class ClockEstimate:
    """One file's offset: median and p5/p95 of receive-minus-event (ns), sample counts, and where it came from."""

    offset_ns: int
    p5_ns: int
    p95_ns: int
    samples: int  # frames that carried both times
    source: str  # "measured" or "given" (--clock-offset-ms)

    def to_json(self) -> dict[str, object]:
        return {"clock_offset_ns": self.offset_ns, "p5_ns": self.p5_ns, "p95_ns": self.p95_ns,
                "samples": self.samples, "source": self.source}

    def text(self) -> str:
        if self.source == "given":
            return f"clock offset {self.offset_ns / 1e6:+,.3f} ms (given by --clock-offset-ms, not measured)"
        return (f"t_recv - t_venue median {self.offset_ns / 1e6:+,.3f} ms (p5 {self.p5_ns / 1e6:+,.3f}, "
                f"p95 {self.p95_ns / 1e6:+,.3f} ms, {self.samples:,} frames)")


def estimate(samples: ClockSamples, given_ms: float | None) -> ClockEstimate | None:
    """The file's offset: ``--clock-offset-ms`` when given (it wins: the user's statement), else measured from the
    samples; None when neither exists (the caller refuses the file if it needs one)."""
    if given_ms is not None:
        ns = round(given_ms * 1e6)
        return ClockEstimate(ns, ns, ns, samples.total, "given")
    v = samples.values()
    if not len(v):
        return None
    p5, p50, p95 = np.percentile(v, [5, 50, 95], method="nearest")
    return ClockEstimate(int(p50), int(p5), int(p95), samples.total, "measured")
