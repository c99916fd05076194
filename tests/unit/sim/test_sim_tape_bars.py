"""The tape's one-minute bars and their aggregation to longer intervals (klines and candles, issue 33)."""

from __future__ import annotations

from caerus.sim.core.tape import MINUTE_NS, Tape


def _trade(tape: Tape, t_ns: int, px: float, hit_bid: bool) -> None:
    # the bid falling from px is a seller hitting it; the ask rising from px a buyer lifting it
    if hit_bid:
        assert tape.on_top(t_ns, (px, 1.0), (px + 1, 1.0), px - 1, px + 1) is not None
    else:
        assert tape.on_top(t_ns, (px - 1, 1.0), (px, 2.0), px - 1, px + 1) is not None


def test_bars_start_on_wall_clock_minutes_and_aggregate() -> None:
    tape = Tape(first_id=1, offset_ns=30 * 1_000_000_000)  # model time 0 is 30 s into a wall-clock minute
    _trade(tape, 0, 100.0, hit_bid=True)  # wall 0:30
    _trade(tape, 20 * 1_000_000_000, 105.0, hit_bid=False)  # wall 0:50, same minute
    _trade(tape, 40 * 1_000_000_000, 95.0, hit_bid=True)  # wall 1:10, next minute
    first, second = tape.bars_of(1)
    assert (first.start_ns, first.open, first.high, first.low, first.close, first.count) == (
        0, 100.0, 105.0, 100.0, 105.0, 2)
    assert first.volume == 3.0 and first.taker_buy_volume == 2.0  # the lifted ask was a taker buy
    assert (second.start_ns, second.open, second.close) == (MINUTE_NS, 95.0, 95.0)
    (five,) = tape.bars_of(5)
    assert (five.open, five.high, five.low, five.close, five.count) == (100.0, 105.0, 95.0, 95.0, 3)
    assert [b.start_ns for b in tape.bars_of(1, start_ns=MINUTE_NS)] == [MINUTE_NS]
    assert [b.start_ns for b in tape.bars_of(1, end_ns=MINUTE_NS - 1)] == [0]
    assert [t.px for t in tape.recent] == [100.0, 105.0, 95.0]


def test_current_bar_and_its_kline_event() -> None:
    import json

    from caerus.sim.core import frames

    tape = Tape(first_id=7)
    _trade(tape, 0, 100.0, hit_bid=True)
    _trade(tape, MINUTE_NS + 1, 110.0, hit_bid=False)
    three = tape.current_bar(3)
    assert three is not None and (three.open, three.high, three.close, three.count) == (100.0, 110.0, 110.0, 2)
    assert (three.first_id, three.last_id) == (7, 8)
    event = json.loads(frames.binance_kline(three, "3m", 3, now_ms=1))
    k = event["k"]
    assert event["e"] == "kline" and k["i"] == "3m" and (k["t"], k["T"]) == (0, 179_999)
    assert (k["f"], k["L"], k["n"], k["o"], k["c"], k["x"]) == (7, 8, 2, "100.0", "110.0", False)
    assert tape.current_bar(1).open == 110.0  # type: ignore[union-attr]
