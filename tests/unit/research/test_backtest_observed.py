"""Replay as observed (caerus.research.backtest.observed): which books the replay reads, when and in what order, and
the comparison of a replay with its session (caerus.research.backtest.consistency.first_divergence)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from caerus import instruments
from caerus.research.backtest import consistency, engine, fills, latency, observed
from caerus.research.backtest.events import BookEvents
from caerus.strategy.config import StrategyConfig

BN, HL = 1, 2


def _events(rows: list[tuple[int, int, int]]) -> BookEvents:
    """(venue, seq, t_publish) per book, t_recv 1 us before publish."""
    return BookEvents.from_columns({
        "venue": [r[0] for r in rows], "flags": [1] * len(rows), "symbol": [0] * len(rows),
        "seq": [r[1] for r in rows], "t_exchange": [r[2] - 5_000 for r in rows], "t_recv": [r[2] - 1_000 for r in rows],
        "t_publish": [r[2] for r in rows], "bid_px": [100.0] * len(rows), "bid_qty": [1.0] * len(rows),
        "ask_px": [100.1] * len(rows), "ask_qty": [1.0] * len(rows)})


def _reads(rows: list[tuple[int, int, int]], timing: observed.ObservedTiming) -> list[tuple[int, int, int]]:
    """(venue, seq, t_seen) of the books the replay reads, in order."""
    spec = engine.RunSpec(StrategyConfig(), instruments.DEFAULT,
                          replace(latency.LatencyModel.constant(0), observed=timing), fills.FillRules())
    ev = _events(rows)
    _, recs, seen, _ = engine.prepare(ev, spec, observed.ObservedDraws(spec.latency, 1))
    return [(r[0], r[6], t) for r, t in zip(recs, seen, strict=True)]


def _timing(seen: dict[tuple[int, int, int], int], hop: int = 10, stalls: tuple[tuple[int, int], ...] = ()
            ) -> observed.ObservedTiming:
    return observed.ObservedTiming(seen, {k: (1, 2, 3) for k in seen}, hop, (7, 8, 9), stalls)


def test_other_books_are_read_the_quickest_hop_after_publish_and_a_trigger_when_the_session_read_it() -> None:
    rows = [(BN, 1, 1_000), (HL, 1, 2_000), (BN, 2, 3_000), (HL, 2, 9_000)]
    got = _reads(rows, _timing({(BN, 0, 2): 3_500}))
    assert got == [(BN, 1, 1_010), (HL, 1, 2_010), (BN, 2, 3_500), (HL, 2, 9_010)]


def test_a_trigger_read_late_holds_back_what_was_published_after_it_and_the_burst_is_read_newest_first() -> None:
    # BN 2 read 5 us late: HL 1 and BN 3 were published meanwhile and are read at the same moment, Binance's ring
    # first (HL 1 after BN 3 although published before it); BN 3 follows the trigger, which is never skipped
    rows = [(BN, 1, 1_000), (BN, 2, 2_000), (HL, 1, 3_000), (BN, 3, 4_000), (BN, 4, 20_000)]
    got = _reads(rows, _timing({(BN, 0, 2): 7_000}))
    assert got == [(BN, 1, 1_010), (BN, 2, 7_000), (BN, 3, 7_000), (HL, 1, 7_000), (BN, 4, 20_010)]


def test_a_stall_skips_all_but_the_newest_book_per_venue_published_in_it() -> None:
    rows = [(BN, 1, 1_000), (BN, 2, 2_000), (HL, 1, 2_500), (BN, 3, 3_000), (HL, 2, 3_500), (BN, 4, 9_000)]
    got = _reads(rows, _timing({}, stalls=((1_500, 5_000),)))
    assert got == [(BN, 1, 1_010), (BN, 3, 5_000), (HL, 2, 5_000), (BN, 4, 9_010)]


def test_a_trigger_read_quicker_than_the_histograms_quickest_hop_is_still_read_when_observed() -> None:
    # the histogram's quickest hop (50) is above this trigger's own (20): other books use 20, so nothing published
    # before the trigger is pushed after it and the trigger is read when the session read it
    rows = [(HL, 1, 1_990), (BN, 1, 2_000)]
    assert _reads(rows, _timing({(BN, 0, 1): 2_020}, hop=50)) == [(HL, 1, 2_010), (BN, 1, 2_020)]


def test_order_paths_are_the_sessions_own_for_its_triggers_and_no_seed_matters() -> None:
    timing = _timing({(BN, 0, 5): 1_000})
    model = replace(latency.LatencyModel.constant(0), observed=timing)
    a, b = observed.ObservedDraws(model, 1), observed.ObservedDraws(model, 2)
    assert a.order_path((BN, 0, 5)) == b.order_path((BN, 0, 5)) == (1, 2, 3, 0, 10)
    assert a.order_path((BN, 0, 6)) == (7, 8, 9, 0, 10)  # an order the session did not send: the medians


def test_observed_draws_refuse_books_without_measured_times() -> None:
    timing = _timing({})
    spec = engine.RunSpec(StrategyConfig(), instruments.DEFAULT,
                          replace(latency.LatencyModel.constant(0), observed=timing), fills.FillRules())
    ev = _events([(BN, 1, 1_000)])
    ev = BookEvents(**{**ev.__dict__, "t_publish": ev.t_publish * 0})
    with pytest.raises(latency.LatencyError, match="t_publish measured"):
        engine.prepare(ev, spec, observed.ObservedDraws(spec.latency, 1))


def test_first_divergence_names_the_first_differing_or_missing_order() -> None:
    base = dict.fromkeys(consistency.COMPARED, 0)
    live = [base, {**base, "px": 2.0}, base]
    assert consistency.first_divergence([base, {**base, "px": 2.0}, base], live) is None
    assert consistency.first_divergence([base, {**base, "px": 3.0}, base], live) == 1
    assert consistency.first_divergence([base, {**base, "px": 2.0}], live) == 2
    assert consistency.first_divergence([base, {**base, "px": 2.0}, base, base], live) == 3


def test_a_stall_ending_when_the_next_book_of_a_venue_is_published_skips_the_one_before_it() -> None:
    rows = [(BN, 1, 1_000), (BN, 2, 2_000), (BN, 3, 3_000)]
    assert _reads(rows, _timing({}, stalls=((2_000, 3_000),))) == [(BN, 1, 1_010), (BN, 3, 3_010)]
    assert _reads(rows, _timing({}, stalls=((2_000, 2_999),))) == [(BN, 1, 1_010), (BN, 2, 2_999), (BN, 3, 3_010)]


def test_an_exit_that_differs_in_its_exit_reason_alone_is_relabelled_and_nothing_else_is() -> None:
    base = {**dict.fromkeys(consistency.COMPARED, 0), "reason": 2}
    assert consistency.relabelled(base, {**base, "reason": 3})
    assert not consistency.relabelled(base, {**base, "reason": 1})  # an entry is not an exit
    assert not consistency.relabelled(base, {**base, "reason": 3, "px": 1.0})
    assert consistency.first_divergence([base], [{**base, "reason": 3}]) == 0
    assert consistency.first_divergence([base], [{**base, "reason": 3}], frozenset({0})) is None
