"""The report of a many-instrument session: the Instruments table and chart, and the cost curve when one was run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from caerus import instruments
from caerus.instruments import BTC, Instrument, InstrumentSet
from caerus.report import tables
from caerus.report.render import render_sessions
from caerus.session.synthetic import make_session

ETH = Instrument(id=1, name="ETH", binance_symbol="ETHUSDT", hl_coin="ETH", tick_size=0.01, lot_size=0.001,
                 min_qty=0.001, min_notional=20.0, hl_asset=1, sz_decimals=4)


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A synthetic session folder of two instruments (made before the per-test in-process guard applies: collecting
    a session reads the environment with subprocesses)."""
    d = make_session(tmp_path_factory.mktemp("many") / "sessions", intervals=5, samples_per_interval=50)
    instruments.save(InstrumentSet([BTC, ETH]), d / instruments.FILE_NAME)
    summary = json.loads((d / "summary.json").read_text())
    c = summary["counters"]
    for i, (bn, hl, fires) in enumerate(((900, 80, 7), (400, 60, 3))):
        c["feed-binance"] |= {f"inst.{i}.books": bn, f"inst.{i}.rejects": 1, f"inst.{i}.stale": i,
                              f"inst.{i}.untradeable_ns": (i + 1) * 1_000_000_000}
        c["feed-hyperliquid"] |= {f"inst.{i}.books": hl, f"inst.{i}.rejects": 0, f"inst.{i}.stale": 0,
                                  f"inst.{i}.untradeable_ns": 0}
        c["strategy"] |= {f"inst.{i}.books": bn + hl, f"inst.{i}.orders": fires, f"inst.{i}.guards": 2}
        c["execution"] |= {f"inst.{i}.position": 0.001 * (i + 1), f"inst.{i}.paper_pnl": 1.5,
                           f"inst.{i}.paper_fills": fires}
    (d / "summary.json").write_text(json.dumps(summary))
    return d


def test_rows_name_each_instrument_and_total_the_fleet(many: Path) -> None:
    summary = json.loads((many / "summary.json").read_text())
    rows = tables.instrument_rows(summary, {0: "BTC", 1: "ETH"})
    assert [r[0] for r in rows] == ["BTC", "ETH", "all 2"]
    assert rows[0][1] == "900" and rows[1][1] == "400" and rows[2][1] == "1,300"  # Binance books
    assert rows[2][4] == "1" and rows[2][5] == "2.0"  # silences add up; untradeable time: the worst instrument
    assert rows[2][9] == "-"  # positions in different units are not added
    assert tables.instrument_rows({"counters": {"strategy": {"books": 3}}}, {}) == []  # one instrument: no table


@pytest.mark.slow
def test_the_report_has_the_table_the_chart_and_the_newest_cost_curve(many: Path) -> None:
    d = many
    curve = {"benchmark": "symbols_scaling", "started_ns": 1_800_000_000_000_000_000,
             "extra": {"rate_hz": 20.0, "seconds": 8.0, "per_count": {
                 str(n): {"feed_cpu_ns_per_msg": 1e5 / n, "feed_internal.binance": {"p50": 9000.0},
                          "tick_to_decision": {"p50": 1e5, "p99": 3e6}} for n in (1, 4, 16, 64)}}}
    reports = d.parent.parent / "reports"  # the default layout: <root>/sessions/<session>, <root>/reports
    reports.mkdir()
    (reports / "symbols_scaling.json").write_text(json.dumps(curve))
    render_sessions([d], reports)
    md = (d / "report.md").read_text()
    assert "## Instruments" in md and "| ETH |" in md and "| all 2 |" in md
    assert "Per instrument: books per venue" in md and "The cost curve: benchmarks/symbols_scaling" in md
    for rel in re.findall(r"\]\((charts/(?:instruments|cost_curve)\.png)\)", md):
        assert (d / rel).stat().st_size > 1000
    assert len(re.findall(r"charts/(instruments|cost_curve)\.png", md)) == 2


def test_each_instrument_has_its_tick_to_decision_p50_p99_and_the_total_row_the_headlines(many: Path) -> None:
    summary = json.loads((many / "summary.json").read_text())
    summary["metrics"] = {
        "tick_to_decision": {"p50": 12_000, "p99": 900_000, "n": 10},
        "inst.BTC.tick_to_decision": {"p50": 11_000, "p99": 15_000, "n": 7},
        "inst.ETH.tick_to_decision": {"p50": 850_000, "p99": 900_000, "n": 3},  # the slow one, visible
    }
    rows = tables.instrument_rows(summary, {0: "BTC", 1: "ETH"})
    col = {h: k for k, h in enumerate(tables.INSTRUMENT_HEADERS)}
    p50, p99, n = col["tick-to-decision p50"], col["tick-to-decision p99"], col["tick-to-decision n"]
    assert [r[p50] for r in rows] == ["11 us", "850 us", "12 us"]
    # a p99 of fewer than 100 fires is their maximum, and says so (caerus.report.samples)
    assert [r[p99] for r in rows] == ["15 us (= max)", "900 us (= max)", "900 us (= max)"]
    assert [r[n] for r in rows] == ["7", "3", "10"]
    assert all(len(r) == len(tables.INSTRUMENT_HEADERS) for r in rows)
    assert rows[0][col["venue position"]] == "-"  # the columns before are where they were
    summary["metrics"] = {}  # an older session: no per-instrument histograms
    assert tables.instrument_rows(summary, {0: "BTC", 1: "ETH"})[0][p50] == "-"
    assert tables.instrument_rows(summary, {0: "BTC", 1: "ETH"})[0][col["info age p50 / p99, Binance"]] == "-"
    # the headline keeps to the fleet's metrics: per-instrument ones are this table's
    assert not any(t.startswith("inst.") for t in tables.shown_tags(
        {"inst.BTC.tick_to_decision": {"n": 7}, "tick_to_decision": {"n": 7}}))


def test_a_split_venue_is_one_column_summed_over_its_feed_processes() -> None:
    """The plan split Binance (caerus.plan.feed_shares): each share counts its own instruments; the table adds
    them up per venue, and an untradeable time is the worst share's."""
    counters = {
        "feed-binance-1": {"inst.0.books": 900, "inst.0.untradeable_ns": 2_000_000_000},
        "feed-binance-2": {"inst.1.books": 400, "inst.1.untradeable_ns": 1_000_000_000},
        "feed-hyperliquid": {"inst.0.books": 80, "inst.1.books": 60},
        "strategy": {"inst.0.books": 980, "inst.1.books": 460, "inst.0.orders": 7, "inst.1.orders": 3},
    }
    rows = tables.instrument_rows({"counters": counters}, {0: "BTC", 1: "ETH"})
    assert [r[:3] for r in rows] == [["BTC", "900", "80"], ["ETH", "400", "60"], ["all 2", "1,300", "140"]]
    assert [r[5] for r in rows] == ["2.0", "1.0", "2.0"]
    series = tables.instrument_series({"counters": counters}, {0: "BTC", 1: "ETH"})
    assert series is not None and series[1] == [900.0, 400.0] and series[2] == [80.0, 60.0]


def test_each_instrument_has_its_feed_internal_and_info_age_per_venue(many: Path) -> None:
    """Issue 32 item 4: the feeds' inst.<NAME>.feed_internal|info_age.<venue> intervals, p50 / p99 per instrument
    and venue; the total row is the fleet's histogram (the headline's)."""
    summary = json.loads((many / "summary.json").read_text())
    summary["metrics"] = {
        "feed_internal.binance": {"p50": 9_000, "p99": 40_000, "n": 10},
        "inst.BTC.feed_internal.binance": {"p50": 8_000, "p99": 20_000, "n": 7},
        "inst.ETH.feed_internal.binance": {"p50": 30_000, "p99": 40_000, "n": 3},
        "info_age.hyperliquid": {"p50": 3_000_000, "p99": 9_000_000, "n": 5},
        "inst.BTC.info_age.hyperliquid": {"p50": 2_000_000, "p99": 2_500_000, "n": 4},
        "inst.ETH.info_age.hyperliquid": {"p50": 9_000_000, "p99": 9_000_000, "n": 1},
    }
    rows = tables.instrument_rows(summary, {0: "BTC", 1: "ETH"})
    col = {h: k for k, h in enumerate(tables.INSTRUMENT_HEADERS)}
    fi, age = col["feed internal p50 / p99, Binance"], col["info age p50 / p99, Hyperliquid"]
    assert [r[fi] for r in rows] == ["8 us / 20 us", "30 us / 40 us", "9 us / 40 us"]
    assert [r[age] for r in rows] == ["2 ms / 2.5 ms", "9 ms / 9 ms", "3 ms / 9 ms"]
    assert [r[col["feed internal p50 / p99, Hyperliquid"]] for r in rows] == ["-", "-", "-"]  # no samples: "-"
    assert all(len(r) == len(tables.INSTRUMENT_HEADERS) for r in rows)
    assert not any(tables.is_instrument_tag(t) for t in tables.shown_tags(summary["metrics"]))
