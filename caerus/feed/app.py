"""``caerus feed``: one venue's TLS WebSocket -> validated top of book -> its SWMR ring.

Wiring only: validate the config (exit 2 before anything starts), pin the CPUs, create the outputs (books ring,
events ring, counter block, .hlog), build the venue's loop (from its spec: this entry point hands the venue
registry to the config, nothing below it looks a venue up) and the supervisor, and run them on the event loop the
wait policy asks for (spin/hybrid = busy-polling selector, sleep = normal asyncio) until SIGTERM/SIGINT, then close
every connection as SHUTDOWN, flush the metrics and exit 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import gc
import signal
import ssl
import sys
import time
from collections.abc import Callable

from caerus.config import ConfigError
from caerus.feed import config as feed_config
from caerus.feed.config import FeedConfig
from caerus.feed.warm import FeedWarmer, synthetic_frames
from caerus.ipc.segment import SegmentError
from caerus.net import eventloop
from caerus.net.busy import BusyWsSession
from caerus.net.connection_supervisor import Supervisor
from caerus.net.pacing import TokenBucket
from caerus.net.ws import WsSession, client_ssl_context
from caerus.plan import pin_current_process
from caerus.venuekit.feed_loop import FeedSink
from caerus.venuekit.feed_outputs import WAIT_POLICY_CODES, FeedOutputs
from caerus.venues import registry


def add_arguments(parser: argparse.ArgumentParser) -> None:
    feed_config.add_arguments(parser, registry)


FEED_RECURSION_LIMIT = 1000  # CPython's default


def run(args: argparse.Namespace) -> int:
    try:
        cfg = feed_config.from_args(args, registry)
    except ConfigError as exc:
        print(f"caerus feed: bad config: {exc}", file=sys.stderr)
        return 2
    pin_current_process(cfg.cpus)
    # msgspec's nesting guard counts against the interpreter's recursion limit: at CPython's default a pathologically
    # nested frame raises RecursionError (counted and dropped by the loops); at the 100000 some libraries set on
    # import (eth-account -> py_ecc) it would overflow the C stack first. Whatever was imported, keep it sane.
    sys.setrecursionlimit(min(sys.getrecursionlimit(), FEED_RECURSION_LIMIT))
    try:
        ssl_context = client_ssl_context(cfg.ca_file)
    except OSError as exc:
        print(f"caerus feed: bad config: --ca-file {cfg.ca_file!r} cannot be loaded: {exc}", file=sys.stderr)
        return 2
    try:
        out = FeedOutputs(
            cfg.venue,
            cfg.segment,
            cfg.events_segment,
            cfg.stats_segment,
            capacity=cfg.capacity,
            metrics_dir=cfg.metrics_dir,
            venue_code=cfg.spec.code,
            instrument_ids=cfg.ids,
            instrument_names=cfg.names,
            per_instrument=cfg.split,
            process=cfg.process,
            comment=f"caerus feed {cfg.venue} wait_policy={cfg.wait_policy} url={cfg.url}",
        )
    except (SegmentError, OSError, ValueError) as exc:
        print(f"caerus feed: cannot create segments for {cfg.segment!r}: {exc}", file=sys.stderr)
        return 1
    try:
        sink: FeedSink = cfg.spec.feed.sink(out, symbols=cfg.symbols, ids=cfg.ids, lanes=cfg.connections,
                                  parse_error_limit=cfg.parse_error_limit)
        out.sink = sink
        out.counters.set("wait_policy", WAIT_POLICY_CODES[cfg.wait_policy])
        out.counters.set("instruments", len(cfg.symbols))
        supervisors = pool_supervisors(cfg, sink, out, ssl_context)
        out.log(
            "start",
            venue=cfg.venue,
            url=cfg.url,
            channel=cfg.channel,
            segment=cfg.segment,
            events_segment=cfg.events_segment,
            stats_segment=cfg.stats_segment,
            wait_policy=cfg.wait_policy,
            client=cfg.client,
            warm_every_us=cfg.warm_every_us,
            instruments=len(cfg.symbols),
            connections=cfg.connections,
            cpus=list(cfg.cpus),
            stale_after_s=cfg.supervisor.stale_after_s,
            rotate_after_s=cfg.supervisor.rotate_after_s,
        )
        eventloop.run(_main(cfg, supervisors, out, sink), cfg.wait_policy)
        out.log("stop", books=sink.n_books)
    finally:
        out.close()
    return 0


def pool_supervisors(cfg: FeedConfig, sink: FeedSink, out: FeedOutputs,
                     ssl_context: ssl.SSLContext | None) -> list[Supervisor]:
    """One supervisor per connection of the pool: its own reconnects, data watchdog and rotation, and connection
    ids interleaved with the other lanes'. One bucket of new connections for all of them: the venue counts them
    per client (Hyperliquid 30/min per IP), with a burst large enough to open every lane at start."""
    sup = cfg.supervisor
    bucket = TokenBucket(sup.connects_per_min, max(sup.connect_burst, len(sink.lanes)))
    return [Supervisor(cfg.endpoint(lane.symbols), sup, lane, lane, ssl_context=ssl_context,
                       session_factory=_session_factory(cfg, out), bucket=bucket,
                       conn_ids=(lane.number + 1, len(sink.lanes))) for lane in sink.lanes]


def _session_factory(cfg: FeedConfig, out: FeedOutputs) -> Callable[..., WsSession]:
    """The WebSocket client the config asks for; the busy one records ``stack`` samples into the outputs."""
    if cfg.client == "busy":
        return functools.partial(BusyWsSession, stack=out.stack)
    return WsSession


def _stop_all(supervisors: list[Supervisor]) -> None:
    for s in supervisors:
        s.stop()


def _live_msgs(supervisors: list[Supervisor]) -> int:
    return sum(s.msg_count for sup in supervisors for s in sup.sessions())


async def _main(cfg: FeedConfig, supervisors: list[Supervisor], out: FeedOutputs, sink: FeedSink) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, _stop_all, supervisors)
    warmer = _start_warmer(cfg, out, sink, loop)
    housekeeping = loop.create_task(_housekeeping(cfg, supervisors, out, sink, warmer))
    # Start-up garbage is frozen out of the collector's view; the loop itself allocates little per message.
    gc.collect()
    gc.freeze()
    try:
        # every connection of the pool in this one loop; one that raises stops the others (and the process)
        runs = [loop.create_task(s.run(), name=f"lane-{i}") for i, s in enumerate(supervisors)]
        try:
            await asyncio.gather(*runs)
        finally:
            _stop_all(supervisors)
            await asyncio.wait(runs, timeout=cfg.supervisor.close_timeout_s + 5.0)
    finally:
        housekeeping.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await housekeeping
        if warmer is not None:
            warmer.close()
            _warm_counters(warmer, out)
        out.housekeeping(_live_msgs(supervisors))


def _start_warmer(cfg: FeedConfig, out: FeedOutputs, sink: FeedSink,
                  loop: asyncio.AbstractEventLoop) -> FeedWarmer | None:
    """The warm path (--warm-every-us), started before the first connection; None when off."""
    if not cfg.warm_every_us:
        return None
    book_frame = cfg.spec.feed.book_frame
    assert book_frame is not None  # FeedConfig.check refuses the setting without one
    frames = synthetic_frames(book_frame, cfg.symbols[0])
    warmer = FeedWarmer(sink, frames, cfg.warm_every_us, loop)
    warmer.start()
    out.log("warm_path", every_us=cfg.warm_every_us, frames=len(frames), shadow_url=warmer.shadow.venue.url,
            intruders=warmer.shadow.venue.intruders)
    return warmer


def _warm_counters(warmer: FeedWarmer, out: FeedOutputs) -> None:
    out.counters.set("warm_reads", warmer.reads)
    out.counters.set("warm_skipped", warmer.skipped)
    out.counters.set("warm_intruders", warmer.shadow.venue.intruders)


async def _housekeeping(cfg: FeedConfig, supervisors: list[Supervisor], out: FeedOutputs, sink: FeedSink,
                        warmer: FeedWarmer | None = None) -> None:
    stale_ns = int(cfg.instrument_stale_after_s * 1e9)
    loop = asyncio.get_running_loop()
    sends: set[asyncio.Task[None]] = set()

    def resubscribe(session: WsSession, symbol: str) -> None:
        for frame in cfg.spec.feed.subscribe((symbol,), cfg.channel):
            task = loop.create_task(session.send(frame))
            sends.add(task)
            task.add_done_callback(sends.discard)

    warm_error: str | None = None
    while True:
        if warmer is not None:
            _warm_counters(warmer, out)
            if warmer.error is not None and warm_error is None:
                warm_error = warmer.error
                out.log("warm_path_stopped", error=warm_error)
        sink.watch_instruments(time.time_ns(), stale_ns, resubscribe)
        out.housekeeping(_live_msgs(supervisors), max(s.next_connect_in() for s in supervisors))
        await asyncio.sleep(cfg.housekeeping_s)
