"""Our .hlog decoded by an independent implementation: hdr-histogram-js under node (a real subprocess)."""


from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from caerus.metrics import hdr
from tests.fixtures.common import require_binary
from tests.kit.hdr import FakeClock, _samples

ROOT = Path(__file__).resolve().parents[3]
NODE_MODULES = ROOT / ".cache" / "node" / "node_modules"
JS_DECODER = ROOT / "tests" / "fixtures" / "metrics_hlog_decode.js"
PCTS = ("0", "50", "90", "99", "99.9", "99.99", "100")


def test_node_hdr_histogram_js_decodes_our_hlog(tmp_path: Path) -> None:
    node = require_binary("node", "nodejs")
    if not (NODE_MODULES / "hdr-histogram-js").is_dir():
        pytest.fail(f"hdr-histogram-js missing under {NODE_MODULES}: run scripts/install-test-deps.sh")
    clock = FakeClock()
    path = tmp_path / "fleet.hlog"
    log = hdr.IntervalLog(path, ["tick_to_decision", "info_age.binance"], clock_ns=clock)
    for i in range(5):
        log.record_values("tick_to_decision", _samples(10 + i, 5_000))
        log.record_values("info_age.binance", _samples(20 + i, 3_000) * 100)
        clock.advance(1.0)
        log.maybe_flush()
    log.close()
    res = subprocess.run([node, str(JS_DECODER), str(NODE_MODULES), str(path), *PCTS],
                         capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    js = json.loads(res.stdout)
    ours = hdr.read_hlog(path)
    assert set(js) == {"tick_to_decision", "info_age.binance"}
    for tag, merged in ours.merged_all().items():
        assert js[tag]["total"] == merged.total_count > 0
        assert js[tag]["intervals"] == sum(1 for iv in ours.intervals if iv.tag == tag)
        assert js[tag]["max"] == merged.get_max_value()
        ours_p = hdr.percentiles(merged, [float(p) for p in PCTS])
        for p in PCTS:
            assert js[tag]["percentiles"][p] == ours_p[float(p)], (tag, p)
