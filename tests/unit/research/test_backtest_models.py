"""The backtest's fill model, latency model and book events, on scripted inputs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from caerus.metrics import hdr
from caerus.records.book import BOOK_ASK_PX, BOOK_T_PUBLISH
from caerus.research.backtest.events import BookEvents, EventsError
from caerus.research.backtest.fills import FILLED, NOT_FILLED, PARTIAL, FillError, FillModel, FillRules
from caerus.research.backtest.latency import LatencyDraws, LatencyError, LatencyModel
from caerus.wire import BOOK, BookFlags

V, S = int(BookFlags.VALID), int(BookFlags.STALE)


def _model(rules: FillRules, books: list[tuple[int, int, float, float, float, float]]) -> FillModel:
    """books: (t, flags, bid, bid_qty, ask, ask_qty) of the Hyperliquid book of instrument 0."""
    a = np.array(books, dtype=float)
    n = len(books)
    return FillModel(rules, 2, np.zeros(n, dtype=np.uint16), np.full(n, 2, dtype=np.uint8),
                     a[:, 1].astype(np.uint8), a[:, 0].astype(np.int64), a[:, 2], a[:, 3], a[:, 4], a[:, 5])


BOOKS = [(100, V, 99.0, 2.0, 101.0, 1.0), (200, V, 104.0, 3.0, 106.0, 0.5), (300, V | S, 104.0, 3.0, 106.0, 0.5)]
#: one order against one book, continuously (the rule at arrival; the block clock and depletion: their own tests)
CONTINUOUS = FillRules(blocks=False, deplete=False)


def test_an_ioc_meets_the_book_as_of_its_arrival() -> None:
    m = _model(CONTINUOUS, BOOKS)
    assert m.match(0, 1, 102.0, 0.5, 150) == (FILLED, 101.0, 0.5)  # the book at 100 prevails at 150
    assert m.match(0, 1, 102.0, 0.5, 200) == (NOT_FILLED, 0.0, 0.0)  # at 200 the ask moved past the limit


def test_partial_at_the_top_size_and_sells_at_the_bid() -> None:
    m = _model(CONTINUOUS, BOOKS)
    assert m.match(0, 1, 101.0, 2.0, 150) == (PARTIAL, 101.0, 1.0)
    assert m.match(0, -1, 99.0, 5.0, 150) == (PARTIAL, 99.0, 2.0)
    assert m.match(0, -1, 99.5, 1.0, 150) == (NOT_FILLED, 0.0, 0.0)
    assert _model(replace(CONTINUOUS, limit_to_top_size=False), BOOKS).match(0, 1, 101.0, 2.0, 150) == (
        FILLED, 101.0, 2.0)


def test_no_book_before_the_first_and_none_after_a_stale_record() -> None:
    m = _model(CONTINUOUS, BOOKS)
    assert m.match(0, 1, 1e9, 0.1, 99) == (NOT_FILLED, 0.0, 0.0)
    assert m.match(0, 1, 1e9, 0.1, 300) == (NOT_FILLED, 0.0, 0.0)
    assert m.match(1, 1, 1e9, 0.1, 150) == (NOT_FILLED, 0.0, 0.0)  # an instrument without books


def test_queue_share_and_impact_terms() -> None:
    m = _model(replace(CONTINUOUS, top_fraction=0.5, impact_bps=10.0), BOOKS)
    outcome, px, qty = m.match(0, 1, 102.0, 1.0, 150)
    assert (outcome, qty) == (PARTIAL, 0.5)
    assert px == pytest.approx(101.0 * (1 + 10e-4))  # the whole (remaining) top taken: the full impact


def test_fees_by_venue_and_tier_and_bad_rules() -> None:
    assert FillRules().fee_bps_of(2) == 4.5 and FillRules(fee_tier=3).fee_bps_of(2) == 3.0
    assert FillRules(fee_bps=1.0).fee_bps_of(1) == 1.0
    for bad in (FillRules(clock="wall"), FillRules(top_fraction=0.0), FillRules(fee_tier=9)):
        with pytest.raises(FillError):
            bad.check()


def _session_with(path: Path, values: dict[str, list[int]]) -> Path:
    log = hdr.IntervalLog(path / "proc.hlog", list(values))
    for tag, vals in values.items():
        log.record_values(tag, np.array(vals, dtype=np.int64))
    log.close()
    return path


def test_latency_from_a_session_draws_each_segment_from_its_histogram(tmp_path: Path) -> None:
    sess = _session_with(tmp_path, {"queue_transit": [10_000] * 50 + [30_000] * 50, "book_hop": [2_000] * 10,
                                    "pickup_to_sent": [5_000] * 10, "seen_to_decision": [1_000] * 10})
    model = LatencyModel.from_session(sess, wire_ns=0)
    assert "feed_internal.binance" in model.missing and model.origin["wire"] == "set: 0 ns one way"
    draws = LatencyDraws(model, seed=7)
    paths = [draws.order() for _ in range(2000)]
    qts = {round(p[1], -3) for p in paths}
    assert qts == {10_000, 30_000}  # both modes of the bimodal histogram, nothing else
    assert all(p[0] == pytest.approx(1_000, rel=1e-3) and p[2] == pytest.approx(5_000, rel=1e-3) for p in paths)
    assert all(p[3] == 0 for p in paths)  # wire: set to 0
    again = LatencyDraws(model, seed=7)
    assert [again.order() for _ in range(2000)] == paths  # seeded


def test_latency_add_goes_on_the_wire_each_way() -> None:
    draws = LatencyDraws(LatencyModel.constant(1_000, add_ns=500), seed=1)
    dec, qt, ps, wire, back = draws.order()
    assert (dec, qt, ps, wire, back) == (0, 0, 0, 1_500, 1_500)


def test_latency_from_a_missing_session_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(LatencyError, match="no such session folder"):
        LatencyModel.from_session(tmp_path / "nope")
    with pytest.raises(LatencyError, match=r"no \.hlog files"):
        LatencyModel.from_session(tmp_path)


def test_feed_latency_keeps_measured_times_and_draws_the_rest() -> None:
    draws = LatencyDraws(LatencyModel.constant(0, feed_ns=7), seed=1)
    venue = np.array([1, 2], dtype=np.uint8)
    recv, pub, seen = draws.t_seen(venue, np.array([10, 20]), np.array([15, 25]), np.array([16, 0]))
    assert recv.tolist() == [15, 25] and pub.tolist() == [16, 25] and seen.tolist() == [23, 32]


def test_book_events_sort_and_build_book_records() -> None:
    ev = BookEvents.from_columns({"venue": ["hyperliquid", "binance"], "flags": [1, 1], "symbol": [0, 0],
                                  "seq": [5, 6], "t_exchange": [1, 1], "t_recv": [20, 10], "bid_px": [1.0, 2.0],
                                  "bid_qty": [1.0, 1.0], "ask_px": [1.5, 2.5], "ask_qty": [1.0, 1.0]})
    assert ev.venue.tolist() == [1, 2]
    rec = ev.records(np.array([11, 21]))[0]
    assert len(rec) == len(BOOK.names) and rec[BOOK_T_PUBLISH] == 11 and rec[BOOK_ASK_PX] == 2.5
    with pytest.raises(EventsError, match="lack column"):
        BookEvents.from_columns({"t_recv": [1]})
    with pytest.raises(EventsError, match="unknown venue"):
        BookEvents.from_columns({"venue": ["kraken"], "flags": [1], "symbol": [0], "seq": [1], "t_exchange": [1],
                                 "t_recv": [1], "bid_px": [1.0], "bid_qty": [1.0], "ask_px": [1.0],
                                 "ask_qty": [1.0]})
