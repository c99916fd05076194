"""WebSocket receive over loopback TLS: from the server's send to the client's callback, websockets' asyncio client
and Caerus's busy client against picows, each at 100 us and 1 ms message spacing, in interleaved rounds.

The server, its stamping (``time.time_ns()`` just before each send, in the message, and right after it, into a shared
stamp file: benchmarks.feed_wire) and the two Caerus-side clients are benchmarks.feed_wire's (``start_server``,
``one_round``). Two measures per message: send->callback (the server's framing, encryption and send included) and
sent->callback (from its send syscall's return: the receive side alone). picows is used as its docs show: a
``WSListener`` subclass whose ``on_ws_frame`` takes ``frame.get_payload_as_bytes()``, connected with ``ws_connect``.
Every client runs on the fleet's event loop policy (``hybrid``: caerus.net.eventloop's busy-polling loop that
yields after a run of empty polls), pinned to the last CPU with the server on the first (the dedicated core this
2-vCPU machine has for a feed); picows also runs on uvloop (``uvloop.run``), the loop its docs and benchmarks use,
so its row on the fleet's loop stands beside the one on its own.

benchmarks/protocol's rules: every client runs the same number of interleaved rounds (the order rotated each
round), each a fresh connection whose first messages (``feed_wire.warm_up``) are dropped; p50/p99 over all rounds.

Not measured: picows' frame parser driven by our own ``recvmsg`` (keeping the kernel receive stamp): its parser is
its asyncio protocol (``picows.picows.WSProtocol``, fed through ``get_buffer``/``buffer_updated``), bound to its
transport, so no Python entry parses our plaintext. The busy client instead has its own frame splitter for the
frames venues send (``caerus.net.wsframes``; ``benchmarks/ws_parse``: 6.4x less per read than ``websockets``'
sans-I/O protocol), so its row is the busy client's own.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import feed_wire
from benchmarks.peers.table import Row, rows_for
from caerus.plan import available_cpus

POLICY = "hybrid"
NOT_BUILT = ("picows' parser is its asyncio protocol (WSProtocol), bound to its transport; the busy "
             "client reads its recvmsg plaintext with its own frame splitter instead (caerus.net.wsframes; "
             "benchmarks/ws_parse), so the caerus busy client row is that path")
SPACINGS_US = (100, 1000)


def picows_round(server: feed_wire.WireServer, n: int, policy: str = POLICY) -> feed_wire.Round:
    """Read ``n`` messages (after a warm-up) with picows: send -> on_ws_frame and sent -> on_ws_frame, ns;
    ``policy``: a caerus.net.eventloop wait policy, or ``uvloop``."""
    from picows import WSFrame, WSListener, WSMsgType, WSTransport, ws_connect

    from caerus.net import eventloop

    url, ca_file = server.url, server.ca_file
    rec = feed_wire.Recorder(n)
    tns = time.time_ns

    async def main() -> None:
        done = asyncio.get_running_loop().create_future()

        class Listener(WSListener):  # type: ignore[misc]
            def on_ws_frame(self, transport: WSTransport, frame: WSFrame) -> None:
                t_recv = tns()
                if frame.msg_type != WSMsgType.TEXT:
                    return
                i = rec.take(frame.get_payload_as_bytes(), t_recv)
                if i + 1 == n and not done.done():
                    done.set_result(None)

        ctx = ssl.create_default_context(cafile=str(ca_file))
        transport, _ = await ws_connect(Listener, url, ssl_context=ctx, websocket_handshake_timeout=10)
        try:
            await asyncio.wait_for(asyncio.shield(done), timeout=60 + n / 500)
        finally:
            transport.disconnect()
            await asyncio.wait_for(transport.wait_disconnected(), 10)

    server.stamps.reset()
    if policy == "uvloop":
        import uvloop

        uvloop.run(main())
    else:
        eventloop.run(main(), policy)
    return rec.finish(server.stamps, np.zeros(0, dtype=np.int64))


def compare(quick: bool, settings: dict[str, object]) -> list[Row]:
    from importlib.metadata import version

    from benchmarks import protocol

    n = 1000 if quick else 5000
    rounds = 2 if quick else 4
    cpus = available_cpus()
    names = {"busy": "caerus busy client", "asyncio": f"websockets {version('websockets')} asyncio",
             "picows": f"picows {version('picows')}", "picows_uv": f"picows {version('picows')} on uvloop "
                                                                   f"{version('uvloop')}"}
    rows: list[Row] = []
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpus[-1]})
    try:
        for spacing in SPACINGS_US:
            with tempfile.TemporaryDirectory(prefix="caerus-peers-ws-") as tmp:
                server = feed_wire.start_server(Path(tmp), spacing, n + feed_wire.warm_up(n))
                try:
                    def one(client: str, server: feed_wire.WireServer = server) -> feed_wire.Round:
                        if client == "picows":
                            return picows_round(server, n)
                        if client == "picows_uv":
                            return picows_round(server, n, "uvloop")
                        return feed_wire.one_round(client, POLICY, server, n)

                    warm = f"inside each round: a fresh connection, its first {feed_wire.warm_up(n)} messages dropped"
                    timed = protocol.interleaved([protocol.Contender(names[c], lambda _, c=c: one(c), None, warm)
                                                  for c in names], rounds)
                finally:
                    server.stop()
            spacing_txt = "100 us" if spacing == 100 else "1 ms"
            settings.setdefault("protocol", {})[f"WebSocket receive, {spacing_txt}"] = \
                protocol.as_json(timed)  # type: ignore[index]
            by = {t.name: t for t in timed}
            for measure, label in (("send", f"WebSocket receive, send->callback, {spacing_txt} spacing"),
                                   ("sent", f"WebSocket receive side alone, sent->callback, {spacing_txt} spacing")):
                samples = {names[k]: np.concatenate([getattr(r, measure) for r in by[names[k]].results])
                           for k in names}
                rows += rows_for(label, samples, names["busy"],
                                 {names["busy"]: f"wait policy {POLICY} for every client but picows on uvloop",
                                  names["picows"]: f"on the fleet's loop ({POLICY})",
                                  names["picows_uv"]: "on uvloop, the loop its docs and benchmarks use"},
                                 {"picows parser + caerus recvmsg": NOT_BUILT})
    finally:
        os.sched_setaffinity(0, before)
    settings["ws"] = {"messages_per_round": n, "rounds": rounds, "policy": POLICY, "client_cpu": cpus[-1],
                      "server_cpu": cpus[0], "spacings_us": list(SPACINGS_US)}
    return rows
