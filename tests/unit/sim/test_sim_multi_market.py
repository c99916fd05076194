"""Market model with N instruments: the BTC-only event stream is unchanged, each instrument has its own grid and
ids, Hyperliquid has one block clock, and instruments co-move by the common factor's share."""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import itertools
import math
from decimal import Decimal

import pytest

from caerus.sim.core.catalogue import BY_NAME
from caerus.sim.core.market import BinanceQuote, HlBlock, MarketConfig, MarketModel, hl_tick


def take(cfg: MarketConfig, seconds: float) -> list[BinanceQuote | HlBlock]:
    return list(itertools.takewhile(lambda e: e.t_ns < seconds * 1e9, MarketModel(cfg).events()))


def _legacy_digest(cfg: MarketConfig, n: int) -> str:
    """Digest of the first ``n`` events in the BTC-only model's own fields (what it produced before N instruments)."""
    h = hashlib.sha256()
    for e in itertools.islice(MarketModel(cfg).events(), n):
        if isinstance(e, BinanceQuote):
            t: tuple = ("q", e.t_ns, e.update_id, e.bid, e.bid_qty, e.ask, e.ask_qty)
        else:
            def lv(level: object) -> object:
                return None if level is None else (level.px, level.sz, level.n)  # type: ignore[attr-defined]
            t = ("b", e.t_ns, e.index, lv(e.bid), lv(e.ask), e.changed)
        h.update(repr(t).encode())
    return h.hexdigest()


def test_default_model_produces_exactly_the_btc_only_event_stream() -> None:
    # Reference digests generated with the BTC-only model (caerus/sim/core/market.py before N instruments).
    assert _legacy_digest(MarketConfig(), 2000) == "285307d75f3000f7ca7840b527cb9155d45159b4a480b8aab38becc010355769"
    cfg = MarketConfig(seed=7, hl_lag_ms=300, jumps_per_min=20)
    assert _legacy_digest(cfg, 5000) == "6ec4c0c8a4509f0abd5276bb5113a61b9d3dc407ff9abb0e0245a91aa818d5b5"
    first = list(itertools.islice(MarketModel().events(), 2))
    assert first == [BinanceQuote(2338000, 5000521693, 95000.3, 2.919, 95000.4, 0.989),
                     BinanceQuote(5918170, 5000521699, 94999.6, 0.332, 94999.7, 0.418)]
    # factor_share does not matter with one instrument: its whole path is the factor
    assert _legacy_digest(MarketConfig(factor_share=0.0), 2000) == _legacy_digest(MarketConfig(), 2000)


SYMS = ("BTC", "ETH", "DOGE", "kPEPE")


def _on_grid(value: float, step: Decimal) -> bool:
    return Decimal(repr(value)) % step == 0


def test_each_instrument_has_its_own_quotes_ids_and_grid() -> None:
    events = take(MarketConfig(seed=3, symbols=SYMS), 10)
    quotes: dict[int, list[BinanceQuote]] = collections.defaultdict(list)
    for e in events:
        if isinstance(e, BinanceQuote):
            quotes[e.symbol].append(e)
    assert sorted(quotes) == [0, 1, 2, 3]
    for k, name in enumerate(SYMS):
        inst, qs = BY_NAME[name], quotes[k]
        assert 400 <= len(qs) <= 2000  # ~75-100/s per symbol
        assert all(b.update_id > a.update_id for a, b in itertools.pairwise(qs))
        for q in qs:
            assert q.ask > q.bid > 0
            assert _on_grid(q.bid, inst.tick) and _on_grid(q.ask, inst.tick), (name, q)
            assert _on_grid(q.bid_qty, inst.step) and q.bid_qty >= float(inst.step), (name, q)
        mid = (qs[0].bid + qs[0].ask) / 2
        assert abs(mid / inst.start_price - 1) < 0.02  # starts at its catalogue price
    assert [e.t_ns for e in events] == sorted(e.t_ns for e in events)


def test_hyperliquid_has_one_block_clock_and_each_coin_its_grid() -> None:
    events = take(MarketConfig(seed=4, symbols=SYMS, hl_size_change_prob=0.0), 10)
    blocks = [e for e in events if isinstance(e, HlBlock)]
    by_index: dict[int, list[HlBlock]] = collections.defaultdict(list)
    for b in blocks:
        by_index[b.index].append(b)
    assert len(by_index) > 100
    for group in by_index.values():
        assert [b.symbol for b in group] == [0, 1, 2, 3]  # every coin in every block
        assert len({b.t_ns for b in group}) == 1  # the same block time for every coin
    for k, name in enumerate(SYMS):
        inst = BY_NAME[name]
        mine = [b for b in blocks if b.symbol == k]
        assert mine[0].changed
        for prev, cur in itertools.pairwise(mine):
            assert cur.changed is ((prev.bid, prev.ask) != (cur.bid, cur.ask))
        assert any(not b.changed for b in mine)  # a bbo only for coins whose top changed
        for b in mine:
            assert b.bid is not None and b.ask is not None and b.ask.px > b.bid.px
            tick = hl_tick(b.bid.px, inst.sz_decimals)
            assert abs(b.bid.px / tick - round(b.bid.px / tick)) < 1e-6
            text = f"{b.bid.px:.{inst.hl_max_decimals}f}"
            assert float(text) == b.bid.px  # at most 6 - szDecimals decimals
            digits = text.replace(".", "").lstrip("0").rstrip("0")
            assert len(digits) <= 5 or b.bid.px == int(b.bid.px)  # 5 significant figures, integers always valid
            assert round(b.bid.sz, inst.sz_decimals) == b.bid.sz


def _returns(cfg: MarketConfig, seconds: float, every_s: float) -> list[list[float]]:
    """Per instrument, log-returns of its Binance mid sampled every ``every_s``."""
    n = len(cfg.symbols)
    last: list[float | None] = [None] * n
    samples: list[list[float]] = [[] for _ in range(n)]
    next_t = every_s * 1e9
    for e in MarketModel(cfg).events():
        if e.t_ns >= next_t:
            if all(x is not None for x in last):
                for k in range(n):
                    samples[k].append(math.log(last[k]))  # type: ignore[arg-type]
            next_t += every_s * 1e9
            if e.t_ns >= seconds * 1e9:
                break
        if isinstance(e, BinanceQuote):
            last[e.symbol] = (e.bid + e.ask) / 2
    return [[b - a for a, b in itertools.pairwise(s)] for s in samples]


def _corr(x: list[float], y: list[float]) -> float:
    mx, my = sum(x) / len(x), sum(y) / len(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    return sxy / math.sqrt(sxx * syy)


@pytest.mark.slow
@pytest.mark.parametrize("jumps_per_min", [0.0, 6.0])
def test_the_common_factor_makes_instruments_co_move(jumps_per_min: float) -> None:
    base = MarketConfig(seed=5, symbols=("BTC", "ETH"), jumps_per_min=jumps_per_min, annual_vol=2.0)
    shared = _returns(dataclasses.replace(base, factor_share=0.8), 240, 2.0)
    alone = _returns(dataclasses.replace(base, factor_share=0.0), 240, 2.0)
    assert len(shared[0]) > 100
    assert _corr(*shared) > 0.5
    assert abs(_corr(*alone)) < 0.25


def test_per_instrument_lag_override() -> None:
    cfg = MarketConfig(seed=11, symbols=("BTC", "ETH"), hl_lag_ms=100, hl_lag_ms_by_symbol={"ETH": 400},
                       jumps_per_min=30)
    assert cfg.lag_ms("ETH") == 400 and cfg.lag_ms("BTC") == 100
    events = take(cfg, 60)
    for k, lag in ((0, 100.0), (1, 400.0)):
        quotes = [e for e in events if isinstance(e, BinanceQuote) and e.symbol == k]
        blocks = [e for e in events if isinstance(e, HlBlock) and e.symbol == k]
        times, mids = [q.t_ns for q in quotes], [(q.bid + q.ask) / 2 for q in quotes]

        def err(cand: float, times: list[int] = times, mids: list[float] = mids, blocks: list[HlBlock] = blocks
                ) -> float:
            import bisect

            total = 0.0
            for b in blocks:
                i = bisect.bisect_right(times, b.t_ns - cand * 1e6) - 1
                if i >= 0:
                    total += abs((b.bid.px + b.ask.px) / 2 - mids[i]) / mids[i]  # type: ignore[union-attr]
            return total

        errors = {cand: err(cand) for cand in (0.0, 100.0, 250.0, 400.0, 600.0)}
        assert min(errors, key=errors.get) == lag, errors  # type: ignore[arg-type]


def test_one_venue_instruments_only_appear_on_their_venue() -> None:
    events = take(MarketConfig(seed=2, symbols=("BTC", "BTCDOM", "PURR")), 5)
    quoted = {e.symbol for e in events if isinstance(e, BinanceQuote)}
    blocked = {e.symbol for e in events if isinstance(e, HlBlock)}
    assert quoted == {0, 1} and blocked == {0, 2}


def test_bad_symbol_settings_are_named() -> None:
    with pytest.raises(ValueError, match="'FOO'"):
        MarketModel(MarketConfig(symbols=("BTC", "FOO")))
    with pytest.raises(ValueError, match="'ETH' more than once"):
        MarketModel(MarketConfig(symbols=("BTC", "ETH", "ETH")))
    with pytest.raises(ValueError, match="factor_share"):
        MarketModel(MarketConfig(symbols=("BTC", "ETH"), factor_share=1.5))
    with pytest.raises(ValueError, match="'SOL', which is not in symbols"):
        MarketModel(MarketConfig(hl_lag_ms_by_symbol={"SOL": 50}))
    with pytest.raises(ValueError, match="at least one"):
        MarketModel(MarketConfig(symbols=()))
