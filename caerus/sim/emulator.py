"""The venue emulator: both TLS WebSocket servers, the market (or replay) driver and the scenario wiring.

    async with VenueEmulator(EmulatorConfig(cert_dir=tmp)) as emu:
        emu.info["binance_url"], emu.info["ca_file"] ...

``EmulatorThread`` runs the same thing on a private event loop in a background thread (for synchronous callers);
``caerus venue-sim`` (caerus/sim/app.py) runs it as a process.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import socket
import ssl
import threading
from pathlib import Path
from typing import Any

from websockets.asyncio.server import Server, serve

from caerus.sim import orders, protocols
from caerus.sim.binance.server import ORDER_PATH, BinanceServer
from caerus.sim.core.capture_file import CaptureFrames, CaptureInfo, inspect
from caerus.sim.core.config import EmulatorConfig, SharedState, VenueCounters
from caerus.sim.core.driver import MarketDriver
from caerus.sim.core.http import connection_class
from caerus.sim.core.market import MarketModel
from caerus.sim.core.order_entry import book_sink, configure_venue, install, on_clock
from caerus.sim.core.replay import ReplayDriver, read_frames
from caerus.sim.core.replay_market import ReplayMarket, describe_follower, wait_for_venues
from caerus.sim.core.tls import CertFiles, make_certificates, server_context
from caerus.sim.hyperliquid.server import HyperliquidServer

log = logging.getLogger("caerus.sim")
ACCOUNT_EVENTS_PERIOD_S = 0.02  # how soon a fill the market made (not a request) reaches the user streams


def _bind(host: str, port: int) -> socket.socket:
    """A bound, not yet listening TCP socket: connections to it are refused until it listens."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(exc.errno, f"cannot bind {host}:{port}: {exc.strerror}") from None
    return sock


class VenueEmulator:
    """Binance + Hyperliquid emulator on loopback. ``start()`` returns the ready dict (also ``self.info``)."""

    def __init__(self, config: EmulatorConfig) -> None:
        config.validate()
        install(orders)  # order entry, handed down to the core's servers (the core never imports it)
        self.config = config
        self.state = SharedState(config)
        self.info: dict[str, Any] = {}
        self.certs: CertFiles | None = None
        self.driver: MarketDriver | ReplayDriver | None = None
        self._servers: list[Server] = []
        self._socks: dict[str, socket.socket] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._recorded = read_frames(config.replay) if config.replay is not None else None
        # a real capture (caerus.sim.core.capture_file): its Binance frames played, Hyperliquid modelled from them
        self.capture: CaptureInfo | None = inspect(config.captures) if config.captures else None
        self._replay_market: ReplayMarket | None = None
        if self.capture is not None:
            self._replay_market = ReplayMarket(config.market, CaptureFrames(self.capture))

    # -- TLS ------------------------------------------------------------------------------------------------
    def _ssl_context(self, venue: str) -> ssl.SSLContext:
        assert self.certs is not None
        ctx = server_context(self.certs.cert_file, self.certs.key_file)
        if self.config.scenario.name == "tls-failure" and self.config.scenario.applies(venue):
            rogue = server_context(self.certs.rogue_cert_file, self.certs.rogue_key_file)
            budget, counters = self.state.budget, self.state.counters[venue]

            def pick(sslobj: ssl.SSLObject, server_name: str | None, _ctx: ssl.SSLContext) -> None:
                # Called for every ClientHello (with or without SNI): swap in the untrusted certificate.
                if budget.claim(venue):
                    counters.tls_failed += 1
                    sslobj.context = rogue

            ctx.sni_callback = pick
        return ctx

    # -- lifecycle --------------------------------------------------------------------------------------------
    async def start(self) -> dict[str, Any]:
        cfg = self.config
        configure_venue(binance_fee_tier=cfg.binance_fee_tier, hl_fee_tier=cfg.hl_fee_tier,
                        binance_gtd_min_lead_s=cfg.binance_gtd_min_lead_s)
        self.certs = make_certificates(cfg.cert_dir)
        if self._recorded is not None:
            self.driver = ReplayDriver(self._recorded, self.state.topics, retime=cfg.replay_retime,
                                       wait_s=cfg.replay_wait_s, yield_after_top=cfg.yield_after_top)
        else:
            silence = None
            if cfg.scenario.name == "silent-instrument":  # the last emulated instrument goes quiet, the rest flow
                silence = (len(cfg.market.symbols) - 1, int(cfg.scenario.after_s * 1e9))
            gate = (functools.partial(wait_for_venues, self.state.topics, cfg.replay_wait_s)
                    if self._replay_market is not None else None)
            self.driver = MarketDriver(self._replay_market or MarketModel(cfg.market), self.state.topics,
                                       book_sink(), silence, yield_after_top=cfg.yield_after_top, start_gate=gate)
            self.state.snapshot = self.driver.current
            self.state.market = self.driver
        bn, hl = BinanceServer(self.state), HyperliquidServer(self.state)
        self._socks = {"binance": _bind(cfg.host, cfg.binance_port),
                       "hyperliquid": _bind(cfg.host, cfg.hyperliquid_port)}
        ports = {v: s.getsockname()[1] for v, s in self._socks.items()}
        common: dict[str, Any] = {"max_size": cfg.max_message_bytes, "compression": None, "close_timeout": 2,
                                   "logger": logging.getLogger("caerus.sim.ws")}
        # Each venue port also answers plain HTTP (REST), as the venues serve REST and WebSocket on one host.
        specs: dict[str, tuple[Any, Any, dict[str, Any]]] = {
            "binance": (bn.handler, bn.process_request,
                        {"ping_interval": cfg.binance_ping_interval_s, "ping_timeout": cfg.binance_pong_timeout_s,
                         "create_connection": connection_class(bn.http)}),
            "hyperliquid": (hl.handler, hl.process_request,
                            {"ping_interval": None, "ping_timeout": None,
                             "create_connection": connection_class(hl.http)}),
        }
        # Registered extra protocols (caerus.sim.protocols): ephemeral ports next to the built-in venues.
        for proto in protocols.registered():
            self.state.counters.setdefault(proto.name, VenueCounters())
            server_obj = proto.server(self.state)
            self._socks[proto.name] = _bind(cfg.host, 0)
            ports[proto.name] = self._socks[proto.name].getsockname()[1]
            specs[proto.name] = (server_obj.handler, server_obj.process_request, dict(proto.ws_options or {}))
        refused = cfg.scenario.name == "refused"
        for venue, (handler, process_request, extra) in specs.items():
            ctx = self._ssl_context(venue)
            server = serve(handler, sock=self._socks[venue], ssl=ctx, process_request=process_request,
                           start_serving=False, **common, **extra)
            srv = await server
            self._servers.append(srv)
            if refused and cfg.scenario.applies(venue):
                self._tasks.append(asyncio.create_task(self._listen_later(venue, srv, cfg.scenario.duration_s)))
            else:
                await srv.start_serving()
        self._tasks.append(asyncio.create_task(self.driver.run(), name="caerus-sim-driver"))
        self._tasks.append(asyncio.create_task(self._pump_account_events(bn, hl), name="caerus-sim-account"))
        if isinstance(self.driver, MarketDriver) and cfg.metrics_dir is not None:
            self.driver.lateness.open_log(cfg.metrics_dir)
            self._tasks.append(asyncio.create_task(self.driver.lateness.run(), name="caerus-sim-lateness"))
        if isinstance(self.driver, MarketDriver):  # ready means both venues have a market (~0.1 s), bounded
            try:
                await asyncio.wait_for(self.driver.primed.wait(), 30)
            except TimeoutError:
                raise RuntimeError("the market model produced no book for both venues within 30 s") from None
        host = f"[{cfg.host}]" if ":" in cfg.host else cfg.host
        self.info = {
            "binance_url": f"wss://{host}:{ports['binance']}",
            "hyperliquid_url": f"wss://{host}:{ports['hyperliquid']}",
            "binance_order_url": f"wss://{host}:{ports['binance']}{ORDER_PATH}",
            **{f"{p.name}_url": f"wss://{host}:{ports[p.name]}" for p in protocols.registered()},
            "ca_file": str(self.certs.ca_file),
            "pid": os.getpid(),
            "scenario": cfg.scenario.name,
            "seed": cfg.seed,
            "replay": str(cfg.replay) if cfg.replay else None,
            "symbols": list(cfg.market.symbols),
            "capture": self._capture_description(),
        }
        log.info("venue emulator ready: %s", json.dumps(self.info))
        return self.info

    @staticmethod
    async def _pump_account_events(bn: BinanceServer, hl: HyperliquidServer) -> None:
        """Publish the account events the market queued between requests (a resting order the market filled, a
        conditional order triggered, a GTD order expired, the scheduleCancel dead man's switch): the servers
        publish after each answer, this catches the rest. Each tick is also order entry's clock."""
        while True:
            await asyncio.sleep(ACCOUNT_EVENTS_PERIOD_S)
            on_clock()  # what is due at a time (GTD expiry) happens whether or not the market moved
            bn.publish_account_events()
            hl.publish_account_events()

    async def _listen_later(self, venue: str, srv: Server, delay: float) -> None:
        log.info("%s: port bound but refusing connections for %.1f s (scenario refused)", venue, delay)
        await asyncio.sleep(delay)
        await srv.start_serving()
        log.info("%s: listening", venue)

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self._tasks.clear()
        if isinstance(self.driver, MarketDriver):
            self.driver.lateness.close()  # the last second's samples
        if self.capture is not None and self.config.metrics_dir is not None:
            self._write_replay_record(self.config.metrics_dir)
        for srv in self._servers:
            srv.close()
        for srv in self._servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(srv.wait_closed(), 5)
        self._servers.clear()
        for s in self._socks.values():
            s.close()
        log.info("venue emulator stopped: %s", json.dumps(self.stats()))

    def connection_counts(self) -> dict[str, dict[str, Any]]:
        """Per venue: connections opened / closed / active, handshakes rejected, TLS failures, HTTP requests, the
        requests refused by each limit (``refused``: setting name or reason -> count), and the subscriptions
        acknowledged and left silent as the venue leaves them (``silent``: "trade on /market" -> count)."""
        return {
            v: {"opened": c.opened, "closed": c.closed, "active": c.active, "rejected": c.rejected,
                "tls_failed": c.tls_failed, "http_requests": c.http_requests, "refused": dict(c.refused),
                "silent": dict(c.silent)}
            for v, c in self.state.counters.items()
        }

    def stats(self) -> dict[str, Any]:
        """Connection counts plus what the driver did (frames published, worst lateness behind schedule)."""
        out: dict[str, Any] = {"connections": self.connection_counts()}
        d = self.driver
        if isinstance(d, MarketDriver):
            out["market"] = {"events_published": d.published, "late_max_ms": round(d.late_max_ns / 1e6, 3),
                             "cpu_yields": d.yields}
            if self._replay_market is not None:
                out["capture"] = self._played()
        elif isinstance(d, ReplayDriver):
            out["replay"] = {"frames_sent": d.sent, "of": len(d.frames), "done": d.done.is_set(),
                             "cpu_yields": d.yields}
        return out

    # -- a replayed capture: what it is and how far it played ----------------------------------------------------
    def _capture_description(self) -> dict[str, Any] | None:
        """The ready file's ``capture``: the real Binance side and the modelled Hyperliquid side (None: no capture)."""
        if self.capture is None:
            return None
        return {**self.capture.describe(), "hyperliquid": describe_follower(self.config.market)}

    def _played(self) -> dict[str, Any]:
        """How far the capture played: real frames served, the receive stamps of the first and the last, whether it
        ended, and what was read and skipped by kind."""
        d, rm, info = self.driver, self._replay_market, self.capture
        assert isinstance(d, MarketDriver) and rm is not None and info is not None
        return {"frames_served": d.real_served, "first_recv_ns": info.first_recv_ns,
                "last_recv_ns": d.real_recv_ns or None, "started_ns": d.started_ns or None,
                "finished": d.finished.is_set(), "counts": dict(sorted(rm.frames.counts.items()))}

    def _write_replay_record(self, folder: Path) -> None:
        """``venue-sim.replay.json`` beside the session's metrics: what was replayed and how far (a session reads it
        for its report)."""
        doc = {"capture": self._capture_description(), "played": self._played()}
        path = folder / "venue-sim.replay.json"
        tmp = path.with_name(path.name + ".tmp")
        try:
            tmp.write_text(json.dumps(doc, indent=1) + "\n")
            os.replace(tmp, path)
        except OSError as exc:
            log.warning("could not write %s: %s", path, exc)

    async def __aenter__(self) -> VenueEmulator:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


class EmulatorThread:
    """Runs a VenueEmulator on its own event loop in a daemon thread: ``info = t.start(); ...; t.stop()``."""

    def __init__(self, config: EmulatorConfig) -> None:
        config.validate()
        self.config = config
        self.emulator: VenueEmulator | None = None
        self.info: dict[str, Any] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name="caerus-venue-sim", daemon=True)

    def _main(self) -> None:
        asyncio.run(self._amain())

    async def _amain(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        try:
            self.emulator = VenueEmulator(self.config)
            self.info = await self.emulator.start()
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            await self.emulator.stop()

    def start(self, timeout: float = 30.0) -> dict[str, Any]:
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError(f"venue emulator did not start within {timeout} s")
        if self._error is not None:
            raise RuntimeError(f"venue emulator failed to start: {self._error}") from self._error
        return self.info

    def stop(self, timeout: float = 10.0) -> None:
        if self._loop is not None and self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout)

    def __enter__(self) -> EmulatorThread:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
