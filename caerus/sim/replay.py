"""Recorded frames: the file format, a recorder that writes it, and a player that sends it at original pacing.

Format (JSON Lines, one frame per line, agreed with the capture side):
    {"venue": "binance" | "hyperliquid", "t_ns": <int, ns offset from the recording start>, "frame": "<raw text>"}
Lines must be in non-decreasing ``t_ns`` order. ``frame`` is the text frame exactly as received.

The player sends each frame to the subscribers of that venue whose subscription matches the frame: Binance
frames by their event type (``e``: bookTicker, depthUpdate, aggTrade, markPriceUpdate, kline), wrapped in the
combined-stream envelope for combined subscribers; Hyperliquid frames by channel and coin; frames that are not
JSON (the greeting) go to every subscriber of the venue. Replay starts once every venue in the file has a
subscriber (or ``wait_s`` after the first one) and sends nothing after the last frame. With ``retime`` the
exchange timestamps (Binance ``E``/``T``, Hyperliquid ``time``) are rewritten to the scheduled send time, so
information age measures the emulator and the feed rather than the age of the recording.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from caerus.sim import frames
from caerus.sim.hub import Subscriber, Topics
from caerus.sim.scenarios import VENUES

log = logging.getLogger("caerus.sim")

_BINANCE_KINDS = {"bookTicker": "bookTicker", "depthUpdate": "depth", "aggTrade": "aggTrade",
                  "markPriceUpdate": "markPrice", "kline": "kline"}


@dataclass(frozen=True, slots=True)
class RecordedFrame:
    venue: str
    t_ns: int
    frame: str


def read_frames(path: str | Path) -> list[RecordedFrame]:
    """Load and validate a frames file; ValueError names the file, line and problem."""
    out: list[RecordedFrame] = []
    last = -1
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                obj = json.loads(line)
            except ValueError as exc:
                raise ValueError(f"{where}: not JSON ({exc})") from None
            if not isinstance(obj, dict):
                raise ValueError(f"{where}: expected an object with venue, t_ns, frame")
            venue, t_ns, frame = obj.get("venue"), obj.get("t_ns"), obj.get("frame")
            if venue not in VENUES:
                raise ValueError(f"{where}: venue must be one of {', '.join(VENUES)}, got {venue!r}")
            if not isinstance(t_ns, int) or isinstance(t_ns, bool) or t_ns < 0:
                raise ValueError(f"{where}: t_ns must be a non-negative integer, got {t_ns!r}")
            if t_ns < last:
                raise ValueError(f"{where}: t_ns {t_ns} goes backwards (previous {last})")
            if not isinstance(frame, str):
                raise ValueError(f"{where}: frame must be a string, got {type(frame).__name__}")
            last = t_ns
            out.append(RecordedFrame(venue, t_ns, frame))
    if not out:
        raise ValueError(f"{path}: no frames")
    return out


class FrameRecorder:
    """Writes the frames format. ``t_ns`` defaults to time since the first record (monotonic clock)."""

    def __init__(self, path: str | Path) -> None:
        self._f: IO[str] = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self._t0: int | None = None
        self.count = 0

    def record(self, venue: str, frame: str | bytes, t_ns: int | None = None) -> None:
        if venue not in VENUES:
            raise ValueError(f"venue must be one of {', '.join(VENUES)}, got {venue!r}")
        if t_ns is None:
            now = time.monotonic_ns()
            if self._t0 is None:
                self._t0 = now
            t_ns = now - self._t0
        text = frame if isinstance(frame, str) else frame.decode("utf-8")
        self._f.write(json.dumps({"venue": venue, "t_ns": int(t_ns), "frame": text}, separators=(",", ":")))
        self._f.write("\n")
        self.count += 1

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> FrameRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_frames(path: str | Path, items: Iterable[tuple[str, int, str]]) -> int:
    """Write (venue, t_ns, frame) tuples; returns how many."""
    with FrameRecorder(path) as rec:
        for venue, t_ns, frame in items:
            rec.record(venue, frame, t_ns)
        return rec.count


@dataclass(frozen=True, slots=True)
class _Prepared:
    t_ns: int
    venue: str
    prefix: str | None  # topic-key prefix of matching subscriptions; None: every subscriber of the venue
    raw: str  # text for raw subscribers (Binance payload without the combined wrapper)
    parsed: Any  # decoded payload for retiming (None when not JSON)


def _prepare(fr: RecordedFrame) -> _Prepared:
    try:
        obj = json.loads(fr.frame)
    except ValueError:
        return _Prepared(fr.t_ns, fr.venue, None, fr.frame, None)
    if fr.venue == "binance":
        data = obj.get("data") if isinstance(obj, dict) and "stream" in obj else obj
        raw = json.dumps(data, separators=(",", ":")) if data is not obj else fr.frame
        if isinstance(data, dict) and data.get("e") in _BINANCE_KINDS and isinstance(data.get("s"), str):
            return _Prepared(fr.t_ns, fr.venue, f"binance:{data['s'].lower()}@{_BINANCE_KINDS[data['e']]}",
                             raw, data)
        return _Prepared(fr.t_ns, fr.venue, None, raw, data)
    if isinstance(obj, dict) and isinstance(obj.get("data"), dict):
        channel, coin = obj.get("channel"), obj["data"].get("coin")
        if channel and coin:
            return _Prepared(fr.t_ns, fr.venue, f"hyperliquid:{channel}:{coin}", fr.frame, obj)
    return _Prepared(fr.t_ns, fr.venue, None, fr.frame, obj)


class ReplayDriver:
    """Plays a frames file to the subscribers in ``topics``."""

    def __init__(self, recorded: list[RecordedFrame], topics: Topics, *, retime: bool = False,
                 wait_s: float = 5.0) -> None:
        self.frames = [_prepare(f) for f in recorded]
        self.topics = topics
        self.retime = retime
        self.wait_s = wait_s
        self.sent = 0
        self.done = asyncio.Event()
        self.started = asyncio.Event()
        self._venues = {f.venue for f in self.frames}
        self._seen: set[str] = set()
        self._first = asyncio.Event()
        self._all = asyncio.Event()
        topics.on_subscribe = self._on_subscribe

    def _on_subscribe(self, key: str, sub: Subscriber) -> None:
        self._seen.add(sub.venue)
        self._first.set()
        if self._venues <= self._seen:
            self._all.set()

    def _targets(self, p: _Prepared) -> list[tuple[Subscriber, str | None]]:
        keys = self.topics.keys_with_prefix(p.prefix if p.prefix is not None else f"{p.venue}:")
        seen: dict[Subscriber, str | None] = {}
        for key in keys:
            for sub, stream in self.topics.subscribers(key).items():
                seen.setdefault(sub, stream)
        return list(seen.items())

    def _text(self, p: _Prepared, epoch_ns: int) -> str:
        if not self.retime or not isinstance(p.parsed, dict):
            return p.raw
        ms = frames.ms(epoch_ns, p.t_ns)
        if p.venue == "binance":
            data = dict(p.parsed)
            if "E" in data:
                data["E"] = ms
            if "T" in data and data.get("e") != "markPriceUpdate":
                data["T"] = ms - 1
            return json.dumps(data, separators=(",", ":"))
        obj = p.parsed
        if isinstance(obj.get("data"), dict) and "time" in obj["data"]:
            obj = {**obj, "data": {**obj["data"], "time": ms}}
        return json.dumps(obj, separators=(",", ":"))

    async def run(self) -> None:
        await self._first.wait()
        try:
            await asyncio.wait_for(self._all.wait(), self.wait_s)
        except TimeoutError:
            log.warning("replay: starting without subscribers for %s", ", ".join(sorted(self._venues - self._seen)))
        loop = asyncio.get_running_loop()
        epoch_ns = time.time_ns() - self.frames[0].t_ns
        t0 = loop.time() - self.frames[0].t_ns / 1e9
        self.started.set()
        log.info("replay: %d frames over %.1f s", len(self.frames), (self.frames[-1].t_ns - self.frames[0].t_ns) / 1e9)
        for p in self.frames:
            delay = t0 + p.t_ns / 1e9 - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            text = self._text(p, epoch_ns)
            for sub, stream in self._targets(p):
                sub.send(text if stream is None else frames.binance_combined(stream, text))
            self.sent += 1
        log.info("replay: finished after %d frames", self.sent)
        self.done.set()
