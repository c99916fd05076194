"""`caerus execution`: the execution process -- creates the MPSC order ring, runs the engine loop.

Start-up validates the config and the command line (exit 2 with a message naming the problem), builds the
transport (live ones only with ``--enable-live``, ``--network`` and ``--credentials``), creates the order ring
and the EXEC ring, attaches the book rings (retry-attach), then freezes and disables the garbage collector and
polls. Idle time polls the books, lets the transport settle what is due and publishes replies; every
``housekeeping_ms`` it drains queue_transit samples into ``<metrics-dir>/execution.hlog``, mirrors counters,
beats heartbeats and checks the kill file. On exit it writes ``<metrics-dir>/<transport>.json`` (paper: position,
PnL, markouts) and exits 0 on SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from caerus import instruments
from caerus.config import ConfigError, load_config
from caerus.execution.books import LatestBooks
from caerus.execution.config import ExecutionConfig
from caerus.execution.engine import OUTCOME_NAMES, RISK_NAMES, Engine
from caerus.execution.paper_account import ARMS
from caerus.execution.reconcile import PositionWatch, reconcile_at_start
from caerus.execution.risk import RiskChecker
from caerus.execution.transports import SIMULATED, TransportUnavailable, make_live_transport, make_transport
from caerus.execution.unwind import FlattenOnHalt, cancel_resting
from caerus.instruments import InstrumentSet
from caerus.ipc import segment
from caerus.ipc.mpsc import MpscConsumer
from caerus.ipc.swmr import SwmrReader, SwmrWriter
from caerus.ipc.wait import WaitPolicy, make_waiter
from caerus.metrics.hdr import IntervalLog
from caerus.runtime.args import add_process_args, fail_config, parse_cpus
from caerus.runtime.attach import attach_until
from caerus.runtime.clock import CHECK_MASK, HousekeepingClock
from caerus.runtime.counters import Counters, index_of, open_counters
from caerus.runtime.memwatch import MemWatch
from caerus.runtime.pinning import pin
from caerus.runtime.process import serve
from caerus.runtime.supervisor import HaltCause, Supervisor
from caerus.venuekit.order_transport import Reconciles, VenueState
from caerus.venues import registry
from caerus.wire import BOOK, EXEC, ORDER, Outcome, RiskReject, Venue

PROCESS = "execution"
# What --transport may name: the simulated transports, then every venue with live order entry. This entry point
# alone asks the venue registry (after the CLI loaded the venue plugins); the transports get the venue's spec.
LIVE = registry.live_names()
NAMES = SIMULATED + LIVE
# The metrics in execution.hlog, each with the engine buffer it drains (shadow_*: the rehearsed fire path of
# wire.OrderFlags.SHADOW orders; queue_transit_{warmed,unwarmed}: real orders, split by whether shadows flowed).
TAG_BUFFERS = {
    "queue_transit": "transit",
    "decision_to_wire": "to_wire",
    "pickup_to_sent": "to_sent",
    "shadow_transit": "shadow_transit",
    "shadow_pickup_to_done": "shadow_to_done",
    "queue_transit_warmed": "transit_warmed",
    "queue_transit_unwarmed": "transit_unwarmed",
    # kernel transmit stamps of the order connection (live transports): t_wire_out
    "pickup_to_wire_out": "pickup_to_wire_out",
    "sent_after_wire_out": "sent_after_wire_out",
    "decision_to_wire_out": "decision_to_wire_out",
    "wire_to_wire": "wire_to_wire",
}
TAGS = tuple(TAG_BUFFERS)
INT_COUNTERS = (
    "state",
    "halt_cause",
    "orders",
    *(f"outcome.{n}" for n in OUTCOME_NAMES),
    *(f"risk.{n}" for n in RISK_NAMES),
    "send_errors",
    "replies",
    "replies.unknown",
    "pending",
    "pending.evicted",
    "orders.unknown",  # orders that became UNKNOWN (reply deadline passed, or a disconnect with the order out)
    "orders.timed_out",  # ... of which by their reply deadline
    "orders.resolved_by_query",  # UNKNOWN orders settled by a status query (Engine.resolve)
    "orders.resolved_late",  # UNKNOWN orders settled by a late reply
    "orders.unresolved",  # UNKNOWN now
    "orders.status_queries",  # status queries asked for UNKNOWN orders (repeated every reply timeout)
    "exec_records",
    "books",
    "order_lanes.full",  # pushes the order ring refused (the strategies count the same as ring_full)
    "errors",
    "reattached",
    "paper.fills",
    "shadows",  # shadow orders rehearsed (risk + serialisation + signing, never sent)
    "shadows.risk_rejected",  # ... of which the risk checks refused (not rehearsed further)
    "tx_stamps",  # orders matched to their kernel transmit stamp (t_wire_out)
    "tx_stamps.missing",  # orders sent whose stamp never came (connection lost, or a kernel without them)
    # paper fills and settled markouts by the arm that decided the order (wire.OrderFlags.MODEL: the model, else
    # the naive rule), every instrument's Hyperliquid account together: the in-session A/B (signal = "ab")
    *(f"paper.arm.{arm}.{what}" for arm in ARMS for what in ("fills", "markout_n.0", "markout_n.1", "markout_n.2")),
)
FLOAT_COUNTERS = (
    "position",  # risk's projected position (BTC)
    "paper.position",
    "paper.pnl.realized",
    "paper.pnl.unrealized",
    "paper.pnl.fees",
    "paper.pnl.total",
    "paper.markout.0",  # mean markout (bps) at the first configured horizon, etc.
    "paper.markout.1",
    "paper.markout.2",
    "paper.markout_ms.0",  # the horizons (ms) of paper.markout.<i> and paper.arm.*.markout.<i>
    "paper.markout_ms.1",
    "paper.markout_ms.2",
    *(f"paper.arm.{arm}.markout.{i}" for arm in ARMS for i in range(3)),  # mean markout (bps) per arm
)


@dataclass
class _Ctx:
    """What the loop and housekeeping share (one object, so re-entering the loop after an error keeps it)."""

    cfg: ExecutionConfig
    engine: Engine
    sup: Supervisor
    counters: Counters
    log: IntervalLog | None
    consumer: MpscConsumer
    exec_writer: SwmrWriter | None
    wait_policy: str
    clock: HousekeepingClock
    memwatch: MemWatch
    watch: PositionWatch
    flattener: FlattenOnHalt
    #: what the shutdown's cancel of resting orders did (live transports), else None
    cancels: dict[str, int] | None = None
    #: each instrument's position as the venue reported it when trading stopped (live transports), else None
    venue_final: tuple[float, ...] | None = None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--segment", required=True, metavar="NAME", help="MPSC order ring to create (S.orders)")
    parser.add_argument("--transport", required=True, choices=NAMES, help="where orders go")
    parser.add_argument("--book-segment", action="append", default=[], metavar="NAME",
                        help="book ring for the price band and paper fills (repeat per venue)")
    parser.add_argument("--exec-segment", metavar="NAME", help="SWMR ring of EXEC records to create (S.exec)")
    parser.add_argument("--config", type=Path, metavar="FILE", help="execution TOML config (default: defaults)")
    parser.add_argument("--kill-file", metavar="PATH", help="reject every order once this file exists")
    parser.add_argument("--instruments", type=Path, metavar="FILE",
                        help="the session's instruments.json (default: BTC alone)")
    parser.add_argument("--order-capacity", type=int, default=1024, help="slots per producer lane (power of 2)")
    parser.add_argument("--exec-capacity", type=int, default=8192, help="EXEC ring slots (power of 2)")
    live = parser.add_argument_group("live transports (binance | hyperliquid)")
    live.add_argument("--enable-live", action="store_true", help="required to start a live transport")
    live.add_argument("--network", choices=("testnet", "mainnet"), help="venue network")
    live.add_argument("--credentials", type=Path, metavar="FILE",
                      help="credentials file (mode 0600); default: the environment (caerus.execution.credentials)")
    live.add_argument("--state-dir", type=Path, metavar="DIR",
                      help="where live state that must survive a restart is kept (the Hyperliquid nonce "
                           "reservation); default $XDG_STATE_HOME/caerus or ~/.local/state/caerus")
    live.add_argument("--confirm-mainnet", type=Path, metavar="FILE",
                      help="mainnet only: a 0600 file whose first line is '<venue> mainnet <account>' for the "
                           "account the credentials trade (the error without it says the exact line)")
    live.add_argument("--url", help="order-entry URL override (e.g. the emulator's); on mainnet only the venue's "
                                    "published endpoint, unless --allow-custom-mainnet-url")
    live.add_argument("--allow-custom-mainnet-url", action="store_true",
                      help="mainnet only: let --url name another host than the venue's published endpoint (a "
                           "proxy); signed mainnet orders go wherever it points")
    live.add_argument("--ca-file", help="CA bundle for the order-entry URL")
    add_process_args(parser, wait_default=WaitPolicy.HYBRID)  # shares a core with the strategy on small hosts


def _validate(args: argparse.Namespace) -> tuple[ExecutionConfig, InstrumentSet]:
    cfg = load_config(ExecutionConfig, args.config, "execution")
    if cfg.flatten_on_halt and args.transport not in LIVE:
        raise ConfigError(f"flatten_on_halt is true but --transport {args.transport} is not a live transport: "
                          f"there is no venue position to flatten; set flatten_on_halt = false")
    try:
        insts = instruments.load(args.instruments)
    except instruments.InstrumentError as exc:
        raise ConfigError(f"--instruments: {exc}") from None
    unknown = sorted(set(cfg.risk.instruments) - set(insts.names))
    if unknown:
        raise ConfigError(f"[risk.instruments] names {', '.join(unknown)}, which the session does not trade "
                          f"({', '.join(insts.names)})")
    for flag, cap in (("--order-capacity", args.order_capacity), ("--exec-capacity", args.exec_capacity)):
        if cap < 2 or cap & (cap - 1):
            raise ConfigError(f"{flag} must be a power of two >= 2, got {cap}")
    if args.transport in LIVE:
        if not args.enable_live:
            raise ConfigError(f"--transport {args.transport} sends real orders: refusing to start without "
                              f"--enable-live")
        if not args.network:
            raise ConfigError(f"--transport {args.transport} needs --network testnet|mainnet")
    elif args.enable_live:
        raise ConfigError(f"--enable-live given with the simulated transport {args.transport!r}")
    if args.transport == "paper" and not args.book_segment:
        raise ConfigError("--transport paper needs --book-segment (the target venue's book ring) to fill against")
    if args.transport in LIVE and not args.book_segment:
        raise ConfigError(f"--transport {args.transport} needs --book-segment: live orders are always checked "
                          f"against the target venue's book (price band)")
    if cfg.risk.require_book and not args.book_segment:
        raise ConfigError("risk.require_book is true but no --book-segment was given: every order would be "
                          "rejected (NO_BOOK); pass the target venue's book ring or set [risk] require_book = false")
    return cfg, insts


def run(args: argparse.Namespace) -> int:
    try:
        cfg, insts = _validate(args)
        cpus = parse_cpus(args.cpus)
        if args.metrics_dir:
            Path(args.metrics_dir).mkdir(parents=True, exist_ok=True)
    except ConfigError as exc:
        return fail_config(str(exc))
    except ValueError as exc:
        return fail_config(str(exc))
    except OSError as exc:
        return fail_config(f"--metrics-dir {args.metrics_dir}: {exc.strerror}")

    books = LatestBooks(instruments=len(insts))
    risk = RiskChecker(cfg.risk, books, live=args.transport in LIVE, instruments=insts)
    engine_ref: list[Engine] = []

    def on_reply(reply: object) -> None:
        engine_ref[0].on_reply(reply)  # type: ignore[arg-type]

    try:
        if args.transport in LIVE:
            transport = make_live_transport(
                registry.get(args.transport), network=args.network, credentials=args.credentials,
                enable_live=args.enable_live, url=args.url, ca_file=args.ca_file, on_reply=on_reply,
                confirm_mainnet=args.confirm_mainnet, allow_custom_mainnet_url=args.allow_custom_mainnet_url,
                instruments=insts,
                **_state_options(args),
            )
        else:
            transport = make_transport(args.transport, books=books, paper=cfg.paper, on_reply=on_reply)
    except (TransportUnavailable, ValueError, OSError) as exc:
        return fail_config(f"--transport {args.transport}: {exc}")
    try:
        pin(cpus)
    except ValueError as exc:
        return fail_config(str(exc))

    def on_halt(cause: HaltCause) -> None:
        risk.kill = True

    sup = Supervisor.for_process(cfg, args.kill_file, on_halt)
    counters: Counters | None = None
    consumer = exec_writer = log = None
    engine = None
    ctx: _Ctx | None = None
    memwatch = MemWatch(PROCESS)
    reconciled: VenueState | bool | None = False
    try:
        try:
            transport.start()  # before creating any segment: a transport that cannot start leaves nothing behind
        except RuntimeError as exc:  # e.g. a live transport that cannot connect (message names URL, never secrets)
            print(f"error: --transport {args.transport}: {exc}", file=sys.stderr)
            return 1
        reconciled = reconcile_at_start(transport, risk, _venue_timeout_s(cfg), PROCESS)
        if reconciled is None:
            return 1
        # many instruments: per-instrument counters for the session's report (inst.<ID>.<what>)
        inst_floats = tuple(f"inst.{i.id}.{w}" for i in insts for w in INSTRUMENT_FLOATS) if len(insts) > 1 else ()
        counters = open_counters(args.stats_segment, INT_COUNTERS, FLOAT_COUNTERS + inst_floats)
        consumer = MpscConsumer.create(args.segment, ORDER, args.order_capacity)
        if args.exec_segment:
            exec_writer = SwmrWriter.create(args.exec_segment, EXEC, args.exec_capacity)
        engine = Engine(consumer, transport, risk, books, exec_writer, max_pending=cfg.max_pending,
                        reply_timeout_ms=cfg.reply_timeout_ms)
        engine_ref.append(engine)
        watch = PositionWatch(transport, engine, sup, interval_s=cfg.reconcile_interval_s,
                              timeout_s=_venue_timeout_s(cfg), process=PROCESS)
        if isinstance(reconciled, VenueState):
            watch.started_open = reconciled.open_orders
        ctx = _Ctx(cfg=cfg, engine=engine, sup=sup, counters=counters, log=None, consumer=consumer,
                   exec_writer=exec_writer, wait_policy=args.wait_policy,
                   clock=HousekeepingClock(cfg.housekeeping_ms), memwatch=memwatch, watch=watch,
                   flattener=FlattenOnHalt(cfg.flatten_on_halt, engine, transport, sup, _venue_timeout_s(cfg),
                                           PROCESS))
        for name in args.book_segment:
            r = attach_until(functools.partial(SwmrReader.attach, name, BOOK),
                             f"book segment {name!r}", lambda: sup.stopping, args.attach_timeout, counters.beat)
            if r is None:
                return 0
            books.readers.append(r)
        if args.metrics_dir:
            log = IntervalLog(Path(args.metrics_dir) / f"{PROCESS}.hlog", TAGS,
                              comment=f"caerus {PROCESS} pid {os.getpid()} transport {args.transport}")
        ctx.log = log
        run_ctx = ctx
        # Repeated loop errors halt: every order is then rejected (kill switch).
        serve(PROCESS, sup, lambda: _loop(run_ctx), lambda: _housekeeping(run_ctx), ctx.clock, memwatch)
        # Give late replies (paper latency) a moment to settle so the summary is complete.
        if engine.pending:
            deadline = time.monotonic() + min(1.0, cfg.paper.latency_ms / 1e3 + 0.2)
            while engine.pending and time.monotonic() < deadline:
                engine.idle_work(time.time_ns())
                time.sleep(0.005)
        return 0
    except segment.SegmentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        if ctx is not None:
            # before the transport closes: the engine's resting orders cancelled, a halt's flatten done
            ctx.cancels = cancel_resting(ctx.engine, transport, _venue_timeout_s(cfg), PROCESS)
            ctx.flattener.tick()
            ctx.flattener.enabled = False  # the transport closes next: housekeeping must not flatten after it
            ctx.watch.close()
            ctx.venue_final = _final_venue_positions(transport, ctx.engine, _venue_timeout_s(cfg))
        transport.close()
        if ctx is not None:
            _housekeeping(ctx)
            memwatch.report()
        if engine is not None and args.metrics_dir and hasattr(transport, "summary"):
            _write_summary(Path(args.metrics_dir) / f"{transport.name}.json", engine, transport, reconciled,
                           ctx.watch if ctx is not None else None, ctx.venue_final if ctx is not None else None,
                           ctx.cancels if ctx is not None else None,
                           ctx.flattener.report if ctx is not None else None)
        if log is not None:
            log.close()
        books.close()
        if exec_writer is not None:
            exec_writer.close()
        if consumer is not None:
            consumer.close()
        if counters is not None and args.stats_segment:
            counters.close()


def _state_options(args: argparse.Namespace) -> dict[str, object]:
    """Where a live transport keeps state across restarts (Hyperliquid's nonce reservation): ``--state-dir``, else
    the venue's default (its registry entry's ``order_entry.state_dir``); nothing for a venue that keeps none."""
    entry = registry.get(args.transport).order_entry
    if entry is None or entry.state_dir is None:
        return {}
    return {"state_dir": args.state_dir or entry.state_dir()}


def _loop(ctx: _Ctx) -> None:
    """The hot loop; returns on stop (or raises, and the caller counts the error and re-enters)."""
    sup = ctx.sup
    engine = ctx.engine
    step = engine.step
    waiter = make_waiter(ctx.wait_policy, spins=ctx.cfg.idle_spins)
    idle = waiter.idle
    reset = waiter.reset
    idle_work = engine.idle_work
    tns = time.time_ns
    clock = ctx.clock
    passes = 0
    while not sup.stopping:
        if step():
            reset()
        else:
            # Idle: a few cheap checks, then the wait policy. The order ring is polled again before any of it.
            passes += 1
            if not passes & 63:
                idle_work(tns())
            idle()
            if not passes & CHECK_MASK and clock.due(tns()):
                _housekeeping(ctx)


def _housekeeping(ctx: _Ctx) -> None:
    """Off the hot path: metrics, kill file, book re-attach, replies, counters, heartbeats."""
    engine, sup, counters, log = ctx.engine, ctx.sup, ctx.counters, ctx.log
    consumer, exec_writer = ctx.consumer, ctx.exec_writer
    for tag, attr in TAG_BUFFERS.items():
        buf = getattr(engine, attr)
        if log is not None:
            log.drain(tag, buf)
        else:
            buf.n = 0
    if log is not None:
        log.maybe_flush()
    sup.check_kill_file()
    ctx.watch.tick()
    ctx.flattener.tick()
    ctx.memwatch.tick()
    reattached = engine.books.refresh()
    engine.drain_replies()
    ints = counters.ints
    floats = counters.floats
    ints[_I["state"]] = int(sup.state)
    ints[_I["halt_cause"]] = int(sup.halt_cause)
    ints[_I["orders"]] = engine.orders
    for o in Outcome:
        ints[_I[f"outcome.{o.name.lower()}"]] = engine.outcomes[o]
    for r in RiskReject:
        if r != RiskReject.NONE:
            ints[_I[f"risk.{r.name.lower()}"]] = engine.risk.rejects[r]
    ints[_I["send_errors"]] = engine.send_errors
    ints[_I["replies"]] = engine.replies_seen
    ints[_I["replies.unknown"]] = engine.unknown_replies
    ints[_I["pending"]] = len(engine.pending)
    ints[_I["pending.evicted"]] = engine.pending_evicted
    ints[_I["orders.unknown"]] = engine.orders_unknown
    ints[_I["orders.timed_out"]] = engine.orders_timed_out
    ints[_I["orders.resolved_by_query"]] = engine.resolved_by_query
    ints[_I["orders.resolved_late"]] = engine.resolved_late
    ints[_I["orders.unresolved"]] = len(engine.unknown)
    ints[_I["orders.status_queries"]] = engine.status_queries
    ints[_I["exec_records"]] = engine.exec_records
    ints[_I["books"]] = engine.books.seen
    ints[_I["order_lanes.full"]] = consumer.full_count() if consumer is not None else 0
    ints[_I["errors"]] = sup.errors
    ints[_I["shadows"]] = engine.shadows
    ints[_I["shadows.risk_rejected"]] = engine.shadow_risk_rejects
    ints[_I["tx_stamps"]] = engine.tx_stamped
    ints[_I["tx_stamps.missing"]] = engine.tx_missing
    ints[_I["reattached"]] += reattached
    floats[_F["position"]] = engine.risk.position
    accounts = getattr(engine.transport, "accounts", None)
    per_instrument = getattr(engine.transport, "instrument_accounts", None) or {}
    if accounts:
        acct = accounts[int(Venue.HYPERLIQUID)]
        hl = [a for (v, _), a in per_instrument.items() if v == int(Venue.HYPERLIQUID)] or [acct]
        ints[_I["paper.fills"]] = sum(a.fills for a in (per_instrument or accounts).values())
        floats[_F["paper.position"]] = acct.position  # the first instrument's
        floats[_F["paper.pnl.realized"]] = sum(a.realized for a in hl)  # PnL: every instrument's
        floats[_F["paper.pnl.unrealized"]] = sum(a.unrealized for a in hl)
        floats[_F["paper.pnl.fees"]] = sum(a.fees for a in hl)
        floats[_F["paper.pnl.total"]] = sum(a.total_pnl for a in hl)
        for i in range(min(3, len(acct.horizons_ms))):
            floats[_F[f"paper.markout.{i}"]] = acct.markout_mean_bps(i)
            floats[_F[f"paper.markout_ms.{i}"]] = acct.horizons_ms[i]
            for j, arm in enumerate(ARMS):
                n = sum(h.arm_markout_n[j][i] for h in hl)
                ints[_I[f"paper.arm.{arm}.markout_n.{i}"]] = n
                floats[_F[f"paper.arm.{arm}.markout.{i}"]] = (
                    sum(h.arm_markout_sum_bps[j][i] for h in hl) / n if n else math.nan)
        for j, arm in enumerate(ARMS):
            ints[_I[f"paper.arm.{arm}.fills"]] = sum(h.arm_fills[j] for h in hl)
    n_inst = engine.risk.instruments
    if n_inst > 1:
        base = len(FLOAT_COUNTERS)
        for k in range(n_inst):
            a = per_instrument.get((int(Venue.HYPERLIQUID), k))
            f = base + k * len(INSTRUMENT_FLOATS)
            floats[f] = engine.risk.positions[k]
            floats[f + 1] = a.total_pnl if a is not None else 0.0
            floats[f + 2] = float(a.fills) if a is not None else 0.0
            floats[f + 3] = ctx.venue_final[k] if ctx.venue_final is not None else math.nan
    counters.beat()
    if consumer is not None:
        consumer.beat()
    if exec_writer is not None:
        exec_writer.beat()


#: per-instrument float counters (inst.<ID>.<what>) when the session trades more than one instrument
INSTRUMENT_FLOATS = ("position", "paper_pnl", "paper_fills", "venue_position")


def _final_venue_positions(transport: object, engine: Engine, timeout_s: float) -> tuple[float, ...] | None:
    """Each instrument's position (plus resting orders) as a live venue reports it once trading has stopped, for
    the report to set beside the engine's; None for simulated transports, or when the venue cannot be read or
    orders are still in flight (the two would describe different moments)."""
    if not isinstance(transport, Reconciles) or engine.pending or engine.unknown:
        return None
    try:
        state = transport.venue_state(timeout_s)
    except RuntimeError as exc:
        print(f"{PROCESS}: final position read failed: {exc}", file=sys.stderr)
        return None
    return tuple(p + r for p, r in zip(state.positions, state.resting_by, strict=True))


def _venue_timeout_s(cfg: ExecutionConfig) -> float:
    """How long a reconciliation query may take (at least 5 s, at least one reply timeout)."""
    return max(5.0, cfg.reply_timeout_ms / 1e3)


def _write_summary(path: Path, engine: Engine, transport: object, reconciled: VenueState | bool | None,
                   watch: PositionWatch | None, venue_final: tuple[float, ...] | None = None,
                   cancels: dict[str, int] | None = None, flattened: dict[str, object] | None = None) -> None:
    doc = transport.summary()  # type: ignore[attr-defined]
    if isinstance(reconciled, VenueState):  # what the venue held when trading started
        doc["reconciled"] = {"position": reconciled.position, "resting": reconciled.resting}
        names = getattr(getattr(transport, "instruments", None), "names", None)
        if names and len(names) == len(reconciled.positions):
            doc["reconciled"]["instruments"] = {n: {"position": reconciled.positions[k],
                                                    "resting": reconciled.resting_by[k]}
                                                for k, n in enumerate(names)}
    if watch is not None and watch.enabled:  # mid-session position checks against the venue
        doc["position_checks"] = watch.summary()
    if cancels is not None and cancels["asked"]:  # resting orders cancelled at shutdown
        doc["shutdown_cancels"] = cancels
    if flattened is not None:  # flatten_on_halt: what the halt's reduce-only orders did
        doc["flatten_on_halt"] = flattened
    if venue_final is not None:  # what the venue held when trading stopped, per instrument id
        doc["venue_positions"] = list(venue_final)
    doc["engine"] = {
        "orders": engine.orders,
        "outcomes": {o.name.lower(): engine.outcomes[o] for o in Outcome},
        "risk": {r.name.lower(): engine.risk.rejects[r] for r in RiskReject if r != RiskReject.NONE},
        "position": engine.risk.position,
        "positions": list(engine.risk.positions),  # per instrument id (the session's order)
        "replies": engine.replies_seen,
        "unknown_replies": engine.unknown_replies,
        "pending": len(engine.pending),
        "unknown": engine.orders_unknown,
        "timed_out": engine.orders_timed_out,
        "resolved_by_query": engine.resolved_by_query,
        "resolved_late": engine.resolved_late,
        "unresolved": len(engine.unknown),
        "status_queries": engine.status_queries,
    }
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, allow_nan=False, default=str))
    os.replace(tmp, path)


_I = index_of(INT_COUNTERS)
_F = index_of(FLOAT_COUNTERS)
