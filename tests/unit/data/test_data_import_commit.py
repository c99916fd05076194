"""`caerus data import`'s commit: several files' staged rows in one INSERT store exactly what one INSERT per file
stores (each row's file number, instrument, venue slot, clock offset and time-rule sequence from its own file); a
refused file in a batch leaves the others as they were; nothing unflushed is recorded; a store path that would be
read as a pattern is refused."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pandas as pd
import pytest

from caerus import data
from caerus.data.imports import ImportOptions, ImportRefused, load_meta, run, run_import, target
from caerus.data.imports.formats import ReadOptions
from caerus.data.imports.worker import read_file

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "data" / "real"
USDM = FIX / "usdm_btcusdt_20240808_head.gz"
SPOT = FIX / "spot_btcusdt_20240808_head.gz"
CM = FIX / "cm_btcusd_perp_20240808_head.gz"
HL = FIX / "hyperliquid_btcusd_20250126.gz"
VOLATILE = ("imported_ns", "read_cpu_s", "commit_s", "commit_cpu_s", "commit_files")
DAY_NS = 86_400 * 10**9


def shifted(src: Path, dst: Path, days: int) -> Path:
    """``src`` with every receive stamp ``days`` later: another file of the same market (the time rule numbers
    its records after the first file's)."""
    out = []
    for ln in gzip.decompress(src.read_bytes()).split(b"\n"):
        if ln:
            ts, _, rest = ln.partition(b" ")
            out.append(b"%d %s" % (int(ts) + days * DAY_NS, rest))
    dst.write_bytes(gzip.compress(b"\n".join(out) + b"\n"))
    return dst


def files(tmp: Path) -> list[Path]:
    return [USDM, HL, CM, shifted(HL, tmp / "hl_next_day.gz", 1), SPOT, shifted(HL, tmp / "hl_day3.gz", 2)]


def books(store: Path) -> pd.DataFrame:
    b = data.books(store)
    return b.sort_values(["conn", "venue", "symbol_id", "t_recv", "seq"]).reset_index(drop=True)


def steady(entries: list[dict]) -> list[dict]:
    return [{k: v for k, v in e.items() if k not in VOLATILE} for e in entries]


def test_one_insert_for_many_files_stores_what_one_insert_each_stores(tmp_path: Path) -> None:
    fs = files(tmp_path)
    together = run_import(tmp_path / "together", fs, ImportOptions(jobs=1), out=None)
    assert together.ok, together.errors
    assert {e["commit_files"] for e in together.entries} == {len(fs)}  # the fixtures are small: one INSERT
    apart: list[dict] = []
    for f in fs:  # one import each: one INSERT each, the sequence base read back from the store
        one = run_import(tmp_path / "apart", [f], ImportOptions(jobs=1), out=None)
        assert one.ok, one.errors
        apart += one.entries
    assert {e["commit_files"] for e in apart} == {1}
    assert steady(together.entries) == steady(apart)
    a, b = books(tmp_path / "together"), books(tmp_path / "apart")
    assert len(a) == sum(e["stored"]["valid"] + e["stored"]["rejected"] for e in apart) > 0
    pd.testing.assert_frame_equal(a, b)
    # every row carries its own file's number and its market's instrument
    for e in together.entries:
        rows = a[a["conn"] == e["n"]]
        assert len(rows) == e["stored"]["valid"] + e["stored"]["rejected"]
        assert set(rows["symbol_id"]) == {m["instrument_id"] for m in e["markets"]}
    # Hyperliquid's three files (time rule): one numbering, each file's records after the previous file's
    hl = a[a["venue"] == "hyperliquid"]
    per_file = [hl[(hl["conn"] == n) & (hl["seq"] > 0)]["seq"] for n in (2, 4, 6)]
    assert all(len(s) for s in per_file)
    assert per_file[0].min() == 1 and per_file[1].min() == per_file[0].max() + 1
    assert per_file[2].min() == per_file[1].max() + 1


def test_a_batch_split_anywhere_stores_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fs = files(tmp_path)
    whole = run_import(tmp_path / "whole", fs, ImportOptions(jobs=1), out=None)
    monkeypatch.setattr(run, "COMMIT_ROWS", 300)  # a commit every file or two
    split = run_import(tmp_path / "split", fs, ImportOptions(jobs=1), out=None)
    assert whole.ok and split.ok, (whole.errors, split.errors)
    sizes = [e["commit_files"] for e in split.entries]
    assert 1 in sizes and max(sizes) > 1, sizes
    assert steady(whole.entries) == steady(split.entries)
    pd.testing.assert_frame_equal(books(tmp_path / "whole"), books(tmp_path / "split"))


def test_a_refused_file_in_a_batch_leaves_the_others_numbered_in_order(tmp_path: Path) -> None:
    store = tmp_path / "s"
    again = tmp_path / "usdm_again.gz"
    again.write_bytes(USDM.read_bytes())
    out = run_import(store, [USDM, again, CM, HL], ImportOptions(jobs=1), out=None)
    assert len(out.errors) == 1 and "already imported" in out.errors[0] and str(again) in out.errors[0]
    assert [(e["n"], Path(e["path"]).name) for e in out.entries] == [(1, USDM.name), (2, CM.name), (3, HL.name)]
    b = books(store)
    assert sorted(set(b["conn"])) == [1, 2, 3]
    assert [f["n"] for f in load_meta(store)["files"]] == [1, 2, 3]
    assert not list((store / ".import-stage").glob("*"))  # every staged file removed, the refused one's too


def test_files_added_and_not_flushed_are_not_recorded(tmp_path: Path) -> None:
    store = tmp_path / "s"
    t = target.ImportTarget(store)
    stage = t.stage_path(1)
    r = read_file(str(USDM), "hftbacktest", ReadOptions(), str(stage), None)
    entry = t.add(1, r, "import", None, None, None)
    assert entry["n"] == 1 and t.pending_rows == r.stored_valid + r.stored_rejected > 0
    t.close()  # stopped before the commit (an error elsewhere)
    assert load_meta(store)["files"] == [] and not stage.exists()
    again = run_import(store, [USDM], ImportOptions(jobs=1), out=None)  # not refused as already imported
    assert again.ok and [e["n"] for e in again.entries] == [1]


@pytest.mark.parametrize("name", ["store{1}", "store*", "st?re"])
def test_a_store_path_with_pattern_characters_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(ImportRefused, match=re.escape(name) + ".*pattern"):
        target.ImportTarget(tmp_path / name)


def test_brackets_in_a_store_path_are_plain_characters(tmp_path: Path) -> None:
    store = tmp_path / "store[1]"  # as pytest names a parametrized test's folder: not a pattern to chDB's file()
    out = run_import(store, [USDM, CM], ImportOptions(jobs=1), out=None)
    assert out.ok, out.errors
    assert len(books(store)) == sum(e["stored"]["valid"] + e["stored"]["rejected"] for e in out.entries) > 0
