"""caerus.metrics.hdr: vectorised recording, interval logs, clock artifacts, decoding, .hgrm, and an independent
decode of our .hlog by hdr-histogram-js under node."""

from __future__ import annotations

import gc
import io
import json
from pathlib import Path

import numpy as np
import pytest

from caerus.metrics import hdr
from tests.kit.hdr import FakeClock, _samples

ROOT = Path(__file__).resolve().parents[3]
NODE_MODULES = ROOT / ".cache" / "node" / "node_modules"
JS_DECODER = ROOT / "tests" / "fixtures" / "metrics_hlog_decode.js"
PCTS = ("0", "50", "90", "99", "99.9", "99.99", "100")


def test_vectorised_record_matches_package_record_value() -> None:
    vals = _samples(1, 20_000)
    fast, slow = hdr.new_histogram(), hdr.new_histogram()
    hdr.record_array(fast, vals)
    for v in vals.tolist():
        slow.record_value(v)
    assert np.array_equal(hdr.counts_view(fast), hdr.counts_view(slow))
    assert (fast.total_count, fast.min_value, fast.max_value) == (slow.total_count, slow.min_value, slow.max_value)
    assert hdr.percentile(fast, 99.0) == slow.get_value_at_percentile(99.0)


@pytest.mark.parametrize("n", [1, 37, 4_000, 16_000, 40_000])
def test_record_array_adds_what_record_value_does_at_every_size(n: int) -> None:
    # both of record_array's ways (values added one by one below counts_len / 2, counted at once above), with
    # repeated values and per-value counts
    vals = np.concatenate([_samples(n, n), np.full(3, 12_345, dtype=np.int64)])
    counts = (np.arange(vals.size) % 3 + 1).astype(np.int64)
    for weights in (None, counts):
        fast, slow = hdr.new_histogram(), hdr.new_histogram()
        hdr.record_array(fast, vals, weights)
        for v, c in zip(vals.tolist(), (counts if weights is not None else np.ones_like(vals)).tolist(),
                        strict=True):
            slow.record_value(v, c)
        assert np.array_equal(hdr.counts_view(fast), hdr.counts_view(slow))
        assert (fast.total_count, fast.min_value, fast.max_value) == (slow.total_count, slow.min_value,
                                                                     slow.max_value)


@pytest.mark.parametrize("top", [1, 2_047, 2_048, 20_000, 1_000_000, 7_000_000_000, hdr.HIGHEST_NS])
def test_encode_stops_at_the_maximum_half_bucket_and_decodes_to_the_same_counts(top: int) -> None:
    h = hdr.new_histogram()
    hdr.record_array(h, np.asarray([1, 5_000, top, top], dtype=np.int64))
    back = hdr.HdrHistogram.decode(hdr.encode(h).encode("ascii"))
    assert np.array_equal(hdr.counts_view(back), hdr.counts_view(h))
    assert back.get_max_value() == h.get_max_value() and back.total_count == 4


def test_encode_leaves_no_garbage_over_every_size_it_can_use() -> None:
    """With the collector disabled (as the hot processes run), encoding at every maximum and an empty histogram
    leaves no unreachable object: each buffer size's ctypes type is kept, not dropped into a cycle. Without
    hdr._keep_buffer_types this found 7 objects per size (the CI failure of test_runtime_loops_memory). One histogram
    is reused, as a tag's is: making a histogram leaves hdrh's own few objects, once per tag."""
    h, empty = hdr.new_histogram(), hdr.new_histogram()
    gc.collect()
    gc.disable()
    try:
        for top in [1 << k for k in range(1, 43)]:  # every half-bucket up to HIGHEST_NS
            hdr.record_array(h, np.asarray([min(top, hdr.HIGHEST_NS)], dtype=np.int64))
            hdr.encode(h)
            hdr.clear(h)
            hdr.encode(empty)
        unreachable = gc.collect()
    finally:
        gc.enable()
    assert unreachable == 0
    kept = hdr._BUFFER_TYPES[(h.counts_len, h.sub_bucket_half_count, h.encoder.payload.word_size)]
    assert 30 <= len(kept) <= 40  # one per half-bucket, plus the empty histogram's


def test_sample_buffer_counts_overflow_and_drain_resets(tmp_path: Path) -> None:
    buf = hdr.SampleBuffer(capacity=4)
    for v in range(6):
        buf.add(v + 1)
    assert (buf.n, buf.full) == (4, 2)
    log = hdr.IntervalLog(tmp_path / "p.hlog", ["m"], clock_ns=FakeClock())
    assert log.drain("m", buf) == 4
    assert (buf.n, buf.full) == (0, 0)
    log.close()
    side = hdr.read_sidecar(tmp_path / "p.hlog")
    assert side is not None and side["tags"]["m"]["buffer_full"] == 2 and side["tags"]["m"]["count"] == 4


def test_negative_samples_are_counted_as_clock_artifacts_not_recorded(tmp_path: Path) -> None:
    clock = FakeClock()
    log = hdr.IntervalLog(tmp_path / "p.hlog", ["a", "b"], interval_s=1.0, clock_ns=clock)
    log.record_values("a", np.array([-5, -700, 10, 20, 30], dtype=np.int64))
    log.record_values("b", np.array([hdr.HIGHEST_NS * 2, 5], dtype=np.int64))
    clock.advance(1.0)
    assert log.maybe_flush()
    log.close()
    side = json.loads((tmp_path / "p.hlog.json").read_text())
    assert side["closed"] is True
    assert side["tags"]["a"] == {"count": 3, "clock_artifacts": 2, "min_artifact_ns": -700, "clamped": 0,
                                 "buffer_full": 0, "max_ns": 30}
    assert side["tags"]["b"]["clamped"] == 1 and side["tags"]["b"]["count"] == 2
    data = hdr.read_hlog(tmp_path / "p.hlog")
    assert data.merged("a").total_count == 3
    assert data.merged("b").get_max_value() >= hdr.HIGHEST_NS


def test_hlog_header_and_tagged_lines(tmp_path: Path) -> None:
    clock = FakeClock()
    log = hdr.IntervalLog(tmp_path / "p.hlog", ["x.y", "z"], clock_ns=clock)
    log.record("x.y", 1234)
    clock.advance(1.5)
    log.maybe_flush()
    log.close()
    lines = (tmp_path / "p.hlog").read_text().splitlines()
    assert lines[0] == "#[Histogram log format version 1.3]"
    assert any(line.startswith("#[StartTime: 1750000000.000 (seconds since epoch), ") for line in lines)
    assert "#[BaseTime: 1750000000.000 (seconds since epoch)]" in lines
    assert hdr.LEGEND in lines
    body = [line for line in lines if line.startswith("Tag=")]
    assert body[0].startswith("Tag=x.y,0.000,1.500,0.001,HISTF")
    assert body[1].startswith("Tag=z,0.000,1.500,0.000,HISTF")


def test_interval_timestamps_and_counts_round_trip(tmp_path: Path) -> None:
    clock = FakeClock()
    log = hdr.IntervalLog(tmp_path / "p.hlog", ["m"], clock_ns=clock)
    per_interval = [100, 0, 250, 7]
    buf = hdr.SampleBuffer(1024)
    for i, n in enumerate(per_interval):
        for v in range(n):
            buf.add(1000 + v + i)
        log.drain("m", buf)
        clock.advance(1.0)
        assert log.maybe_flush()
    log.close()
    data = hdr.read_hlog(tmp_path / "p.hlog")
    ivs = [iv for iv in data.intervals if iv.tag == "m"]
    assert [iv.count for iv in ivs][:4] == per_interval
    assert [round(iv.start_s - 1_750_000_000, 3) for iv in ivs][:4] == [0.0, 1.0, 2.0, 3.0]
    assert data.bad_lines == []


def test_torn_last_line_is_reported_not_fatal(tmp_path: Path) -> None:
    clock = FakeClock()
    log = hdr.IntervalLog(tmp_path / "p.hlog", ["m"], clock_ns=clock)
    log.record("m", 5000)
    clock.advance(1)
    log.maybe_flush()
    log.close()
    path = tmp_path / "p.hlog"
    path.write_text(path.read_text() + "Tag=m,1.000,1.000,0.005,HISTFAAAAB14nJN")  # killed mid-write
    data = hdr.read_hlog(path)
    assert data.merged("m").total_count == 1
    assert len(data.bad_lines) == 1 and "decode" in data.bad_lines[0][1]


def test_tail_yields_only_complete_lines(tmp_path: Path) -> None:
    clock = FakeClock()
    path = tmp_path / "p.hlog"
    log = hdr.IntervalLog(path, ["m"], clock_ns=clock)
    tail = hdr.HlogTail(path)
    assert list(tail.poll()) == []
    log.record("m", 42)
    clock.advance(1)
    log.maybe_flush()
    got = list(tail.poll())
    assert [(iv.tag, iv.count) for iv in got] == [("m", 1)]
    assert list(tail.poll()) == []
    log.close()


def test_bad_tags_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="bad metric tag"):
        hdr.IntervalLog(tmp_path / "p.hlog", ["has,comma"])
    with pytest.raises(ValueError, match="duplicate"):
        hdr.IntervalLog(tmp_path / "q.hlog", ["a", "a"])
    log = hdr.IntervalLog(tmp_path / "r.hlog", ["a"])
    with pytest.raises(KeyError, match="unknown metric tag 'b'"):
        log.record("b", 1)
    log.close()


def test_hgrm_spectrum_format() -> None:
    h = hdr.new_histogram()
    hdr.record_array(h, np.arange(1, 10_001, dtype=np.int64) * 1000)
    out = io.StringIO()
    hdr.write_hgrm(h, out, unit_ratio=1000.0)
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["Value", "Percentile", "TotalCount", "1/(1-Percentile)"]
    rows = [line.split() for line in lines[2:] if line and not line.startswith("#")]
    assert float(rows[0][1]) == 0.0 and float(rows[-1][1]) == 1.0 and int(rows[-1][2]) == 10_000
    assert len(rows[-1]) == 3  # the 100% row has no 1/(1-p) column
    pcts = [float(r[1]) for r in rows]
    assert pcts == sorted(pcts)
    assert any(line.startswith("#[Mean    =") for line in lines)
    mean_line = next(line for line in lines if line.startswith("#[Mean"))
    assert abs(float(mean_line.split("=")[1].split(",")[0]) - 5000.5) < 10  # microseconds, scaled
    assert "Total count    =        10000" in out.getvalue()


def test_percentiles_match_java_js_rounding() -> None:
    h = hdr.new_histogram()
    hdr.record_array(h, np.array([10, 20, 30, 40, 50, 60, 70, 80, 90, 100], dtype=np.int64))
    assert hdr.percentile(h, 50.0) == 50
    assert hdr.percentile(h, 55.0) == 60  # 5.5 rounds up to 6 samples
    assert hdr.percentile(h, 0.0) == 10
    assert hdr.percentile(h, 100.0) == 100




def test_clear_zeroes_every_counter_recorded() -> None:
    h = hdr.new_histogram()
    hdr.record_array(h, np.asarray([1, 900, 65_000, 3_000_000_000, hdr.HIGHEST_NS], dtype=np.int64))
    hdr.clear(h)
    assert not hdr.counts_view(h).any() and h.total_count == 0 and h.max_value == 0
    hdr.record_array(h, np.asarray([7], dtype=np.int64))
    assert int(hdr.counts_view(h).sum()) == 1 and h.get_max_value() == 7
