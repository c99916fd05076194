"""benchmarks.tls_read over real in-memory TLS connections: every contender decrypts every record to the frame sent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import tls_read


def test_every_contender_reads_every_record_and_the_ratios_are_against_the_buffer(tmp_path: Path) -> None:
    out = tmp_path / "tls.json"
    assert tls_read.main(["--quick", "--frames", "40", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    names = ["buffer", *tls_read.THRESHOLDS] if doc["extra"]["mallopt"] else ["buffer", "alloc"]
    assert set(doc["metrics"]) == set(names)
    assert all(doc["metrics"][n]["n"] == 3 * 40 for n in names)  # 3 quick rounds, the warm-up dropped
    assert set(doc["ratios"]) == {f"{n}/buffer (p50)" for n in names[1:]}


def test_a_record_that_decrypts_to_other_bytes_stops_the_run() -> None:
    pair = tls_read.TlsPair(tls_read.trustme.CA())
    read = tls_read._contenders({"buffer": pair})["buffer"]
    records = pair.records([b"one", b"two"])
    with pytest.raises(SystemExit, match="record 1 decrypted to other bytes"):
        tls_read._timed(read, records, [b"one", b"TWO"])
