"""RSS sampling and its per-process summary (start, end, max, slope after warm-up)."""

from __future__ import annotations

import os
from pathlib import Path

import psutil
import pytest

from caerus.metrics.rss import MB, SERIES_FILE, RssSampler, read_series, rss_parts, summarise


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
    assert summary["self"]["anon_end_mb"] > 1  # the kernel split rides along on Linux


def test_summary_splits_heap_from_rings_and_sees_a_plateau() -> None:
    # heap flat at 30 MB; ring pages first-touched at 0.3 MB/min until t=300 s, then flat (the ring wrapped)
    series = [(float(t), int((30 + min(t, 300) / 200 + 14) * MB), 30 * MB, 14 * MB, int(min(t, 300) / 200 * MB))
              for t in range(0, 900, 5)]
    s = summarise(series, warmup_s=30.0)
    assert s["anon_slope_mb_per_min"] == 0.0 and s["file_slope_mb_per_min"] == 0.0
    assert s["shmem_slope_mb_per_min"] > 0.05 and s["slope_mb_per_min"] == s["shmem_slope_mb_per_min"]
    assert abs(s["late_slope_mb_per_min"]) < 1e-9  # the second half is past the plateau
    assert s["anon_end_mb"] == 30.0 and s["shmem_end_mb"] == 1.5


def test_summary_of_a_leak_keeps_its_late_slope() -> None:
    series = [(float(t), int((40 + t / 120) * MB), int((26 + t / 120) * MB), 14 * MB, 0) for t in range(0, 900, 5)]
    s = summarise(series, warmup_s=30.0)
    assert abs(s["anon_slope_mb_per_min"] - 0.5) < 0.01 and abs(s["late_slope_mb_per_min"] - 0.5) < 0.01


def test_rss_parts_of_this_process_add_up_to_its_rss() -> None:
    parts = rss_parts(os.getpid())
    assert parts is not None and parts[0] > MB
    rss = psutil.Process().memory_info().rss
    assert abs(sum(parts) - rss) < 0.1 * rss  # the kernel's split of the same number (read a moment apart)
    assert rss_parts(2**22 + 12345) is None


def test_series_file_keeps_every_sample_per_process(tmp_path: Path) -> None:
    rss = RssSampler()
    rss.samples = {"strategy": [(0.0, 40 * MB, 30 * MB, 9 * MB, MB), (5.0, 41 * MB, 31 * MB, 9 * MB, MB)],
                   "venue-sim": [(0.0, 60 * MB), (5.0, 62 * MB), (10.0, 61 * MB)]}  # no /proc split
    path = tmp_path / SERIES_FILE
    assert rss.write_series(path) == 5
    series = read_series(path)
    assert list(series) == ["strategy", "venue-sim"]
    assert series["strategy"][0].tolist() == [0.0, 5.0] and series["strategy"][1].tolist() == [40.0, 41.0]
    assert series["venue-sim"][1].tolist() == [60.0, 62.0, 61.0]
    path.write_text(path.read_text() + "strategy,later\n")
    with pytest.raises(ValueError, match=f"{path}:7: not a process,t_s,rss_bytes row"):
        read_series(path)
