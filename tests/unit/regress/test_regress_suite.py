"""Suite files, extraction of benchmark/session outputs into metric ids, normalization, thresholds."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from benchmarks.regress.runner import UsageError, parse_thresholds
from benchmarks.regress.suite import (
    DEFAULT_SUITE,
    Member,
    SuiteError,
    apply_overrides,
    extract_benchmark,
    extract_session,
    load_suite,
    normalize,
    threshold_for,
)

BENCH = Member(name="ipc_hop", kind="benchmark", module="benchmarks.ipc_hop", quick_args=["--quick"],
               reference="queue")
SESSION = Member(name="session", kind="session", module="caerus", args=["session", "--duration", "5"])

DOC = {
    "benchmark": "ipc_hop", "schema": 1,
    "metrics": {"swmr": {"unit": "ns", "n": 10, "p50": 1100.0, "p99": 1800.0},
                "queue": {"unit": "ns", "n": 10, "p50": 55000.0, "p99": 90000.0},
                "empty": {"unit": "ns", "n": 0, "p50": float("nan"), "p99": float("nan")}},
    "ratios": {"queue_over_swmr": 50.0, "swmr_over_pipe": 0.03, "plain": 2.0},
    "goals": [{"name": "queue_over_swmr", "target": ">= 20 x", "actual": 50.0, "met": True},
              {"name": "swmr_over_pipe", "target": "<= 0.1 x", "actual": 0.03, "met": True}],
}


def test_default_suite_has_the_issue_members() -> None:
    names = [m.name for m in load_suite(DEFAULT_SUITE)]
    assert names == ["ipc_hop", "feed_parse", "tick_to_decision", "capture_throughput", "exporter_overhead", "session",
                     "wire_to_decision"]
    assert [m.name for m in load_suite(DEFAULT_SUITE, ["session"])] == ["session"]


def test_unknown_only_and_bad_suite_files_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match=r"unknown suite members \['nope'\]"):
        load_suite(DEFAULT_SUITE, ["nope"])
    bad = tmp_path / "s.toml"
    bad.write_text('[[member]]\nname = "a"\nkind = "weird"\nmodule = "m"\n')
    with pytest.raises(SuiteError, match=r"s\.toml"):
        load_suite(bad)
    bad.write_text('[[member]]\nname = "a"\nkind = "benchmark"\nmodule = "m"\ntypo = 1\n')
    with pytest.raises(SuiteError, match="typo"):
        load_suite(bad)
    bad.write_text('[[member]]\nname = "a"\nkind = "benchmark"\nmodule = "m"\nstats = ["p42"]\n')
    with pytest.raises(SuiteError, match="p42"):
        load_suite(bad)
    bad.write_text("[[member]\n")
    with pytest.raises(SuiteError, match="not valid TOML"):
        load_suite(bad)
    with pytest.raises(SuiteError, match="does not exist"):
        load_suite(tmp_path / "absent.toml")


def test_argv_and_module_lookup(tmp_path: Path) -> None:
    assert BENCH.argv(True, Path("/o.json")) == [sys.executable, "-m", "benchmarks.ipc_hop", "--quick",
                                                  "--json", "/o.json"]
    assert BENCH.argv(False, Path("/o.json"))[-3:] == ["benchmarks.ipc_hop", "--json", "/o.json"]
    assert SESSION.argv(True, Path("/d"))[-2:] == ["--out", "/d"]
    assert BENCH.module_file(tmp_path) is None
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "ipc_hop.py").write_text("")
    assert BENCH.module_file(tmp_path) == tmp_path / "benchmarks" / "ipc_hop.py"


def test_extract_benchmark_ids_and_directions() -> None:
    s = extract_benchmark(BENCH, DOC)
    assert s.values == {"ipc_hop/swmr.p50": 1100.0, "ipc_hop/swmr.p99": 1800.0, "ipc_hop/queue.p50": 55000.0,
                        "ipc_hop/queue.p99": 90000.0, "ipc_hop/ratio.queue_over_swmr": 50.0,
                        "ipc_hop/ratio.swmr_over_pipe": 0.03, "ipc_hop/ratio.plain": 2.0}
    assert s.directions["ipc_hop/swmr.p99"] == "lower"
    assert s.directions["ipc_hop/ratio.queue_over_swmr"] == "higher"
    assert s.directions["ipc_hop/ratio.swmr_over_pipe"] == "lower"
    assert s.directions["ipc_hop/ratio.plain"] == "unknown"
    with pytest.raises(ValueError, match="no 'metrics'"):
        extract_benchmark(BENCH, {"ratios": {}})


def test_suite_direction_overrides() -> None:
    m = Member(name="ipc_hop", kind="benchmark", module="x", directions={"ipc_hop/ratio.pl*": "higher"})
    s = extract_benchmark(m, DOC)
    apply_overrides(m, s)
    assert s.directions["ipc_hop/ratio.plain"] == "higher"


def test_extract_session_reads_metrics_object_and_scales_units() -> None:
    summary = {"schema": 1, "headline_counts": {"fires": 10},
               "metrics": {"tick_to_decision": {"n": 100, "p50": 5200, "p99": 9100.0, "max": 20000},
                           "info_age.binance": {"n": 50, "p50_us": 3.0, "p99_us": 9.5},
                           "queue_transit": {"n": 0, "p50": None, "p99": None}},
               "exec": {"p50": 1.0}}
    s = extract_session(SESSION, summary)
    assert s.values == {"session/tick_to_decision.p50": 5200.0, "session/tick_to_decision.p99": 9100.0,
                        "session/info_age.binance.p50": 3000.0, "session/info_age.binance.p99": 9500.0}
    with pytest.raises(ValueError, match="top-level keys"):
        extract_session(SESSION, {"metrics": {}, "other": 1})


def test_normalize_by_in_run_reference_or_calibration() -> None:
    s = extract_benchmark(BENCH, DOC)
    normalize(BENCH, s, calibration_ns=1e6)
    assert s.normalized["ipc_hop/swmr.p50"] == pytest.approx(1100 / 55000)
    assert s.normalized["ipc_hop/swmr.p99"] == pytest.approx(1800 / 90000)
    assert "ipc_hop/queue.p50" not in s.normalized
    assert s.normalized["ipc_hop/ratio.queue_over_swmr"] == 50.0
    assert "queue" in s.reference
    no_ref = Member(name="ipc_hop", kind="benchmark", module="x")
    s2 = extract_benchmark(no_ref, DOC)
    normalize(no_ref, s2, calibration_ns=2000.0)
    assert s2.normalized["ipc_hop/queue.p50"] == pytest.approx(27.5)
    assert "calibration" in s2.reference


def test_threshold_precedence_and_parsing() -> None:
    m = Member(name="session", kind="session", module="caerus", thresholds={"session/*.p99": 0.3})
    assert threshold_for("session/t2d.p99", m, {}, 0.1) == 0.3
    assert threshold_for("session/t2d.p50", m, {}, 0.1) == 0.1
    assert threshold_for("session/t2d.p99", m, {"session/*": 0.5}, 0.1) == 0.5
    assert parse_thresholds(["session/*.p99=0.25", "ipc_hop/*=15%"]) == {"session/*.p99": 0.25, "ipc_hop/*": 0.15}
    for bad in ("nopattern", "=0.1", "x=abc", "x=-1"):
        with pytest.raises(UsageError, match="PATTERN=FRACTION"):
            parse_thresholds([bad])
