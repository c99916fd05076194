"""The exporter's latency state: trailing windows, microsecond buckets, and the one-line missing-Prometheus error."""

from __future__ import annotations

import numpy as np
import pytest

from caerus.metrics import hdr
from caerus.monitoring import prometheus
from caerus.monitoring.latency import TagLatency


def interval(start_s: float, values_ns: list[int]) -> hdr.Interval:
    h = hdr.new_histogram()
    hdr.record_array(h, np.array(values_ns, dtype=np.int64))
    return hdr.Interval("tick_to_decision", start_s, 1.0, h)


def test_windows_keep_only_their_trailing_intervals() -> None:
    lat = TagLatency()
    lat.add(interval(90.0, [1_000_000] * 10))  # 1 ms, ends 69 s before the newest interval: in no window
    lat.add(interval(148.0, [50_000] * 10))  # 50 us, ends 11 s before the newest: in the 60 s window only
    lat.add(interval(159.0, [2_000] * 10))  # 2 us, the newest: in both
    q = lat.window_quantiles()
    assert q[10] is not None and q[60] is not None
    assert q[10][0.999] == pytest.approx(2e-6, rel=1e-3)
    assert q[60][0.999] == pytest.approx(50e-6, rel=1e-3)
    assert len(lat.intervals) == 2  # the oldest left the longest window
    assert lat.total.total_count == 30  # but stays in the running histogram


def test_buckets_are_cumulative_in_seconds() -> None:
    lat = TagLatency()
    lat.add(interval(0.0, [1_500, 30_000, 30_000, 700_000]))  # 1.5 us, 30 us x2, 700 us
    buckets, total_s = lat.buckets()
    by_le = dict(buckets)
    assert by_le["1e-06"] == 0 and by_le["2e-06"] == 1 and by_le["5e-05"] == 3 and by_le["0.001"] == 4
    assert by_le["+Inf"] == 4
    counts = [c for _, c in buckets]
    assert counts == sorted(counts)
    assert total_s == pytest.approx(761.5e-6, rel=1e-3)


def test_missing_prometheus_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(prometheus.PrometheusError) as exc:
        prometheus.prometheus_binary()
    assert "apt-get install prometheus" in str(exc.value) and "\n" not in str(exc.value)


def test_a_scrape_target_off_loopback_is_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(prometheus.PrometheusError, match=r"10\.0\.0\.5:9465 is not on loopback"):
        prometheus.write_config(tmp_path / "p.yml", ["10.0.0.5:9465"])


def test_running_windows_equal_a_fresh_merge_of_their_intervals() -> None:
    rng = np.random.default_rng(7)
    lat = TagLatency()
    ivs = [interval(float(t), list(rng.integers(1_000, 5_000_000, size=int(rng.integers(0, 50)))))
           for t in range(200)]
    for iv in ivs:
        lat.add(iv)
        newest = iv.start_s + iv.length_s
        for w in (10, 60):
            fresh = hdr.new_histogram()
            for old in ivs[: int(iv.start_s) + 1]:
                if old.start_s + old.length_s > newest - w:
                    hdr.add_into(fresh, old.hist)
            assert np.array_equal(hdr.counts_view(lat.window(w)), hdr.counts_view(fresh))
            assert lat.window(w).total_count == fresh.total_count
    assert len(lat.intervals) == 60


def test_memoised_buckets_and_quantiles_follow_every_change() -> None:
    """What a refresh serves from the per-tag memo equals a recomputation after every interval: with samples, empty
    (no change), and when a window lets an old interval go (a change without a new sample)."""
    rng = np.random.default_rng(11)
    lat = TagLatency()
    for t in range(150):
        n = int(rng.integers(0, 3)) * int(rng.integers(1, 40))  # a third of the intervals are empty
        lat.add(interval(float(t), list(rng.integers(1_000, 5_000_000, size=n))))
        served = (lat.buckets(), lat.window_quantiles())
        lat._buckets = lat._quantiles = None  # forget the memo: recompute from the histograms
        assert served == (lat.buckets(), lat.window_quantiles()), t


def test_an_empty_interval_leaves_the_memo_valid() -> None:
    lat = TagLatency()
    lat.add(interval(0.0, [5_000] * 3))
    first = lat.buckets()
    lat.add(interval(1.0, []))
    assert lat.buckets() is first
