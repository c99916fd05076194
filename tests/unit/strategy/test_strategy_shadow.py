"""Shadow orders (wire.OrderFlags.SHADOW): the strategy prices them like a fire without changing its state; the
engine rehearses them through risk and the transport's serialisation, never sends, never publishes them; the
strategy's loop pushes them at the configured rate and splits real fires' samples by A/B window."""

from __future__ import annotations

import copy
import time
from pathlib import Path

import pytest

from caerus.config import ConfigError
from caerus.execution.config import PaperConfig, RiskConfig
from caerus.execution.engine import Engine
from caerus.execution.risk import RiskChecker
from caerus.execution.transports.paper import PaperTransport
from caerus.ipc.swmr import SwmrReader, SwmrWriter
from caerus.records.exec import EXEC_OUTCOME, EXEC_RISK
from caerus.records.order import ORDER_FLAGS, ORDER_SEQ
from caerus.strategy.config import StrategyConfig
from caerus.strategy.latency_arb import LatencyArb
from caerus.wire import OrderFlags, OrderReason, Outcome, RiskReject, Side
from tests.kit.rings import exec_ring, order_ring
from tests.unit.execution.test_execution_risk_paper import books_with, order
from tests.unit.strategy.test_strategy_latency_arb import MS, jump, warm

SHADOW = int(OrderFlags.SHADOW)


def _shadow_order(oid: int, seq: int, t: int, **kw: object) -> tuple:
    o = list(order(oid=oid, seq=seq, t_decision=t, **kw))  # type: ignore[arg-type]
    o[ORDER_FLAGS] = SHADOW
    return tuple(o)


def test_shadow_decision_is_an_entry_priced_like_a_fire_and_changes_nothing() -> None:
    arb = LatencyArb(StrategyConfig())
    t = warm(arb)
    before = {name: copy.copy(getattr(arb, name)) for name in ("guards", "decisions", "last_fire_t", "entry_t")}
    s = arb.shadow(t)
    assert s is not None and s[1] == OrderReason.ENTRY and s[3] == pytest.approx(0.001)
    assert {name: getattr(arb, name) for name in before} == before and arb.orders.in_flight == 0
    real = jump(arb, t + MS, 10.0)  # a real up-jump fires the same way the shadow priced its buy
    assert real is not None and real[0] == Side.BUY
    assert arb.shadow(t + MS)[:3] == real[:3]


def test_no_shadow_when_a_fire_could_not_be_priced() -> None:
    arb = LatencyArb(StrategyConfig())
    assert arb.shadow(0) is None  # no books yet
    t = warm(arb)
    assert arb.shadow(t + 10_000 * MS) is None  # the Binance book is older than max_book_age_ms_binance


@pytest.mark.parametrize("fields,message", [({"shadow_ab_window_s": 5.0}, "set shadow_every_ms too"),
                                            ({"shadow_every_ms": 100.0, "mode": "bench"}, "fires on every book")])
def test_shadow_config_rules(fields: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        StrategyConfig(**fields).check()


def test_engine_rehearses_shadows_and_never_sends_or_publishes_them(shm_dir: Path) -> None:
    consumer, producer = order_ring("sh.orders", 64)
    exec_w, exec_r = exec_ring("sh.exec", 64)
    books = books_with(t=time.time_ns())
    risk = RiskChecker(RiskConfig(max_orders_per_s=2, max_position=0.001), books)
    paper = PaperTransport(PaperConfig(latency_ms=0.0, fee_bps=0), books)
    rehearsed: list[tuple] = []
    paper.rehearse = rehearsed.append  # type: ignore[method-assign]  # observe what the engine hands it
    engine = Engine(consumer, paper, risk, books, exec_w)
    try:
        now = time.time_ns()
        for i in range(5):  # more shadows than the rate limit allows real orders: none takes a slot
            assert producer.try_push(*_shadow_order(10 + i, seq=10 + i, t=now))
        assert producer.try_push(*_shadow_order(20, seq=20, t=now, qty=0.5))  # too big: refused, not rehearsed
        for _ in range(6):
            assert engine.step()
        assert engine.shadows == 6 and engine.shadow_risk_rejects == 1 and len(rehearsed) == 5
        assert exec_r.read_next() is None  # nothing published
        assert engine.orders == 0 and sum(engine.outcomes) == 0 and paper.outcomes["filled"] == 0
        assert risk.rejects[RiskReject.MAX_ORDER_SIZE] == 0 and risk.position == 0.0  # shadows count nowhere
        assert engine.shadow_transit.n == 6 and engine.shadow_to_done.n == 6 and engine.transit.n == 0
        # a real order after them: the sequence moved past the shadows', the rate limit is untouched
        assert producer.try_push(*order(oid=30, seq=30, t_decision=time.time_ns()))
        assert producer.try_push(*order(oid=31, seq=31, t_decision=time.time_ns(), side=-1))
        assert engine.step() and engine.step()
        r1, r2 = exec_r.read_next(), exec_r.read_next()
        assert [r[0] for r in (r1, r2)] == [30, 31]
        assert [(r[EXEC_RISK], r[EXEC_OUTCOME]) for r in (r1, r2)] == [(0, Outcome.FILLED), (0, Outcome.NOT_FILLED)]
        assert engine.transit.n == 2 and engine.transit_warmed.n == 2 and engine.transit_unwarmed.n == 0
        # an out-of-date shadow sequence is refused like a real one would be (it is counted as a shadow reject)
        assert producer.try_push(*_shadow_order(40, seq=25, t=time.time_ns()))
        assert engine.step() and engine.shadow_risk_rejects == 2
    finally:
        exec_r.close()
        exec_w.close(unlink=True)
        producer.close()
        consumer.close(unlink=True)


def test_strategy_loop_pushes_flagged_shadows_at_its_rate_and_fires_nothing_real(shm_dir: Path,
                                                                                 tmp_path: Path) -> None:
    """The real loop over real rings, a flat market (nothing to fire): every Binance book may carry a shadow
    (shadow_every_ms below the books' spacing); each pushed order carries the SHADOW flag and a fresh sequence,
    books are still counted and sampled, and no real order, position or tick_to_decision sample appears."""
    from caerus.runtime.supervisor import Supervisor
    from caerus.strategy import app as strategy_app
    from caerus.wire import BOOK, Venue
    from tests.fixtures.pipeline import make_book
    from tests.unit.runtime.test_runtime_loops_memory import _Driven, strategy_ctx

    cfg = StrategyConfig(shadow_every_ms=0.0001, warmup_ms=0.0, housekeeping_ms=1e6, yield_after_order=False)
    t0 = time.time_ns()
    n = 200
    hl = [make_book(Venue.HYPERLIQUID, 95_000.0, 95_001.0, t0 + i, seq=i + 1) for i in range(n)]
    bn = [make_book(Venue.BINANCE, 95_000.45, 95_000.55, t0 + i, seq=i + 1) for i in range(n)]
    w_hl, w_bn = SwmrWriter.create("s.book.hl", BOOK, 64), SwmrWriter.create("s.book.bn", BOOK, 64)
    consumer, producer = order_ring("s.orders", 1024)
    sup = Supervisor()
    readers = [_Driven(w_hl, SwmrReader.attach("s.book.hl", BOOK, timeout=1), hl, sup),
               _Driven(w_bn, SwmrReader.attach("s.book.bn", BOOK, timeout=1), bn, sup)]
    for r in readers:
        r.n = n
    seq0 = time.time_ns()
    ctx = strategy_ctx(cfg, readers, producer, sup, log=None, seq=seq0, order_segment="s.orders")
    readers[1].drain = lambda: None
    try:
        strategy_app._loop(ctx)
        pushed = []
        while (o := consumer.poll()) is not None:
            pushed.append(o)
        seen = sum(ctx.books)
        assert seen == 2 * n and ctx.hop.n == seen  # every book counted and sampled, shadow or not
        assert ctx.shadows == len(pushed) > n // 2  # one per Binance book once both venues are known
        assert all(o[ORDER_FLAGS] == SHADOW for o in pushed)
        assert [o[ORDER_SEQ] for o in pushed] == list(range(seq0 + 1, seq0 + 1 + len(pushed)))
        assert ctx.tte.n == seen - ctx.shadows  # a shadow's book has no tick_to_eval sample
        assert sum(ctx.by_reason) == 0 and ctx.ttd.n == 0 and ctx.ttd_warm.n == 0 and ctx.desk.position == 0.0
        assert ctx.shd.n == ctx.shadows and ctx.ring_full == 0 == ctx.shadow_ring_full
    finally:
        for r in readers:
            r.reader.close()
        w_hl.close(unlink=True)
        w_bn.close(unlink=True)
        producer.close()
        consumer.close(unlink=True)
