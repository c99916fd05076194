"""Recorded frames: a player that sends a frames file (caerus.recording) at its original pacing.

Format (JSON Lines, one frame per line, shared with the capture side through caerus.recording):
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
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from caerus import recording
from caerus.recording import RecordedFrame
from caerus.sim.core import frames
from caerus.sim.core.hub import Subscriber, Topics
from caerus.sim.core.scenarios import VENUES

log = logging.getLogger("caerus.sim")

_BINANCE_KINDS = {"bookTicker": "bookTicker", "depthUpdate": "depth", "aggTrade": "aggTrade",
                  "markPriceUpdate": "markPrice", "kline": "kline"}


def read_frames(path: str | Path) -> list[RecordedFrame]:
    """Load and validate a frames file for the venues this emulator serves (ValueError names line and problem)."""
    return recording.read_frames(path, venues=VENUES)


@dataclass(frozen=True, slots=True)
class _Prepared:
    t_ns: int
    venue: str
    prefix: str | None  # topic-key prefix of matching subscriptions; None: every subscriber of the venue
    raw: str  # text for raw subscribers (Binance payload without the combined wrapper)
    parsed: Any  # decoded payload for retiming (None when not JSON)


def _prepare_binance(fr: RecordedFrame, obj: Any) -> _Prepared:
    data = obj.get("data") if isinstance(obj, dict) and "stream" in obj else obj
    raw = json.dumps(data, separators=(",", ":")) if data is not obj else fr.frame
    if isinstance(data, dict) and data.get("e") in _BINANCE_KINDS and isinstance(data.get("s"), str):
        return _Prepared(fr.t_ns, fr.venue, f"binance:{data['s'].lower()}@{_BINANCE_KINDS[data['e']]}", raw, data)
    return _Prepared(fr.t_ns, fr.venue, None, raw, data)


def _prepare_hyperliquid(fr: RecordedFrame, obj: Any) -> _Prepared:
    if isinstance(obj, dict) and isinstance(obj.get("data"), dict):
        channel, coin = obj.get("channel"), obj["data"].get("coin")
        if channel and coin:
            return _Prepared(fr.t_ns, fr.venue, f"hyperliquid:{channel}:{coin}", fr.frame, obj)
    return _Prepared(fr.t_ns, fr.venue, None, fr.frame, obj)


def _retime_binance(parsed: dict[str, Any], ms: int) -> dict[str, Any]:
    data = dict(parsed)
    if "E" in data:
        data["E"] = ms
    if "T" in data and data.get("e") != "markPriceUpdate":
        data["T"] = ms - 1
    return data


def _retime_hyperliquid(parsed: dict[str, Any], ms: int) -> dict[str, Any]:
    if isinstance(parsed.get("data"), dict) and "time" in parsed["data"]:
        return {**parsed, "data": {**parsed["data"], "time": ms}}
    return parsed


#: venue -> (topic matching of a recorded frame, rewriting its exchange time to the send time)
_VENUE_RULES = {
    "binance": (_prepare_binance, _retime_binance),
    "hyperliquid": (_prepare_hyperliquid, _retime_hyperliquid),
}


def _prepare(fr: RecordedFrame) -> _Prepared:
    try:
        obj = json.loads(fr.frame)
    except ValueError:
        return _Prepared(fr.t_ns, fr.venue, None, fr.frame, None)
    return _VENUE_RULES[fr.venue][0](fr, obj)


class ReplayDriver:
    """Plays a frames file to the subscribers in ``topics``."""

    def __init__(self, recorded: list[RecordedFrame], topics: Topics, *, retime: bool = False,
                 wait_s: float = 5.0, yield_after_top: bool = False) -> None:
        self.frames = [_prepare(f) for f in recorded]
        # give the CPU up after each top-of-book frame sent, as caerus.sim.core.driver.MarketDriver does (its _top_sent)
        self.yield_after_top = yield_after_top
        self.yields = 0
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
        return json.dumps(_VENUE_RULES[p.venue][1](p.parsed, ms), separators=(",", ":"))

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
            if self.yield_after_top and p.raw.startswith(frames.TOP_OF_BOOK_PREFIXES):
                self.yields += 1
                os.sched_yield()
        log.info("replay: finished after %d frames", self.sent)
        self.done.set()
