"""RSS sampling and its per-process summary (start, end, max, slope after warm-up)."""

from __future__ import annotations

import os

from caerus.metrics.rss import MB, RssSampler, summarise


def test_summary_slope_ignores_warmup_and_finds_growth() -> None:
    # 40 MB at start-up, then +0.5 MB/min steadily
    series = [(float(t), int((10 + (30 if t >= 20 else t * 1.5) + t / 120) * MB)) for t in range(0, 600, 5)]
    s = summarise(series, warmup_s=30.0)
    assert abs(s["slope_mb_per_min"] - 0.5) < 0.01
    assert s["start_mb"] < 11 and s["max_mb"] == s["end_mb"] > 44 and s["samples"] == 120


def test_summary_flat_series_and_too_few_samples() -> None:
    assert summarise([(float(t), 50 * MB) for t in range(0, 300, 5)], 30.0)["slope_mb_per_min"] == 0.0
    assert summarise([(0.0, MB), (40.0, MB)], 30.0)["slope_mb_per_min"] is None


def test_sampler_reads_a_live_process_and_skips_a_gone_one() -> None:
    rss = RssSampler(interval_s=3600.0, warmup_s=0.0)
    rss.watch({"self": os.getpid(), "gone": 2**22 + 12345})  # beyond pid_max on default kernels: never alive
    rss.sample()
    rss.sample()  # throttled: no second reading within interval_s
    rss.sample(force=True)
    summary = rss.summary()
    assert set(summary) == {"self"} and summary["self"]["samples"] == 2 and summary["self"]["start_mb"] > 1
