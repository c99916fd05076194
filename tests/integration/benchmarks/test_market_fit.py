"""benchmarks.market_fit runs end to end on the fixtures cut from the real captures: caerus data import into a
store, the real USD-M stream read back as recorded, the default market run offline beside it, a distance per
statistic; a capture too short to calibrate says so instead of inventing a market."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest

from benchmarks import market_fit

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "data" / "real" / "usdm_btcusdt_20240808_head.gz"


def fixture_book_ticker_times() -> np.ndarray:
    """The receive stamps of the fixture's bookTicker frames, read straight from the file."""
    out = []
    for line in gzip.decompress(FIXTURE.read_bytes()).decode().splitlines():
        stamp, _, frame = line.partition(" ")
        if '"stream":"btcusdt@bookTicker"' in frame:
            out.append(int(stamp))
    return np.sort(np.asarray(out, dtype=np.int64))


def test_the_report_runs_on_the_real_fixtures(tmp_path: Path) -> None:
    md, js = tmp_path / "fit.md", tmp_path / "fit.json"
    doc = market_fit.main(["--quick", "--data", str(tmp_path / "absent"), "--store", str(tmp_path / "store"),
                           "--markdown", str(md), "--json", str(js)])
    assert (tmp_path / "store" / "import.json").is_file()  # read through caerus data import
    extra = doc["extra"]
    assert "test fixtures" in extra["input"]
    text = md.read_text()
    assert text == extra["markdown"]
    assert "| arrivals | share within 1 ms of the previous update |" in text
    assert "| returns 1 s | distribution |" in text
    assert "USD-M -> COIN-M BTC" in text and "Binance -> Hyperliquid BTC" in text
    # too short to calibrate (2 s of USD-M): said, and no calibrated column
    assert "not calibrated" in extra["calibrated"] and "60 s" in extra["calibrated"]
    assert list(extra["markets"]) == ["default"]
    assert doc["metrics"]["inter-arrival, real"]["n"] == 300  # the gaps' percentiles, ns

    t = fixture_book_ticker_times()
    all_rows = json.loads(js.read_text())["extra"]["results"]["rows"]
    rows = {r["stat"]: r for r in all_rows}
    rate = rows["updates per second, mean"]
    assert rate["distances"]["default"]["n_real"] == t.size == 301
    assert rate["values"]["real"] == pytest.approx((t.size - 1) / ((t[-1] - t[0]) / 1e9))
    within = rows["share within 1 ms of the previous update"]
    assert within["values"]["real"] == pytest.approx(float(np.mean(np.diff(t) < 1_000_000)))
    assert within["distances"]["default"]["kind"] == "rel"
    assert rows["inter-arrival distribution"]["distances"]["default"]["kind"] == "ks"
    assert rows["inter-arrival distribution"]["distances"]["default:w1"]["kind"] == "w1"
    # 2 s of data: no 1 s return distribution to compare, reported as such with its n
    r1 = next(r for r in all_rows if r["group"] == "returns 1 s" and r["stat"] == "distribution")
    ks = r1["distances"]["default"]
    assert ks["n_real"] < 5 and math.isnan(ks["value"])
    assert "| returns 1 s | distribution |  |  | n/a, n/a (bp) |" in text


def test_a_market_column_must_be_named(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="NAME=FILE"):
        market_fit.main(["--quick", "--market", "default", "--data", str(tmp_path / "absent"),
                         "--store", str(tmp_path / "s")])
