"""Execution as the fleet really executes (issue 45, item 3): Hyperliquid's block clock, fills that deplete the top,
the venue-to-us delay on market data, the fleet's latency profile as the default, ZERO named, the latency points
(0, p50, p99, 2x) and fees as FACTS.md states them -- each on small scripted books with a known answer."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from caerus import instruments
from caerus.metrics import hdr
from caerus.research.backtest import engine, profile, runner, sources
from caerus.research.backtest.events import BookEvents
from caerus.research.backtest.fills import (
    FILLED,
    HL_BLOCK_NS_PUBLISHED,
    NOT_FILLED,
    PARTIAL,
    FillModel,
    FillRules,
    book_met,
    estimate_block_ns,
)
from caerus.research.backtest.latency import (
    DEFAULT_PROFILE,
    SEGMENTS,
    Distribution,
    LatencyDraws,
    LatencyModel,
    latency_points,
)
from caerus.strategy.config import StrategyConfig
from caerus.wire import BookFlags, Venue

MS = 1_000_000
T0 = 1_700_000_000_000_000_000
V = int(BookFlags.VALID)
BN, HL = int(Venue.BINANCE), int(Venue.HYPERLIQUID)


def _fills(rules: FillRules, books: list[tuple[int, float, float, float, float]], venue: int = HL) -> FillModel:
    """books: (t ns, bid, bid_qty, ask, ask_qty) of ``venue``'s instrument 0, all tradeable."""
    a = np.array(books, dtype=float)
    n = len(books)
    return FillModel(rules, venue, np.zeros(n, dtype=np.uint16), np.full(n, venue, dtype=np.uint8),
                     np.full(n, V, dtype=np.uint8), a[:, 0].astype(np.int64), a[:, 1], a[:, 2], a[:, 3], a[:, 4])


# two Hyperliquid blocks 70 ms apart: the second moved the ask from 101 to 103
BLOCKS = [(0, 99.0, 1.0, 101.0, 1.0), (70 * MS, 101.0, 1.0, 103.0, 1.0)]


def test_an_ioc_between_two_blocks_fills_at_the_next_blocks_book() -> None:
    rules = FillRules(block_ns=70 * MS)
    m = _fills(rules, BLOCKS)
    # a buy at 102 reaching the venue at 30 ms, between the blocks: it is in the block at 70 ms, whose ask is 103
    assert m.fill(0, 1, 102.0, 0.5, 30 * MS) == (NOT_FILLED, 0.0, 0.0, 70 * MS)
    assert m.fill(0, 1, 104.0, 0.5, 30 * MS) == (FILLED, 103.0, 0.5, 70 * MS)  # at that block's ask, at its time
    # the old rule (continuous matching at arrival) filled it at the book the strategy saw
    old = _fills(FillRules(blocks=False), BLOCKS)
    assert old.fill(0, 1, 102.0, 0.5, 30 * MS) == (FILLED, 101.0, 0.5, 30 * MS)


def test_the_vectorised_block_rule_meets_the_book_the_fill_model_meets() -> None:
    """fills.book_met (what the training target reads) and FillModel.fill (what the backtest fills at) are one rule:
    for arrivals anywhere around irregular blocks, they meet the same book at the same time."""
    rng = np.random.default_rng(2)
    times = np.cumsum(rng.choice([70, 140, 210, 700], size=200) * MS)
    books = [(int(t), 100.0 + k, 1.0, 101.0 + k, 1.0) for k, t in enumerate(times)]
    arrivals = rng.integers(-50 * MS, int(times[-1]) + 100 * MS, size=2000)
    for block in (70 * MS, 0):
        m = _fills(FillRules(block_ns=block or None, blocks=block > 0, deplete=False), books)
        met = book_met(times, arrivals, block)
        for t, i in zip(arrivals.tolist(), met.tolist(), strict=True):
            outcome, px, _, t_match = m.fill(0, 1, 1e9, 0.1, t)
            if i < 0:
                assert outcome == NOT_FILLED
            else:
                assert px == books[i][3]
                assert t_match == (int(times[i]) if times[i] > t else t)


def test_no_book_within_a_block_interval_means_the_block_left_the_top_unchanged() -> None:
    books = [(0, 99.0, 1.0, 101.0, 1.0), (200 * MS, 101.0, 1.0, 103.0, 1.0)]
    m = _fills(FillRules(block_ns=70 * MS), books)
    # the next update is 170 ms after arrival, beyond one block: the block that took the order kept the top
    assert m.fill(0, 1, 102.0, 0.5, 30 * MS) == (FILLED, 101.0, 0.5, 30 * MS)
    # at exactly one block interval the next book is that block
    assert m.fill(0, 1, 102.0, 0.5, 130 * MS) == (NOT_FILLED, 0.0, 0.0, 200 * MS)
    # a book stamped at the arrival time is already the venue's state (not the next block)
    assert m.fill(0, 1, 104.0, 0.5, 200 * MS) == (FILLED, 103.0, 0.5, 200 * MS)


def test_binance_keeps_continuous_matching_at_arrival() -> None:
    m = _fills(FillRules(block_ns=70 * MS), BLOCKS, venue=BN)
    assert not m.blocks and "continuously" in m.block_source
    assert m.fill(0, 1, 102.0, 0.5, 30 * MS) == (FILLED, 101.0, 0.5, 30 * MS)


def test_the_paper_clock_has_no_block_rule() -> None:
    m = _fills(FillRules.paper(), BLOCKS)  # the publish clock: the book the engine had read
    assert not m.blocks and m.fill(0, 1, 102.0, 0.5, 30 * MS) == (FILLED, 101.0, 0.5, 30 * MS)


def test_in_the_replay_an_order_between_blocks_fills_at_the_next_blocks_book() -> None:
    # Binance jumps 10 bps at 100 ms; Hyperliquid's next block (101 ms) has moved its ask from 100 010 to 100 015
    rows = [(0, HL, 99_990.0, 100_010.0), (1, BN, 99_990.0, 100_010.0), (50, BN, 99_990.0, 100_010.0),
            (100, BN, 100_090.0, 100_110.0), (101, HL, 99_995.0, 100_015.0), (150, HL, 100_090.0, 100_110.0)]
    t = np.array([T0 + r[0] * MS for r in rows], dtype=np.int64)
    ev = BookEvents.from_columns({
        "venue": [r[1] for r in rows], "flags": [V] * len(rows), "symbol": [0] * len(rows),
        "seq": list(range(len(rows))), "t_exchange": t, "t_recv": t, "t_publish": t,
        "bid_px": [r[2] for r in rows], "bid_qty": [1.0] * len(rows), "ask_px": [r[3] for r in rows],
        "ask_qty": [1.0] * len(rows)})
    cfg = StrategyConfig(warmup_ms=0.0, cooldown_ms=0.0, entry_bps=5.0, exit_bps=1.0, slippage_bps=2.0)

    def first(rules: FillRules) -> tuple[float, float, int]:
        out = engine.run(ev, engine.RunSpec(cfg, instruments.DEFAULT, LatencyModel.zero(), rules, seed=1))
        return float(out.orders["fill_px"][0]), float(out.orders["fill_qty"][0]), int(out.orders["t_match"][0])

    assert first(FillRules(block_ns=70 * MS)) == (100_015.0, cfg.order_qty, T0 + 101 * MS)  # the block it reached
    assert first(FillRules(blocks=False)) == (100_010.0, cfg.order_qty, T0 + 100 * MS)  # the book it saw


def test_the_block_interval_is_estimated_from_update_times() -> None:
    rng = np.random.default_rng(3)
    blocks = np.cumsum(rng.uniform(60 * MS, 80 * MS, 3000)).astype(np.int64)  # 70 ms +- 10 ms
    shown = blocks[rng.random(len(blocks)) < 0.5]  # only blocks that changed the top are published
    est, how = estimate_block_ns(shown // MS * MS)  # stamped in whole ms, as the venue does
    assert abs(est - 70 * MS) <= 3 * MS and "estimated from the data" in how
    few, why = estimate_block_ns(shown[:10])
    assert few == HL_BLOCK_NS_PUBLISHED and "FACTS.md" in why


def test_a_second_order_against_the_same_book_gets_what_is_left_as_partial() -> None:
    books = [(0, 99.0, 2.0, 101.0, 1.0), (200 * MS, 99.0, 2.0, 101.0, 1.0)]
    m = _fills(FillRules(block_ns=70 * MS), books)
    assert m.fill(0, 1, 101.0, 0.6, 10 * MS) == (FILLED, 101.0, 0.6, 10 * MS)
    outcome, px, qty, _ = m.fill(0, 1, 101.0, 0.6, 20 * MS)  # the same book state: 0.4 left of the ask's 1.0
    assert (outcome, px) == (PARTIAL, 101.0) and qty == pytest.approx(0.4)
    assert m.fill(0, 1, 101.0, 0.6, 30 * MS)[:3] == (NOT_FILLED, 0.0, 0.0)  # nothing left
    assert m.fill(0, -1, 99.0, 1.5, 30 * MS)[:3] == (FILLED, 99.0, 1.5)  # the bid is another side: whole
    assert m.fill(0, 1, 101.0, 0.6, 200 * MS)[:3] == (FILLED, 101.0, 0.6)  # the next book refreshed the top
    # without depletion (the paper transport's rule) every order sees the whole top
    flat = _fills(FillRules(block_ns=70 * MS, deplete=False), books)
    assert [flat.fill(0, 1, 101.0, 0.6, 10 * MS)[0] for _ in range(3)] == [FILLED] * 3


def test_competition_leaves_a_share_of_the_top_and_depletion_takes_from_that_share() -> None:
    m = _fills(FillRules(block_ns=70 * MS, top_fraction=0.5), [(0, 99.0, 2.0, 101.0, 1.0)])
    assert m.fill(0, 1, 101.0, 0.3, 10 * MS)[:3] == (FILLED, 101.0, 0.3)
    outcome, _, qty, _ = m.fill(0, 1, 101.0, 0.3, 10 * MS)
    assert outcome == PARTIAL and qty == pytest.approx(0.2)


def test_the_default_latency_is_the_fleets_profile_not_zero_and_the_result_names_it() -> None:
    lat = runner.BacktestOptions().latency
    assert not lat.is_zero and lat.source.startswith("profile fleet-2vcpu")
    q = lat.order_path_quantiles()
    assert q[0.5] > 0 and q[0.99] > q[0.5]
    loaded = sources.offline_market(30, seed=2)
    doc, _ = runner.run_backtest(loaded, runner.BacktestOptions())
    a = doc["assumptions"]
    assert a["latency"]["zero"] is False and a["latency"]["headline"].startswith("latency: profile fleet-2vcpu")
    assert "ZERO" not in a["latency"]["headline"]
    assert a["fills"]["blocks"] and a["fills"]["deplete"]
    assert a["fills"]["hl_block"] == {"blocks": True, "block_ns": 70 * MS,
                                      "block_source": "the source's (the offline market's hl_block_ms)"}


def test_zero_latency_is_named_in_every_output() -> None:
    for lat in (LatencyModel.zero(), LatencyModel.constant(0)):
        assert lat.is_zero and lat.headline() == "latency: ZERO (optimistic; not the fleet's)"
        assert lat.describe()["zero"] is True
    assert "ZERO (optimistic" in LatencyModel.constant(0, feed_ns=300_000).source  # orders at zero, named
    assert not LatencyModel.constant(MS).is_zero


def test_the_profile_records_how_it_was_made_and_which_numbers_are_measured() -> None:
    doc = json.loads(DEFAULT_PROFILE.read_text())
    made = doc["produced"]
    assert "caerus session" in made["command"] and made["date_utc"] and made["session"]
    assert made["machine"]["logical_cpus"] == 2
    segs = doc["segments"]
    for s in ("seen_to_decision", "queue_transit", "pickup_to_sent", "book_hop", "feed_internal.binance",
              "feed_internal.hyperliquid"):
        assert segs[s]["origin"] == "measured" and segs[s]["n"] > 0, s
    for s in ("info_age.binance", "info_age.hyperliquid", "wire"):
        assert segs[s]["origin"] == "published" and "FACTS.md" in segs[s]["basis"], s
    lat = LatencyModel.default()
    # the published venue figures come back out of the fitted shapes
    bn, hl = lat.segments["info_age.binance"], lat.segments["info_age.hyperliquid"]
    assert bn.values.min() >= 2_600_000 and bn.p50 == pytest.approx(3_100_000, rel=0.005)
    assert hl.values.min() >= 204_000_000 and hl.p50 == pytest.approx(285_000_000, rel=0.005)
    assert lat.segments["wire"].mean == pytest.approx(2_000_000, rel=0.01)
    assert lat.segments["wire"].p99 == pytest.approx(6_500_000, rel=0.02)
    # the measured ones are the session's histograms, sample for sample
    assert lat.segments["queue_transit"].n == segs["queue_transit"]["n"]


def test_offline_books_reach_the_strategy_after_each_venues_delay_in_order() -> None:
    ev = sources.offline_market(60, seed=1).events
    draws = LatencyDraws(LatencyModel.default(), seed=4)
    recv, _, _ = draws.t_seen(ev.venue, ev.t_exchange, ev.t_recv, ev.t_publish, have_recv=False)
    for v, floor in ((BN, 2_600_000), (HL, 204_000_000)):
        m = ev.venue == v
        rows = np.flatnonzero(m)[np.argsort(ev.t_exchange[m], kind="stable")]
        assert (recv[rows] - ev.t_exchange[rows]).min() >= floor
        assert bool((np.diff(recv[rows]) >= 0).all())  # one connection: no book overtakes the one before it
    zero = LatencyDraws(LatencyModel.zero(), seed=4).t_seen(ev.venue, ev.t_exchange, ev.t_recv, ev.t_publish,
                                                             have_recv=False)
    assert np.array_equal(zero[2], ev.t_exchange)  # ZERO: seen when the venue made it


def _model_with_wire(dist: Distribution) -> LatencyModel:
    segs = {s: Distribution.constant(0) for s in SEGMENTS}
    segs["seen_to_decision"] = Distribution.constant(10_000)
    segs["wire"] = dist
    segs["info_age.hyperliquid"] = Distribution.constant(5 * MS)
    return LatencyModel(segs, "test")


def test_the_latency_points_are_zero_p50_p99_and_twice_each_draw() -> None:
    # order path: 10 us decision + a wire of 1 ms (98 %) or 10 ms (2 %): p50 1.01 ms, p99 10.01 ms
    wire = Distribution(np.array([MS, 10 * MS], dtype=np.int64), np.array([0.98, 1.0]), 100)
    base = _model_with_wire(wire)
    pts = latency_points(base)
    assert [p.name for p in pts] == ["0", "p50", "p99", "2x"]
    assert [p.order_path_ns for p in pts] == [0, MS + 10_000, 10 * MS + 10_000, None]
    for p in pts[:3]:  # a constant path whose segments sum to the point
        draws = LatencyDraws(p.model, seed=1).order()
        assert sum(draws[:4]) == p.order_path_ns
        assert p.model.segments["info_age.hyperliquid"].p50 == 5 * MS  # the market data's delay is kept
    # 2x: every drawn order latency doubled, draw for draw
    a, b = LatencyDraws(base, seed=9), LatencyDraws(pts[3].model, seed=9)
    for _ in range(300):
        x, y = a.order(), b.order()
        assert y[:4] == tuple(2 * v for v in x[:4])
    assert "ZERO" in LatencyModel.constant(0).headline() and pts[0].label.startswith("order path 0 (optimistic")


def test_the_default_profiles_points_are_its_measured_order_path() -> None:
    doc = json.loads(DEFAULT_PROFILE.read_text())
    pts = {p.name: p.order_path_ns for p in latency_points(LatencyModel.default())}
    assert pts["p50"] == doc["order_path"]["p50_ns"] and pts["p99"] == doc["order_path"]["p99_ns"]
    assert 0 < pts["p50"] < pts["p99"]


def test_a_session_gives_its_own_segments_and_the_profile_the_venues_it_could_not_measure(tmp_path: Path) -> None:
    log = hdr.IntervalLog(tmp_path / "feed.hlog", ["info_age.binance", "queue_transit"])
    log.record_values("info_age.binance", np.full(50, 400_000, dtype=np.int64))
    log.record_values("queue_transit", np.full(50, 20_000, dtype=np.int64))
    log.close()
    (tmp_path / "config.toml").write_text("[session]\nlive = false\n")
    emulated = LatencyModel.from_session(tmp_path)
    assert emulated.segments["info_age.binance"].p50 == pytest.approx(3_100_000, rel=0.005)  # published
    assert "emulator" in emulated.origin["info_age.binance"]
    assert emulated.segments["queue_transit"].p50 == pytest.approx(20_000, rel=0.001)  # measured
    assert emulated.segments["wire"].mean == pytest.approx(2_000_000, rel=0.01)  # not on loopback: published
    (tmp_path / "config.toml").write_text("[session]\nlive = true\n")
    live = LatencyModel.from_session(tmp_path, wire_ns=1_500_000)
    assert live.segments["info_age.binance"].p50 == pytest.approx(400_000, rel=0.001)  # the live venue, measured
    assert live.segments["wire"].p50 == 1_500_000


def test_a_profile_built_from_a_session_draws_what_the_session_measured(tmp_path: Path) -> None:
    sess = tmp_path / "20261207T000000Z-test"
    sess.mkdir()
    rng = np.random.default_rng(0)
    values = {s: rng.integers(1_000, 5 * MS, 400) for s in ("seen_to_decision", "queue_transit", "pickup_to_sent",
                                                             "book_hop", "feed_internal.binance",
                                                             "feed_internal.hyperliquid")}
    log = hdr.IntervalLog(sess / "fleet.hlog", list(values))
    for tag, vals in values.items():
        log.record_values(tag, vals.astype(np.int64))
    log.close()
    out = tmp_path / "p.json"
    built = profile.write(profile.build(sess, "p", "caerus session --duration 1", "test"), out)
    direct = LatencyModel.from_session(sess)
    for s in values:
        assert np.array_equal(built.segments[s].values, direct.segments[s].values), s
        assert built.segments[s].n == 400
    written = json.loads(out.read_text())["order_path"]
    assert (written["p50_ns"], written["p99_ns"]) == tuple(built.order_path_quantiles().values())
    del values["pickup_to_sent"]
    short = tmp_path / "short"
    short.mkdir()
    log = hdr.IntervalLog(short / "fleet.hlog", list(values))
    log.record_values("queue_transit", np.full(3, 1_000, dtype=np.int64))
    log.close()
    with pytest.raises(ValueError, match="did not measure"):
        profile.build(short, "p", "c", "d")


def test_fees_are_facts_taker_fees_by_tier_on_every_fill_and_paper_agrees() -> None:
    from caerus.execution.config import PaperConfig
    from caerus.research.backtest import app

    assert FillRules().fee_bps_of(HL) == 4.5 and FillRules().fee_bps_of(BN) == 5.0  # FACTS.md: taker, tier 0
    parser = __import__("argparse").ArgumentParser()
    app.add_arguments(parser)
    loaded = sources.offline_market(120, seed=2)
    paper = app.build_options(parser.parse_args(["--offline", "120", "--paper"]), loaded)
    assert paper.fills.fee_bps_of(HL) == PaperConfig().taker_bps("hyperliquid") == 4.5
    assert paper.fills.fee_bps_of(BN) == PaperConfig().taker_bps("binance") == 5.0  # each venue's, as the paper
    doc, _ = runner.run_backtest(loaded, runner.BacktestOptions())
    filled = [o for o in doc["orders"] if o["fill_qty"] > 0]
    assert filled and doc["metrics"]["total"]["pnl"]["fees"] == pytest.approx(
        sum(o["fill_px"] * o["fill_qty"] for o in filled) * 4.5e-4)
