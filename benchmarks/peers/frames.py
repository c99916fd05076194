"""The input every feed-decode comparison reads: frames recorded from the venue emulator's own output.

``record`` starts ``caerus venue-sim`` (a subprocess on loopback TLS), subscribes the way the peers do (Binance's
combined stream ``/public/stream?streams=btcusdt@bookTicker``, Hyperliquid ``bbo`` for BTC) and writes the frames as
they arrived in caerus.recording's frames format. Each tool then reads what its own subscription gets on the wire:
cryptofeed and nautilus_trader subscribe combined streams (the ``{"stream":..,"data":..}`` wrapper), Caerus's feed
subscribes raw streams, whose frame is the wrapper's ``data`` verbatim (:func:`unwrap`).
"""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from caerus.recording import FrameRecorder, read_frames

BINANCE_STREAMS = ("btcusdt@bookTicker", "btcusdt@depth5@100ms")
HL_SUBSCRIBE = '{"method":"subscribe","subscription":{"type":"bbo","coin":"BTC"}}'


@dataclass(frozen=True)
class Frames:
    """One recording: Binance combined-stream bookTicker and depth5 frames and Hyperliquid bbo frames, as received."""

    binance_combined: list[bytes]
    hyperliquid: list[bytes]
    binance_depth_combined: list[bytes]

    @property
    def binance_raw(self) -> list[bytes]:
        return [unwrap(f) for f in self.binance_combined]

    @property
    def binance_depth_raw(self) -> list[bytes]:
        return [unwrap(f) for f in self.binance_depth_combined]


def unwrap(combined: bytes) -> bytes:
    """The raw-stream frame inside a combined-stream frame (the bytes of its ``data``, verbatim)."""
    head = b'"data":'
    i = combined.find(head)
    if not combined.startswith(b'{"stream":') or i < 0 or not combined.endswith(b"}"):
        raise ValueError(f"not a Binance combined-stream frame: {combined[:80]!r}")
    return combined[i + len(head):-1]


def load(path: Path) -> Frames:
    """A frames file (caerus.recording format) split by venue and stream; data frames only (no acks, no
    subscription echo). Depth5 frames are optional (older recordings have none)."""
    bt: list[bytes] = []
    hl: list[bytes] = []
    depth: list[bytes] = []
    for f in read_frames(path, venues=("binance", "hyperliquid")):
        raw = f.frame.encode()
        if f.venue == "binance" and b'"e":"bookTicker"' in raw:
            bt.append(raw)
        elif f.venue == "binance" and raw.startswith(b'{"stream":"btcusdt@depth5'):
            depth.append(raw)
        elif f.venue == "hyperliquid" and raw.startswith(b'{"channel":"bbo"'):
            hl.append(raw)
    if not bt or not hl:
        raise ValueError(f"{path}: needs Binance bookTicker and Hyperliquid bbo frames, has {len(bt)} and {len(hl)}")
    return Frames(bt, hl, depth)


def record(path: Path, n: int, timeout_s: float = 120.0, seed: int = 1, n_depth: int = 0) -> Frames:
    """Record at least ``n`` bookTicker and bbo frames and ``n_depth`` depth5 frames (10 a second: the venue's
    100 ms stream) from a fresh emulator into ``path``; every wait bounded."""
    from websockets.sync.client import connect

    with tempfile.TemporaryDirectory(prefix="caerus-peers-sim-") as tmp:
        ready = Path(tmp) / "ready.json"
        # fast books so a recording takes seconds: many Binance quotes, short Hyperliquid blocks
        proc = subprocess.Popen([sys.executable, "-m", "caerus", "venue-sim", "--cert-dir", tmp, "--ready-file",
                                 str(ready), "--seed", str(seed), "--binance-rate", "2000", "--hl-block-ms", "20",
                                 "--jumps-per-min", "600", "--log-level", "WARNING"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
        try:
            deadline = time.monotonic() + 60
            while not ready.exists():
                if proc.poll() is not None or time.monotonic() > deadline:
                    err = proc.stderr.read().decode()[-800:] if proc.stderr and proc.poll() is not None else ""
                    raise RuntimeError(f"peers: the venue emulator did not start within 60 s {err}")
                time.sleep(0.05)
            info = json.loads(ready.read_text())
            ctx = ssl.create_default_context(cafile=info["ca_file"])
            rec = FrameRecorder(path)
            counts = {"binance": 0, "hyperliquid": 0, "depth": 0}
            want = {"binance": n, "hyperliquid": n, "depth": n_depth}
            end = time.monotonic() + timeout_s
            streams = "/".join(BINANCE_STREAMS if n_depth else BINANCE_STREAMS[:1])
            # Hyperliquid first: it sends nothing before its subscription, while the Binance URL streams ~2000
            # frames/s from the moment it opens. The other way round, that stream, not yet read here, competed with
            # Hyperliquid's handshake, which once took over its 10 s with the other CPU busy (a fresh-clone suite).
            with connect(f"{info['hyperliquid_url']}/ws", ssl=ctx, open_timeout=30, max_size=None) as hws, \
                    connect(f"{info['binance_url']}/public/stream?streams={streams}", ssl=ctx,
                            open_timeout=30, max_size=None) as bws:
                hws.send(HL_SUBSCRIBE)
                while any(counts[k] < want[k] for k in counts):
                    if time.monotonic() > end:
                        raise RuntimeError(f"peers: recorded only {counts} frames in {timeout_s:.0f} s")
                    # both connections are read all along (frames beyond a stream's target are dropped): an unread
                    # connection stops reading its socket and its keepalive pong, and the client closes it
                    idle = True
                    for venue, ws in (("binance", bws), ("hyperliquid", hws)):
                        while True:  # drain: Binance sends ~2000 frames/s here
                            try:
                                msg = ws.recv(timeout=0)
                            except TimeoutError:
                                break
                            idle = False
                            kind = ("depth" if isinstance(msg, str) and msg.startswith('{"stream":"btcusdt@depth')
                                    else venue)
                            if counts[kind] < want[kind]:
                                rec.record(venue, msg)
                                counts[kind] += 1
                    if idle:
                        time.sleep(0.001)
            rec.close()
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
    return load(path)
