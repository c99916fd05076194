"""IntervalLog.drain_keyed: one buffer recorded under its tag and split by a key array filled beside it (the
strategy's per-instrument tick_to_decision), so a slow key is visible and the keyed counts sum to the tag's."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from caerus.metrics import hdr


def test_each_sample_goes_to_its_key_and_the_keyed_counts_sum_to_the_tag(tmp_path: Path) -> None:
    log = hdr.IntervalLog(tmp_path / "s.hlog", ["ttd", "inst.BTC.ttd", "inst.ETH.ttd"], interval_s=3600)
    buf = hdr.SampleBuffer(16)
    keys = np.zeros(16, dtype=np.int64)
    for v, k in ((1_000, 0), (2_000, 0), (900_000, 1), (3_000, 0), (5_000, 7)):  # key 7: no tag of its own
        keys[buf.n] = k
        buf.add(v)
    buf.full = 2  # samples the hot loop could not store: the tag's count, attributable to no key
    assert log.drain_keyed("ttd", buf, keys, ("inst.BTC.ttd", "inst.ETH.ttd")) == 5
    assert buf.n == 0
    log.close()
    data = hdr.read_hlog(tmp_path / "s.hlog")
    hists = {tag: data.merged(tag) for tag in data.tags()}
    assert hists["inst.BTC.ttd"].total_count == 3 and hists["inst.ETH.ttd"].total_count == 1
    assert hists["ttd"].total_count == 5
    assert hdr.percentile(hists["inst.ETH.ttd"], 50) >= 899_000  # the slow one is its own, not averaged away
    assert hdr.percentile(hists["inst.BTC.ttd"], 100) <= 3_010
    assert log.stats["ttd"].buffer_full == 2 and log.stats["inst.BTC.ttd"].buffer_full == 0


def test_no_key_tags_is_a_plain_drain(tmp_path: Path) -> None:
    log = hdr.IntervalLog(tmp_path / "s.hlog", ["ttd"], interval_s=3600)
    buf = hdr.SampleBuffer(4)
    buf.add(10)
    assert log.drain_keyed("ttd", buf, np.zeros(4, dtype=np.int64), ()) == 1
    assert log.stats["ttd"].count == 1
    log.close()
