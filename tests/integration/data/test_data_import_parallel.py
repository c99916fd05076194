"""`caerus data import` with reader processes (forked from a fork server, one per file) gives the store and records
one process gives, and the import benchmark runs end to end on the fixtures."""

from __future__ import annotations

import json
from pathlib import Path

from caerus import data
from caerus.data.imports import ImportOptions, run_import

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "data" / "real"
FILES = [FIX / "usdm_btcusdt_20240808_head.gz", FIX / "cm_btcusd_perp_20240808_head.gz",
         FIX / "spot_btcusdt_20240808_head.gz", FIX / "hyperliquid_btcusd_20250126.gz"]
VOLATILE = ("imported_ns", "read_cpu_s", "commit_s", "commit_cpu_s")


def _entries(store: Path, jobs: int) -> list[dict]:
    out = run_import(store, FILES, ImportOptions(jobs=jobs), out=None)
    assert out.ok, out.errors
    return [{k: v for k, v in e.items() if k not in VOLATILE} for e in out.entries]


def test_reader_processes_import_what_one_process_imports(tmp_path: Path) -> None:
    one = _entries(tmp_path / "one", 1)
    two = _entries(tmp_path / "two", 2)
    assert one == two and [e["n"] for e in two] == [1, 2, 3, 4]
    a = data.books(tmp_path / "one").sort_values(["venue", "symbol_id", "seq", "t_recv"]).reset_index(drop=True)
    b = data.books(tmp_path / "two").sort_values(["venue", "symbol_id", "seq", "t_recv"]).reset_index(drop=True)
    assert len(a) == sum(e["stored"]["valid"] for e in one) and a.drop(columns="session").equals(
        b.drop(columns="session"))


def test_import_benchmark_runs_on_the_fixtures(tmp_path: Path) -> None:
    from benchmarks import data_import

    out = tmp_path / "bench.json"
    data_import.main(["--quick", "--data", str(tmp_path / "absent"), "--copies", "2", "--rounds", "2", "--json",
                      str(out)])
    doc = json.loads(out.read_text())
    res = doc["results"] if "results" in doc else doc["extra"]["results"]
    assert res["import"]["frames"] == res["read+check"]["frames"] == res["gunzip+split"]["frames"] > 0
    assert res["import"]["rounds"] == 2 and res["import, steady"]["frames"] == res["import"]["frames"] - 600
    assert [g["name"] for g in doc["goals"]] == [
        "caerus data import frames/s (wall, whole import, cold start included)",
        "caerus data import frames/s (wall, steady: start-up taken out)"]
    assert "import, steady / gunzip+split frames/s" in doc["ratios"]


def test_import_memory_benchmark_runs_on_the_fixture(tmp_path: Path) -> None:
    from benchmarks import data_import_memory

    out = tmp_path / "bench.json"
    data_import_memory.main(["--quick", "--data", str(tmp_path / "absent"), "--copies", "3", "--piece-rows", "2000",
                             "--json", str(out)])
    doc = json.loads(out.read_text())
    res = doc["extra"]["results"]
    one = run_import(tmp_path / "one", [data_import_memory.FIXTURE], ImportOptions(jobs=1), out=None).entries[0]
    rows = one["stored"]["valid"] + one["stored"]["rejected"]
    # three copies in a row read as one recording: every frame and book of each copy, nothing more refused
    for way in ("pieces", "one INSERT"):
        assert res[way]["frames"] == doc["extra"]["frames"] == 3 * one["frames"]
        assert res[way]["rows"] == 3 * rows and res[way]["refused"] == 3 * sum(one["refused"].values())
    assert res["pieces"]["inserts"] == -(-3 * rows // 2000) > 1 and res["one INSERT"]["inserts"] == 1
    assert set(doc["ratios"]) == {"peak RSS pieces / one INSERT", "wall pieces / one INSERT"}
