"""caerus.metrics.summary: the fast multi-file loader agrees with the plain decoder, merges tags across files,
keeps per-interval series, folds in sidecar counts and reports unreadable lines."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from caerus.metrics import hdr
from caerus.metrics.summary import load_metrics, write_hgrms


def _log(path: Path, tags: list[str], seed: int, intervals: int, start_ns: int) -> None:
    now = [start_ns]
    log = hdr.IntervalLog(path, tags, clock_ns=lambda: now[0])
    rng = np.random.default_rng(seed)
    for i in range(intervals):
        for t in tags:
            vals = rng.lognormal(9 + i % 3, 1.0, 500 + 100 * i).astype(np.int64)
            vals[:2] = -7  # two clock artifacts per interval
            log.record_values(t, vals)
        now[0] += 1_000_000_000
        log.maybe_flush()
    log.close()


def test_loader_matches_plain_decoder_and_merges_files(tmp_path: Path) -> None:
    start = 1_760_000_000 * 10**9
    _log(tmp_path / "a.hlog", ["x", "shared"], 1, 4, start)
    _log(tmp_path / "b.hlog", ["shared"], 2, 3, start)
    sm = load_metrics(tmp_path)
    assert sm.files == ["a.hlog", "b.hlog"]
    plain = {"x": hdr.new_histogram(), "shared": hdr.new_histogram()}
    ivs = {"x": [], "shared": []}
    for f in ("a.hlog", "b.hlog"):
        data = hdr.read_hlog(tmp_path / f)
        for iv in data.intervals:
            hdr.add_into(plain[iv.tag], iv.hist)
            ivs[iv.tag].append(iv)
    for tag, h in plain.items():
        md = sm.metrics[tag]
        assert md.n == h.total_count > 0
        assert md.hist.get_max_value() == h.get_max_value() and md.hist.get_min_value() == h.get_min_value()
        assert hdr.percentiles(md.hist, [50, 99, 99.9]) == hdr.percentiles(h, [50, 99, 99.9])
        ordered = sorted(ivs[tag], key=lambda iv: (iv.start_s, iv.length_s, iv.count, iv.max_ns))
        assert md.i_count.tolist() == [iv.count for iv in ordered]
        assert md.i_max.tolist() == [iv.max_ns for iv in ordered]
        assert md.i_p99.tolist() == [hdr.percentile(iv.hist, 99.0) for iv in ordered]
    assert sm.metrics["shared"].sources == ["a.hlog", "b.hlog"]
    # 2 artifacts per interval per file: 4 + 3 intervals for "shared" (the last flush is empty)
    assert sm.metrics["shared"].clock_artifacts == 2 * (4 + 3)
    assert sm.metrics["x"].stats()["clock_artifacts"] == 8
    assert sm.metrics["x"].stats()["min_artifact_ns"] == -7


def test_bad_lines_and_missing_sidecar_are_reported(tmp_path: Path) -> None:
    _log(tmp_path / "a.hlog", ["x"], 1, 2, 1_760_000_000 * 10**9)
    (tmp_path / "a.hlog.json").unlink()
    with open(tmp_path / "a.hlog", "a") as f:
        f.write("Tag=x,9.000,1.000,0.1,HISTFAAAAnotbase64\n")
    sm = load_metrics(tmp_path)
    assert len(sm.bad_lines["a.hlog"]) == 1
    assert sm.metrics["x"].stats()["sidecar_missing"] == ["a.hlog"]
    paths = write_hgrms(sm, tmp_path)
    assert [p.name for p in paths] == ["x.hgrm"]
    assert "Total count" in paths[0].read_text()
