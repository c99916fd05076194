"""``--market replay:DATASET`` and record mode: what the session resolves, refuses and records before anything
starts, and what the report's header says about the market.

Datasets: the 12 s real USD-M slice (tests/fixtures/data/real, MIT) as a file and imported into a store with
``caerus data import``; a store imported from Binance public-data CSV (no frames) and a moved capture are refused
naming the file.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from caerus.data.imports import ImportOptions, run_import
from caerus.plan import plan_fleet
from caerus.report.market import market_line, market_rows
from caerus.session import launch, replay_dataset
from caerus.session.local import SessionConfigError, SessionOptions, book_rates
from caerus.session.store_growth import StoreGrowth

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "data" / "real"
SLICE = REAL / "usdm_btcusdt_20240808_12s.gz"


def _store(tmp_path: Path, *files: Path, name: str = "store", offset_ms: float | None = None) -> Path:
    store = tmp_path / name
    out = run_import(store, list(files), ImportOptions(jobs=1, clock_offset_ms=offset_ms))
    assert out.ok, out.errors
    return store


def test_a_capture_file_and_an_imported_store_resolve_to_the_frames_played(tmp_path: Path) -> None:
    ds = replay_dataset.resolve(f"replay:{SLICE}")
    assert ds.files == (SLICE,) and ds.names == ("BTC",) and ds.symbols == ("BTCUSDT",) and ds.store is None
    copy = tmp_path / SLICE.name
    shutil.copy(SLICE, copy)
    store = _store(tmp_path, copy)
    ds = replay_dataset.resolve(f"replay:{store}")
    assert ds.files == (copy.resolve(),) and ds.store == store.resolve()
    assert ds.clock_offset_ns is not None and -1_300e6 < ds.clock_offset_ns < -1_240e6  # import.json's offset
    rec = replay_dataset.market_record(ds, None)
    f = rec["binance"]["files"][0]
    assert f["recorded_from"] == "2024-08-08 23:54:15 UTC" and f["book_frames"] == 2284 and 11 < f["span_s"] < 13


def test_what_cannot_be_replayed_is_refused_naming_it(tmp_path: Path) -> None:
    csv_store = _store(tmp_path, REAL / "BTCUSDT-bookTicker-2024-08-08.zip", name="csv", offset_ms=0)
    with pytest.raises(ValueError, match="imported from binance-csv, which holds no venue frames"):
        replay_dataset.resolve(f"replay:{csv_store}")
    moved = tmp_path / "moved.gz"
    shutil.copy(SLICE, moved)
    store = _store(tmp_path, moved, name="moved")
    moved.unlink()
    with pytest.raises(ValueError, match="is not there any more"):
        replay_dataset.resolve(f"replay:{store}")
    with pytest.raises(ValueError, match="no such store or capture file"):
        replay_dataset.resolve(f"replay:{tmp_path / 'nothing'}")
    with pytest.raises(ValueError, match="Binance spot frames"):
        replay_dataset.resolve(f"replay:{REAL / 'spot_btcusdt_20240808_head.gz'}")
    with pytest.raises(ValueError, match="not a store made by caerus data import"):
        replay_dataset.resolve(f"replay:{tmp_path}")


@pytest.mark.parametrize(("opts", "message"), [
    (SessionOptions(market=f"replay:{SLICE}", symbols="ETH"), "the replayed capture holds BTCUSDT"),
    (SessionOptions(market=f"replay:{SLICE}", live=True), "cannot be combined with live venues"),
    (SessionOptions(market=f"replay:{SLICE}", symbol_rate_hz=50), "symbol rate sets the model's Binance side"),
    (SessionOptions(market="replay:/nonexistent.gz"), "no such store or capture file"),
    (SessionOptions(record=True, capture=False), "record mode records through capture"),
    (SessionOptions(record=True, transport="emulator"), "record mode sends no orders"),
    (SessionOptions(record=True, chaos_every_s=5), "record mode runs no strategy"),
])
def test_bad_replay_and_record_options_are_named(opts: SessionOptions, message: str) -> None:
    with pytest.raises(SessionConfigError, match=message):
        opts.validate()


def test_the_plan_takes_the_captures_rate_and_venue_sim_the_files(tmp_path: Path) -> None:
    opts = SessionOptions(market=f"replay:{SLICE}")
    opts.validate()
    rates = book_rates(opts)
    assert 150 < rates["binance"] < 250  # the real capture's ~192/s, not the default market's 75
    plan = plan_fleet(cpus=[0, 1], isolated=[])
    spec = launch.venue_sim_spec(tmp_path, plan, 1, None, market="default", captures=(SLICE,))
    argv = " ".join(spec.argv)
    assert f"--replay {SLICE}" in argv and "--market default" in argv


def test_record_mode_starts_the_feeds_and_capture_only(tmp_path: Path) -> None:
    plan = plan_fleet(cpus=[0, 1], isolated=[])
    urls = {"binance_url": "wss://127.0.0.1:1", "hyperliquid_url": "wss://127.0.0.1:2", "ca_file": "/c/ca.pem"}
    seg = launch.Segments("sX")
    specs = {s.name: s for s in launch.fleet_specs(tmp_path, plan, seg, urls, capture=True, transport="paper",
                                                   trading=False)}
    assert list(specs) == ["capture", "feed-binance", "feed-hyperliquid"]
    assert seg.exec not in specs["capture"].argv  # nothing writes the exec ring


def test_the_market_record_says_what_is_real_and_what_is_modelled() -> None:
    ds = replay_dataset.resolve(f"replay:{SLICE}")
    ready = {"capture": {"first_recv_ns": 1723161255088169167,
                         "hyperliquid": {"real": False, "model": "follower", "seed": 3,
                                         "settings": {"hl_lag_ms": 650.0}}}}
    rec = replay_dataset.market_record(ds, ready)
    rec["played"] = {"frames": 1234, "from": "2024-08-08 23:54:15 UTC", "to": "2024-08-08 23:54:20 UTC",
                     "span_s": 5.0, "finished": False}
    rows = dict((k, v) for k, v in market_rows({"market": rec}))
    assert "Binance REAL, Hyperliquid MODELLED" in rows["market"]
    assert rows["Binance (real)"].startswith(f"binance usdm BTCUSDT: {SLICE.name}, recorded 2024-08-08 23:54:15 UTC")
    assert "1,268.8 ms behind the venue's" in rows["Binance (real)"] and "1,234 frames served" in rows["Binance (real)"]
    assert rows["Hyperliquid (modelled)"].startswith("market `default`, seed 3: follower (hl_lag_ms 650)")
    assert "REPLAY" in market_line(rec) and "Hyperliquid MODELLED" in market_line(rec)
    emulated = replay_dataset.emulated_record("fixed-lag", 2, ("BTC",))
    assert market_rows({"market": emulated}) == [["market", "EMULATED: market `fixed-lag`, seed 2, instruments BTC; "
                                                             "both venues modelled, no real market data"]]
    assert market_rows({}) == []


def test_store_growth_reports_the_end_size_per_hour_and_the_peak(tmp_path: Path) -> None:
    store = tmp_path / "capture"
    store.mkdir()
    growth = StoreGrowth(store, start=0.0, every_s=10.0)
    for i in range(6):  # parts pile up while recording (chDB keeps merged-away parts for minutes) ...
        (store / f"part{i}").write_bytes(b"x" * 400_000)
        growth.sample(now=10.0 * i)
        growth.sample(now=10.0 * i + 1)  # not due: no sample
    assert growth.summary() is None  # not finished: capture has not exited
    for i in range(6):  # ... and the store capture leaves is the merged data
        (store / f"part{i}").unlink()
    (store / "merged").write_bytes(b"x" * 500_000)
    growth.finish(recorded_s=60.0)
    s = growth.summary()
    assert s is not None and len(s["series"]) == 6
    assert s["peak_bytes"] >= 6 * 400_000 and 500_000 <= s["bytes"] < 520_000
    assert s["mb_per_hour"] == pytest.approx(s["bytes"] / 1e6 * 60, rel=1e-3)  # 60 s recorded: x60 per hour


def test_store_size_skips_what_chdb_removes_while_it_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A merge's tmp folder or a part removed between the listing and the read is skipped: a recording of hours must
    never die on its size probe (it did: FileNotFoundError on chDB's tmp_merge_* folder, mid-session)."""
    import os

    from caerus.session import store_growth

    (tmp_path / "part_1").mkdir()
    (tmp_path / "part_1" / "data.bin").write_bytes(b"x" * 10_000)
    (tmp_path / "tmp_merge_1").mkdir()
    (tmp_path / "tmp_merge_1" / "data.bin").write_bytes(b"x" * 10_000)
    (tmp_path / "gone.bin").write_bytes(b"x")
    real_scandir, real_stat = os.scandir, os.stat

    def scandir(path: object) -> object:
        if str(path).endswith("tmp_merge_1"):
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return real_scandir(path)  # type: ignore[arg-type]

    def stat(path: object, *a: object, **kw: object) -> os.stat_result:
        if str(path).endswith("gone.bin"):
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return real_stat(path, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "stat", stat)
    assert 10_000 <= store_growth.store_bytes(tmp_path) < 20_000  # part_1 only
