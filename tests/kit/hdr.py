"""A controllable clock and a reproducible latency-like sample set for histogram tests."""

from __future__ import annotations

import numpy as np


class FakeClock:
    def __init__(self, start_ns: int = 1_750_000_000 * 10**9) -> None:
        self.now = start_ns

    def __call__(self) -> int:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += int(seconds * 1e9)


def samples(seed: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate([
        rng.integers(0, 5_000, n // 10),
        rng.lognormal(9.5, 1.5, n).astype(np.int64),
        np.array([1, 2047, 2048, 4095, 4096, 10**9], dtype=np.int64),
    ])


_samples = samples
