"""Risk rejections, paper fills/PnL/markouts, and the engine over a real MPSC ring and EXEC ring."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import msgspec
import pytest

from caerus import config
from caerus.config import ConfigError
from caerus.execution import config as execution_config
from caerus.execution.books import LatestBooks
from caerus.execution.config import ExecutionConfig, PaperConfig, RiskConfig
from caerus.execution.engine import EXEC_FLAG_REPLY, Engine
from caerus.execution.paper_account import PaperAccount
from caerus.execution.risk import RiskChecker
from caerus.execution.transports import make_live_transport, make_transport
from caerus.execution.transports.null import NullTransport
from caerus.execution.transports.paper import PaperTransport
from caerus.records.exec import (
    EXEC_FILL_PX,
    EXEC_FILL_QTY,
    EXEC_FLAGS,
    EXEC_ORDER_ID,
    EXEC_OUTCOME,
    EXEC_RISK,
    EXEC_T_PICKUP,
    EXEC_T_SENT,
)
from caerus.records.order import ORDER_TRIGGER_T_WIRE
from caerus.venuekit.order_transport import SendResult, VenueReply
from caerus.wire import ORDER, BookFlags, OrderReason, Outcome, RiskReject, Tif, Venue
from tests.fixtures.pipeline import make_book
from tests.kit.rings import exec_ring, order_ring

MS = 1_000_000
T0 = 1_700_000_000_000_000_000
HL = int(Venue.HYPERLIQUID)


def load_config(path: Path | None) -> ExecutionConfig:
    return config.load_config(ExecutionConfig, path, "execution")


def order(oid: int = 1, side: int = 1, px: float = 95_010.0, qty: float = 0.001, venue: int = HL,
          t_decision: int = T0, seq: int | None = None, tif: int = int(Tif.IOC),
          reason: int = int(OrderReason.ENTRY), strategy_id: int = 1, symbol: int = 0) -> tuple:
    return (oid, strategy_id, venue, side, tif, reason, int(Venue.BINANCE), 0, px, qty, 7,
            t_decision - 10_000, t_decision - 5_000, t_decision - 2_000, t_decision, oid + 1 if seq is None else seq, 0,
            symbol, 0)


def books_with(bid: float = 95_000.0, ask: float = 95_001.0, t: int = T0, **kw: object) -> LatestBooks:
    b = LatestBooks()
    b.put(make_book(HL, bid, ask, t, **kw))
    return b


# -- risk ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cfg", "o", "want"),
    [
        (RiskConfig(max_order_qty=0.001), order(qty=0.002), RiskReject.MAX_ORDER_SIZE),
        (RiskConfig(), order(qty=0.0), RiskReject.BAD_SIZE),
        (RiskConfig(), order(qty=-0.001), RiskReject.BAD_SIZE),
        (RiskConfig(), order(qty=float("nan")), RiskReject.BAD_SIZE),
        (RiskConfig(), order(qty=float("inf")), RiskReject.BAD_SIZE),
        (RiskConfig(), order(side=0), RiskReject.BAD_SIDE),
        (RiskConfig(), order(side=2), RiskReject.BAD_SIDE),
        (RiskConfig(), order(px=float("nan")), RiskReject.BAD_PRICE),
        (RiskConfig(), order(px=float("inf")), RiskReject.BAD_PRICE),
        (RiskConfig(), order(px=0.0), RiskReject.BAD_PRICE),
        (RiskConfig(), order(px=-95_010.0), RiskReject.BAD_PRICE),
        (RiskConfig(), order(venue=0), RiskReject.OUT_OF_RANGE),
        (RiskConfig(), order(venue=9), RiskReject.OUT_OF_RANGE),
        (RiskConfig(), order(tif=0), RiskReject.OUT_OF_RANGE),
        (RiskConfig(), order(reason=99), RiskReject.OUT_OF_RANGE),
        (RiskConfig(), order(t_decision=T0 - 1001 * MS), RiskReject.STALE_ORDER),
        (RiskConfig(), order(t_decision=T0 - 990 * MS), RiskReject.NONE),
        (RiskConfig(max_order_age_ms=500), order(t_decision=T0 - 501 * MS), RiskReject.STALE_ORDER),
        (RiskConfig(max_order_age_ms=500), order(t_decision=T0 - 490 * MS), RiskReject.NONE),
        (RiskConfig(), order(t_decision=T0 - 3_600_000 * MS), RiskReject.STALE_ORDER),  # an hour old
        (RiskConfig(), order(t_decision=T0 + 1002 * MS), RiskReject.STALE_ORDER),
        (RiskConfig(price_band_bps=10), order(px=95_200.0), RiskReject.PRICE_BAND),
        (RiskConfig(price_band_bps=10), order(side=-1, px=94_800.0), RiskReject.PRICE_BAND),
        (RiskConfig(), order(venue=int(Venue.BINANCE)), RiskReject.NO_BOOK),
        (RiskConfig(), order(px=95_010.0), RiskReject.NONE),
    ],
)
def test_risk_single_order_checks(cfg: RiskConfig, o: tuple, want: RiskReject) -> None:
    risk = RiskChecker(cfg, books_with())
    assert risk.check(o, T0 + MS) == want
    assert risk.rejects[want] == (1 if want else 0)


def test_risk_refuses_duplicate_and_out_of_order_sequences_per_strategy() -> None:
    risk = RiskChecker(RiskConfig(max_position=0.01), books_with())
    assert risk.check(order(oid=1, seq=10), T0) == RiskReject.NONE
    assert risk.check(order(oid=1, seq=10), T0) == RiskReject.DUPLICATE  # the same slot delivered twice
    assert risk.check(order(oid=2, seq=9), T0) == RiskReject.OUT_OF_ORDER  # an old slot re-delivered
    assert risk.check(order(oid=3, seq=11), T0) == RiskReject.NONE
    # Another strategy has its own sequence.
    assert risk.check(order(oid=4, seq=5, strategy_id=2), T0) == RiskReject.NONE
    # A record refused for its content still used its number: sending it again is a duplicate.
    assert risk.check(order(oid=5, seq=12, side=0), T0) == RiskReject.BAD_SIDE
    assert risk.check(order(oid=5, seq=12), T0) == RiskReject.DUPLICATE
    assert (risk.rejects[RiskReject.DUPLICATE], risk.rejects[RiskReject.OUT_OF_ORDER],
            risk.rejects[RiskReject.BAD_SIDE]) == (2, 1, 1)


def test_risk_forged_side_zero_never_moves_the_position() -> None:
    # The finding: five side-0 records used to pass risk (position += 0) and go out as SELLs.
    risk = RiskChecker(RiskConfig(), books_with())
    for i in range(5):
        assert risk.check(order(oid=i + 1, side=0), T0) == RiskReject.BAD_SIDE
    assert risk.position == 0.0
    assert risk.rejects[RiskReject.BAD_SIDE] == 5


def test_risk_stale_or_invalid_book_is_no_book() -> None:
    assert RiskChecker(RiskConfig(max_book_age_ms=100), books_with()).check(order(), T0 + 101 * MS) == \
        RiskReject.NO_BOOK
    flagged = books_with(flags=int(BookFlags.VALID | BookFlags.STALE))
    assert RiskChecker(RiskConfig(), flagged).check(order(), T0) == RiskReject.NO_BOOK
    assert RiskChecker(RiskConfig(require_book=False), LatestBooks()).check(order(), T0) == RiskReject.NONE


def test_risk_max_position_counts_accepted_orders_and_returns_unfilled() -> None:
    risk = RiskChecker(RiskConfig(max_order_qty=0.001, max_position=0.002), books_with())
    for i in range(2):
        o = order(oid=i)
        assert risk.check(o, T0) == RiskReject.NONE
        risk.accepted(o, T0)
    assert risk.check(order(oid=3), T0) == RiskReject.MAX_POSITION
    assert risk.check(order(oid=4, side=-1, px=94_990.0), T0) == RiskReject.NONE  # reducing is fine
    risk.on_result(order(oid=1), 0.0)  # the IOC did not fill: exposure comes back
    assert risk.position == pytest.approx(0.001)
    assert risk.check(order(oid=5), T0) == RiskReject.NONE


def test_risk_order_rate_sliding_window() -> None:
    risk = RiskChecker(RiskConfig(max_orders_per_s=3, max_position=0.25), books_with())
    for i in range(3):
        o = order(oid=i, side=1 if i % 2 == 0 else -1, px=95_000.5)
        assert risk.check(o, T0 + i * MS) == RiskReject.NONE
        risk.accepted(o, T0 + i * MS)
    assert risk.check(order(oid=9, t_decision=T0 + 500 * MS), T0 + 500 * MS) == RiskReject.MAX_ORDER_RATE
    late = T0 + 1000 * MS
    assert risk.check(order(oid=10, t_decision=late), late) == RiskReject.NONE  # the first accept left the window


def test_risk_kill_switch_first() -> None:
    risk = RiskChecker(RiskConfig(), books_with())
    risk.kill = True
    assert risk.check(order(qty=5.0), T0) == RiskReject.KILL_SWITCH


# -- paper account ---------------------------------------------------------------------------------------


def test_paper_account_pnl_round_trip_and_flip() -> None:
    a = PaperAccount(fee_bps=10.0, markout_ms=(100.0,))
    a.fill(1, 100.0, 2.0, T0)
    a.fill(1, 110.0, 2.0, T0)
    assert a.position == 4.0 and a.avg_px == pytest.approx(105.0)
    a.on_book(120.0, T0 + MS)
    assert a.unrealized == pytest.approx(4 * 15.0)
    a.fill(-1, 115.0, 6.0, T0 + 2 * MS)  # close 4 at +10 each, open short 2 at 115
    assert a.realized == pytest.approx(40.0)
    assert a.position == pytest.approx(-2.0) and a.avg_px == 115.0
    assert a.fees == pytest.approx((200 + 220 + 690) * 10e-4)
    assert a.total_pnl == pytest.approx(40.0 + (-2.0) * (120.0 - 115.0) - a.fees)


def test_paper_account_markouts_use_prevailing_mid() -> None:
    a = PaperAccount(fee_bps=0.0, markout_ms=(100.0, 1000.0))
    a.on_book(100.0, T0 - MS)
    a.fill(1, 100.0, 1.0, T0)  # due at T0+100ms and T0+1s
    a.on_book(101.0, T0 + 50 * MS)
    a.on_book(102.0, T0 + 150 * MS)  # received after the 100 ms horizon: the 101 mid prevailed at T0+100ms
    assert a.markout_n == [1, 0]
    assert a.markout_mean_bps(0) == pytest.approx(100.0)  # (101 - 100) / 100 = 100 bps
    a.settle(T0 + 1000 * MS)
    assert a.markout_n == [1, 1] and a.markout_mean_bps(1) == pytest.approx(200.0)
    s = a.summary()
    assert s["markouts"]["100ms"]["n"] == 1 and s["markouts"]["1000ms"]["pending"] == 0


# -- paper transport -------------------------------------------------------------------------------------


def test_paper_immediate_fill_partial_and_miss() -> None:
    books = books_with(bid=95_000.0, ask=95_001.0)
    t = PaperTransport(PaperConfig(latency_ms=0, fee_bps=0), books)
    r = t.send_msg(order(px=95_010.0, qty=0.5))
    assert (r.outcome, r.fill_px, r.fill_qty) == (Outcome.FILLED, 95_001.0, 0.5)
    r = t.send_msg(order(px=95_010.0, qty=3.0))  # top size is 1.0: the rest of the IOC is cancelled
    assert (r.outcome, r.fill_qty) == (Outcome.PARTIAL, 1.0)
    r = t.send_msg(order(side=-1, px=95_000.5, qty=0.5))  # sell limit above the bid
    assert (r.outcome, r.fill_qty) == (Outcome.NOT_FILLED, 0.0)
    acct = t.accounts[HL]
    assert acct.position == pytest.approx(1.5) and acct.fills == 2
    assert t.summary()["outcomes"]["partial"] == 1


def test_paper_latency_fills_against_book_prevailing_at_due_time() -> None:
    replies = []
    books = books_with(bid=95_000.0, ask=95_001.0, t=T0)
    t = PaperTransport(PaperConfig(latency_ms=5.0, fee_bps=0), books, replies.append)
    r = t.send_msg(order(px=95_010.0, qty=0.5))
    assert r.outcome == Outcome.SENT and r.t_sent > 0
    due = r.t_sent + 5 * MS
    books.put(make_book(HL, 95_005.0, 95_006.0, due - MS))  # arrives before the due time: prevails at due
    assert replies == []
    books.put(make_book(HL, 95_050.0, 95_051.0, due + MS))  # after due: the order fills against the previous one
    assert len(replies) == 1
    rep = replies[0]
    assert rep.outcome == Outcome.FILLED and rep.fill_px == 95_006.0 and rep.order_id == 1
    r2 = t.send_msg(order(oid=2, px=95_040.0))  # limit below the (latest) ask 95051 at due time -> not filled
    t.pump(r2.t_sent + 5 * MS)
    assert replies[1].outcome == Outcome.NOT_FILLED and replies[1].order_id == 2


# -- engine over real rings ------------------------------------------------------------------------------


def test_engine_null_transport_over_real_rings(shm_dir: Path) -> None:
    consumer, producer = order_ring("t.orders", 64)
    exec_w, exec_r = exec_ring("t.exec", 64)
    books = books_with(t=time.time_ns())
    risk = RiskChecker(RiskConfig(max_order_qty=0.001), books)
    engine = Engine(consumer, NullTransport(), risk, books, exec_w)
    try:
        assert not engine.step()
        now = time.time_ns()
        assert producer.try_push(*order(oid=1, t_decision=now))
        assert producer.try_push(*order(oid=2, qty=0.5, t_decision=now))
        assert engine.step() and engine.step() and not engine.step()
        r1, r2 = exec_r.read_next(), exec_r.read_next()
        assert exec_r.read_next() is None
        assert (r1[EXEC_ORDER_ID], r1[EXEC_OUTCOME], r1[EXEC_RISK]) == (1, Outcome.SENT, 0)
        assert r1[EXEC_T_PICKUP] >= now
        assert (r2[EXEC_ORDER_ID], r2[EXEC_OUTCOME], r2[EXEC_RISK]) == (2, Outcome.RISK_REJECTED,
                                                                        RiskReject.MAX_ORDER_SIZE)
        assert r1[: len(ORDER.names)] == order(oid=1, t_decision=now)  # the order fields are carried verbatim
        assert engine.transit.n == 2 and all(v >= 0 for v in engine.transit.arr[:2])
        assert engine.outcomes[Outcome.SENT] == 1 and engine.pending == {}
    finally:
        exec_r.close()
        exec_w.close(unlink=True)
        producer.close()
        consumer.close(unlink=True)


def test_engine_paper_latency_publishes_sent_then_final(shm_dir: Path) -> None:
    consumer, producer = order_ring("t2.orders", 64)
    exec_w, exec_r = exec_ring("t2.exec", 64)
    books = books_with(t=time.time_ns())
    risk = RiskChecker(RiskConfig(), books)
    holder: list[Engine] = []
    transport = PaperTransport(PaperConfig(latency_ms=1.0, fee_bps=0), books, lambda r: holder[0].on_reply(r))
    engine = Engine(consumer, transport, risk, books, exec_w)
    holder.append(engine)
    try:
        assert producer.try_push(*order(oid=5, px=95_010.0, qty=0.001, t_decision=time.time_ns()))
        assert engine.step()
        first = exec_r.read_next()
        assert first[EXEC_OUTCOME] == Outcome.SENT and 5 in engine.pending
        time.sleep(0.005)
        engine.idle_work(time.time_ns())
        final = exec_r.read_next()
        assert final is not None
        assert (final[EXEC_ORDER_ID], final[EXEC_OUTCOME], final[EXEC_FILL_PX]) == (5, Outcome.FILLED, 95_001.0)
        assert final[EXEC_FLAGS] & EXEC_FLAG_REPLY and not first[EXEC_FLAGS] & EXEC_FLAG_REPLY
        assert final[EXEC_T_PICKUP] == first[EXEC_T_PICKUP] and final[EXEC_T_SENT] == first[EXEC_T_SENT]
        assert final[EXEC_FILL_QTY] == pytest.approx(0.001)
        assert engine.pending == {} and risk.position == pytest.approx(0.001)
    finally:
        exec_r.close()
        exec_w.close(unlink=True)
        producer.close()
        consumer.close(unlink=True)


# -- config and registry -------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "match"), [
    ("[risk]\nmax_order_qty = 'lots'\n", r"\$\.risk\.max_order_qty"),
    ("[paper]\nlatency = 3\n", "latency"),
    ("[risk]\nmax_order_qty = 0.2\nmax_position = 0.1\n", "max_order_qty"),
    ("[risk]\nprice_band_bps = inf\n", r"risk\.price_band_bps must be a finite number"),
    ("[paper]\nmarkout_ms = [100.0, inf]\n", "finite"),
])
def test_execution_config_errors_name_the_field(tmp_path: Path, text: str, match: str) -> None:
    p = tmp_path / "exec.toml"
    p.write_text(text)
    with pytest.raises(ConfigError, match=match):
        load_config(p)


def test_execution_config_reads_its_file_or_defaults(tmp_path: Path) -> None:
    p = tmp_path / "exec.toml"
    p.write_text("[paper]\nlatency_ms = 0\nmarkout_ms = [100.0, 250.0]\n[risk]\nmax_orders_per_s = 5\n")
    cfg = load_config(p)
    assert cfg.paper.markout_ms == (100.0, 250.0) and cfg.risk.max_orders_per_s == 5
    assert isinstance(load_config(None), ExecutionConfig)


@pytest.mark.parametrize(("line", "name", "ceiling"), [
    ("max_order_notional = 1e9", "max_order_notional", "25000"),
    ("max_position = 10.0", "max_position", "0.25"),
    ("max_orders_per_s = 1000000", "max_orders_per_s", "100"),
    ("price_band_bps = 1e12", "price_band_bps", "500"),
    ("price_band_bps = 500.5", "price_band_bps", "500"),
    ("max_book_age_ms = 1e12", "max_book_age_ms", "5000"),
    ("max_book_age_ms = 5001.0", "max_book_age_ms", "5000"),
    ("max_order_age_ms = 3600000.0", "max_order_age_ms", "1000"),  # an hour-old order would pass
    ("max_order_age_ms = 1000.001", "max_order_age_ms", "1000"),
])
def test_config_cannot_lift_a_hard_ceiling(tmp_path: Path, line: str, name: str, ceiling: str) -> None:
    p = tmp_path / "exec.toml"
    p.write_text(f"[risk]\nmax_order_qty = 0.001\n{line}\n")
    with pytest.raises(ConfigError, match=rf"risk\.{name} = \S+ is above the hard ceiling {ceiling}\b") as err:
        load_config(p)
    assert f"= {float(line.split()[-1]):.10g} " in str(err.value)  # the value as given, beside its field
    assert "\n" not in str(err.value)
    # ... nor a RiskConfig built in code (it skips load_config's check): the checker refuses it too.
    value = load_config(None).risk
    with pytest.raises(ConfigError, match=name):
        RiskChecker(msgspec.structs.replace(value, **{name: type(getattr(value, name))(float(line.split()[-1]))}),
                    LatestBooks())


def test_every_ceilinged_limit_accepts_its_ceiling_and_defaults_sit_below_it(tmp_path: Path) -> None:
    # One definition per ceiling: CEILINGED names the fields, HARD_<FIELD> their ceilings; a config exactly at
    # each loads, and every default is at or below its ceiling.
    p = tmp_path / "exec.toml"
    at = {name: execution_config.ceiling_of(name) for name in execution_config.CEILINGED}
    assert set(at) >= {"price_band_bps", "max_book_age_ms", "max_order_age_ms"}
    body = "\n".join(f"{k} = {v!r}" for k, v in at.items() if k not in ("max_position",))
    p.write_text(f"[risk]\nmax_order_qty = 0.001\nmax_position = {at['max_position']!r}\n{body}\n")
    risk = load_config(p).risk
    assert {name: getattr(risk, name) for name in at} == at
    defaults = RiskConfig()
    assert all(getattr(defaults, name) <= ceiling for name, ceiling in at.items())
    with pytest.raises(ConfigError, match="price_band_bps = nan is above the hard ceiling"):
        RiskChecker(msgspec.structs.replace(defaults, price_band_bps=float("nan")), LatestBooks())


@pytest.mark.parametrize("line", ["max_order_qty = inf", "max_position = nan", "max_book_age_ms = inf",
                                  "max_order_age_ms = inf", "max_order_notional = inf"])
def test_nested_limits_must_be_finite(tmp_path: Path, line: str) -> None:
    p = tmp_path / "exec.toml"
    p.write_text(f"[risk]\n{line}\n")
    with pytest.raises(ConfigError, match=rf"risk\.{line.split()[0]}( must be a finite number|`)"):
        load_config(p)


def test_notional_limit() -> None:
    risk = RiskChecker(RiskConfig(max_order_qty=0.01, max_order_notional=500.0), books_with())
    assert risk.check(order(qty=0.006), T0) == RiskReject.MAX_NOTIONAL  # 570 USD
    assert risk.check(order(oid=2, qty=0.005), T0) == RiskReject.NONE  # 475 USD


def test_without_require_book_a_nan_price_never_passes_and_any_book_bands() -> None:
    no_book = RiskChecker(RiskConfig(require_book=False), LatestBooks())
    assert no_book.check(order(px=float("nan")), T0) == RiskReject.BAD_PRICE
    # A stale book (older than max_book_age_ms) still bands the price when no book is required.
    stale = RiskChecker(RiskConfig(require_book=False, price_band_bps=10, max_book_age_ms=100), books_with())
    late = T0 + 200 * MS
    assert stale.check(order(px=96_000.0, t_decision=late), late) == RiskReject.PRICE_BAND
    assert stale.check(order(oid=2, px=95_010.0, t_decision=late), late) == RiskReject.NONE
    flagged = RiskChecker(RiskConfig(require_book=False, price_band_bps=10),
                          books_with(flags=int(BookFlags.VALID | BookFlags.STALE)))
    assert flagged.check(order(px=96_000.0), T0) == RiskReject.PRICE_BAND


def test_live_mode_always_requires_a_book() -> None:
    live = RiskChecker(RiskConfig(require_book=False), LatestBooks(), live=True)
    assert live.check(order(), T0) == RiskReject.NO_BOOK


class _RestingTransport:
    """A transport whose venue answers later, like a live one; the test delivers the replies."""

    name = "resting"
    replies = True

    def start(self) -> None:
        pass

    def send_msg(self, o: tuple) -> SendResult:
        return SendResult(Outcome.SENT, t_sent=time.time_ns())

    def close(self) -> None:
        pass


@pytest.mark.parametrize("tif", [int(Tif.GTC), int(Tif.ALO)])
def test_resting_orders_keep_counting_until_filled_or_cancelled(shm_dir: Path, tif: int) -> None:
    consumer, producer = order_ring("t3.orders", 8)
    books = books_with(t=time.time_ns())
    risk = RiskChecker(RiskConfig(max_order_qty=0.002, max_position=0.003), books)
    engine = Engine(consumer, _RestingTransport(), risk, books)
    try:
        assert producer.try_push(*order(oid=1, qty=0.002, tif=tif, t_decision=time.time_ns()))
        assert engine.step()
        assert risk.position == pytest.approx(0.002)
        # The venue acknowledges the order resting (SENT, fill 0): it still counts in full.
        engine.on_reply(VenueReply(1, Outcome.SENT, 0.0, 0.0, 0, time.time_ns()))
        engine.drain_replies()
        assert risk.position == pytest.approx(0.002) and 1 in engine.pending
        # ... so a second order that would exceed the limit with it is refused.
        assert producer.try_push(*order(oid=2, qty=0.002, tif=tif, t_decision=time.time_ns()))
        engine.step()
        assert risk.rejects[RiskReject.MAX_POSITION] == 1
        # A partial fill leaves the rest resting: still 0.002 counted.
        engine.on_reply(VenueReply(1, Outcome.PARTIAL, 95_001.0, 0.0005, 0, time.time_ns()))
        engine.drain_replies()
        assert risk.position == pytest.approx(0.002) and 1 in engine.pending
        # Cancelled after 0.0005 filled: the unfilled 0.0015 comes back out.
        engine.on_reply(VenueReply(1, Outcome.CANCELLED, 95_001.0, 0.0005, 0, time.time_ns()))
        engine.drain_replies()
        assert risk.position == pytest.approx(0.0005) and 1 not in engine.pending
    finally:
        producer.close()
        consumer.close(unlink=True)


def test_an_ioc_partial_is_final() -> None:
    risk = RiskChecker(RiskConfig(), books_with())
    engine = Engine(None, _RestingTransport(), risk, books_with())  # type: ignore[arg-type]
    o = order(oid=1, qty=0.002)
    risk.accepted(o, T0)
    engine.pending[1] = (o, T0, T0)
    engine.on_reply(VenueReply(1, Outcome.PARTIAL, 95_001.0, 0.0005, 0, T0))
    engine.drain_replies()
    assert risk.position == pytest.approx(0.0005) and engine.pending == {}


def test_transport_registry() -> None:
    books = LatestBooks()
    assert make_transport("null", books=books, paper=PaperConfig(), on_reply=print).name == "null"
    assert make_transport("paper", books=books, paper=PaperConfig(), on_reply=print).name == "paper"
    with pytest.raises(ValueError, match="unknown transport"):
        make_transport("carrier-pigeon", books=books, paper=PaperConfig(), on_reply=print)
    with pytest.raises(ValueError, match="unknown transport 'binance'"):  # live: built from its spec
        make_transport("binance", books=books, paper=PaperConfig(), on_reply=print)


def test_live_transport_of_a_venue_without_order_entry_is_a_clear_error() -> None:
    from caerus.venues.binance import SPEC

    # handed down as a spec: the venue registry never hears of it
    feed_only = dataclasses.replace(SPEC, name="feedonly", code=250, order_entry=None)
    with pytest.raises(ValueError, match="'feedonly' is not live"):
        make_live_transport(feed_only, network="testnet", credentials=Path("x"))


class _Exploding(_RestingTransport):
    """A transport whose socket is gone: every send raises."""

    name = "exploding"
    replies = False

    def send_msg(self, o: tuple) -> SendResult:
        raise ConnectionResetError("socket gone")


def test_engine_send_failure_is_published_not_lost(shm_dir: Path) -> None:
    consumer, producer = order_ring("t3.orders", 64)
    exec_w, exec_r = exec_ring("t3.exec", 64)
    books = books_with(t=time.time_ns())
    risk = RiskChecker(RiskConfig(), books)
    engine = Engine(consumer, _Exploding(), risk, books, exec_w)
    try:
        assert producer.try_push(*order(oid=9, t_decision=time.time_ns()))
        with pytest.raises(ConnectionResetError):
            engine.step()
        rec = exec_r.read_next()
        assert (rec[EXEC_ORDER_ID], rec[EXEC_OUTCOME]) == (9, Outcome.SEND_FAILED)
        assert engine.send_errors == 1 and risk.position == 0.0
    finally:
        exec_r.close()
        exec_w.close(unlink=True)
        producer.close()
        consumer.close(unlink=True)


class _QueryingTransport(_RestingTransport):
    """A venue that never answers by itself; the engine's status queries are recorded (never a resend)."""

    def __init__(self) -> None:
        self.sent: list[int] = []
        self.queried: list[int] = []

    def send_msg(self, o: tuple) -> SendResult:
        self.sent.append(o[0])
        return SendResult(Outcome.SENT, t_sent=time.time_ns())

    def query_status(self, order_id: int) -> None:
        self.queried.append(order_id)


def test_no_order_left_in_limbo_deadline_unknown_query_resolve(shm_dir: Path) -> None:
    consumer, producer = order_ring("t4.orders", 8)
    exec_w, exec_r = exec_ring("t4.exec", 64)
    books = books_with(t=time.time_ns())
    risk = RiskChecker(RiskConfig(), books)
    transport = _QueryingTransport()
    engine = Engine(consumer, transport, risk, books, exec_w, reply_timeout_ms=50.0)
    try:
        assert producer.try_push(*order(oid=1, qty=0.002, t_decision=time.time_ns()))
        assert producer.try_push(*order(oid=2, qty=0.001, t_decision=time.time_ns()))
        assert engine.step() and engine.step()
        t_sent = engine.pending[1][2]
        assert engine.check_deadlines(t_sent + 49 * MS) == 0
        # Order 2's connection drops with the order out: UNKNOWN at once, not "failed, fill 0".
        engine.on_reply(VenueReply(2, Outcome.SEND_FAILED, 0.0, 0.0, 0, time.time_ns()))
        engine.drain_replies()
        assert engine.unknown == {2} and risk.position == pytest.approx(0.003)
        # Order 1 passes its deadline: UNKNOWN, still counted in full, the venue is asked, nothing resent. Order 2,
        # still unresolved a reply timeout after its query, is asked again (once per timeout, never resent).
        assert engine.check_deadlines(t_sent + 10_000 * MS) == 1
        assert engine.unknown == {1, 2} and risk.position == pytest.approx(0.003)
        assert transport.queried == [2, 1, 2] and transport.sent == [1, 2]
        assert engine.check_deadlines(t_sent + 10_000 * MS) == 0 and transport.queried == [2, 1, 2]
        assert engine.status_queries == 3
        assert (engine.orders_unknown, engine.orders_timed_out) == (2, 1)
        # The status query's answer resolves order 1 (partly filled); a late reply resolves order 2 (not filled).
        assert engine.resolve(1, Outcome.PARTIAL, 95_001.0, 0.0005)
        engine.on_reply(VenueReply(2, Outcome.NOT_FILLED, 0.0, 0.0, 0, time.time_ns()))
        engine.drain_replies()
        assert engine.unknown == set() and engine.pending == {}
        assert risk.position == pytest.approx(0.0005)
        assert (engine.resolved_by_query, engine.resolved_late) == (1, 1)
        assert not engine.resolve(1, Outcome.FILLED, 1.0, 1.0)  # already settled: refused, counted
        recs = []
        while (r := exec_r.read_next()) is not None:
            recs.append((r[EXEC_ORDER_ID], Outcome(r[EXEC_OUTCOME]), bool(r[EXEC_FLAGS] & EXEC_FLAG_REPLY)))
        assert recs == [(1, Outcome.SENT, False), (2, Outcome.SENT, False), (2, Outcome.UNKNOWN, True),
                        (1, Outcome.UNKNOWN, True), (1, Outcome.PARTIAL, True), (2, Outcome.NOT_FILLED, True)]
    finally:
        exec_r.close()
        exec_w.close(unlink=True)
        producer.close()
        consumer.close(unlink=True)


class _StampingTransport:
    """A transport whose sends get kernel transmit stamps later, like the live ones (caerus.net.stamps)."""

    name = "stamping"
    replies = False

    def __init__(self) -> None:
        self.sent_at: dict[int, int] = {}
        self.ready: list[tuple[int, int]] = []

    def start(self) -> None: ...

    def close(self) -> None: ...

    def send_msg(self, o: tuple) -> SendResult:
        t = time.time_ns()
        self.sent_at[o[0]] = t
        return SendResult(Outcome.SENT, t_sent=t)

    def tx_stamps(self) -> list[tuple[int, int]]:
        out, self.ready = self.ready, []
        return out


def test_engine_matches_transmit_stamps_and_never_substitutes_a_missing_wire_stamp(shm_dir: Path) -> None:
    from caerus.execution.engine import TX_STAMP_WAIT_NS

    consumer, producer = order_ring("tx.orders", 64)
    books = books_with(t=time.time_ns())
    transport = _StampingTransport()
    engine = Engine(consumer, transport, RiskChecker(RiskConfig(), books), books)
    try:
        now = time.time_ns()
        stamped = list(order(oid=1, seq=1, t_decision=now))
        stamped[ORDER_TRIGGER_T_WIRE] = now - 50_000  # the trigger book had a kernel receive stamp
        assert producer.try_push(*stamped)
        assert producer.try_push(*order(oid=2, seq=2, t_decision=now))  # ... this one's had none (t_wire 0)
        assert producer.try_push(*order(oid=3, seq=3, t_decision=now, side=-1))  # its stamp never comes
        assert engine.step() and engine.step() and engine.step()
        transport.ready = [(1, transport.sent_at[1] + 7_000), (2, transport.sent_at[2] + 9_000), (99, now)]
        engine.idle_work(time.time_ns())
        assert engine.tx_stamped == 2 and engine.tx_missing == 0
        assert engine.pickup_to_wire_out.n == 2 and all(v > 7_000 for v in engine.pickup_to_wire_out.arr[:2])
        assert list(engine.sent_after_wire_out.arr[:2]) == [-7_000, -9_000]  # here the stamps came after t_sent
        assert engine.decision_to_wire_out.n == 2
        assert engine.wire_to_wire.n == 1  # order 2's trigger had no t_wire: no sample, never a substitute
        assert engine.wire_to_wire.arr[0] == transport.sent_at[1] + 7_000 - (now - 50_000)
        engine.idle_work(transport.sent_at[3] + TX_STAMP_WAIT_NS)  # order 3 waited too long
        assert engine.tx_missing == 1 and engine.tx_stamped == 2
    finally:
        producer.close()
        consumer.close(unlink=True)
