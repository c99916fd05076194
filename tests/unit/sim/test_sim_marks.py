"""Marks, index, premium and funding (issue 33): the mark is the median of (bid, ask, last), the index lags the mid,
funding follows the venues' formula and caps, settles per interval, and a seed gives the same rates."""

from __future__ import annotations

import pytest

from caerus.sim.core.market import BinanceQuote, MarketConfig, MarketModel
from caerus.sim.core.marks import BINANCE_FUNDING, HL_FUNDING, INTEREST_8H, PREMIUM_SAMPLE_NS, Marks, funding_rate

S = 1_000_000_000


def test_mark_is_the_median_of_bid_ask_and_last() -> None:
    m = Marks(BINANCE_FUNDING)
    assert m.on_top(0, 100.0, 101.0, None) == 100.5  # no trade yet: the mid
    assert m.on_top(1, 100.0, 101.0, 100.2) == 100.2  # a last inside the spread
    assert m.on_top(2, 100.0, 101.0, 105.0) == 101.0  # a last outside: the touch
    assert m.on_top(3, 100.0, 101.0, 90.0) == 100.0


def test_flat_market_pays_the_interest_rate_only() -> None:
    assert funding_rate(0.0, BINANCE_FUNDING) == pytest.approx(INTEREST_8H)  # 0.01% per 8 h
    assert funding_rate(0.0, HL_FUNDING) == pytest.approx(INTEREST_8H / 8)  # 0.00125% per hour
    assert funding_rate(0.0003, BINANCE_FUNDING) == pytest.approx(INTEREST_8H)  # within the +/-0.05% clamp


def test_rates_follow_the_premium_and_stop_at_the_caps() -> None:
    assert funding_rate(0.002, BINANCE_FUNDING) == pytest.approx(0.002 - 0.0005)
    assert funding_rate(-0.002, BINANCE_FUNDING) == pytest.approx(-0.002 + 0.0005)
    assert funding_rate(0.5, BINANCE_FUNDING) == pytest.approx(0.003)  # 0.75 x maint. margin 0.4%
    assert funding_rate(-0.5, BINANCE_FUNDING) == pytest.approx(-0.003)
    assert funding_rate(0.5, HL_FUNDING) == pytest.approx(0.04)  # 4% per hour
    assert funding_rate(0.008, HL_FUNDING) == pytest.approx((0.008 - 0.0005) / 8)


def _walk(marks: Marks, step: float, seconds: int) -> None:
    """A market moving by ``step`` a second, sampled every 5 s (wall clock = model time here)."""
    for s in range(seconds):
        px = 100.0 + step * s
        marks.on_top(s * S, px - 0.01, px + 0.01, px)
        if (s * S) % PREMIUM_SAMPLE_NS == 0:
            marks.sample(s * 1000)


def test_a_rising_market_trades_at_a_premium_and_longs_pay_more() -> None:
    up, down, flat = Marks(BINANCE_FUNDING), Marks(BINANCE_FUNDING), Marks(BINANCE_FUNDING)
    _walk(up, 0.05, 600)
    _walk(down, -0.05, 600)
    _walk(flat, 0.0, 600)
    assert up.index is not None and up.mark is not None and up.index < up.mark and up.premium > 0.0005
    assert down.premium < -0.0005
    assert up.rate > INTEREST_8H > down.rate
    assert flat.rate == pytest.approx(INTEREST_8H) and flat.premium == pytest.approx(0.0)


def test_binance_weights_later_samples_more_hyperliquid_averages_plainly() -> None:
    bn, hl = Marks(BINANCE_FUNDING), Marks(HL_FUNDING)
    for m in (bn, hl):
        m.on_top(0, 99.99, 100.01, 100.0)
        m.index = 100.0
        m.sample(0)  # premium 0
        m.mark, m.index = 101.0, 100.0
        m.sample(5000)  # premium 1%
    assert bn.rate == pytest.approx(funding_rate((0 + 2 * 0.01) / 3, BINANCE_FUNDING))
    assert hl.rate == pytest.approx(funding_rate(0.01 / 2, HL_FUNDING))


def test_an_interval_settles_into_the_history_at_its_end() -> None:
    m = Marks(HL_FUNDING)
    _walk(m, 0.05, 600)
    predicted = m.rate
    assert not m.history
    m.sample(3_600_000)  # the first sample of the next hour settles the first
    (settled,) = m.history
    assert settled.time_ms == 3_600_000 and settled.rate == predicted and settled.premium > 0
    assert m.next_funding_ms(3_600_000) == 7_200_000


def _rates(seed: int) -> list[float]:
    model = MarketModel(MarketConfig(seed=seed))
    marks = Marks(BINANCE_FUNDING)
    out: list[float] = []
    due = PREMIUM_SAMPLE_NS
    for ev in model.events():
        if ev.t_ns > 120 * S:
            break
        if isinstance(ev, BinanceQuote) and ev.symbol == 0:
            while ev.t_ns >= due:
                marks.sample(due // 1_000_000)
                out.append(marks.premium)
                due += PREMIUM_SAMPLE_NS
            marks.on_top(ev.t_ns, ev.bid, ev.ask, None)
    return out


def test_the_same_seed_gives_the_same_premiums() -> None:
    a, b, other = _rates(7), _rates(7), _rates(8)
    assert len(a) >= 20 and a == b and a != other
    assert len(set(a)) > 1  # the premium moves with the market
