"""The emulator's ``yield_after_top``: one sched_yield right after each top-of-book frame is handed to the sockets
(before the quote's own bookkeeping and its other frames), none after any other frame, none when it is off."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from caerus.recording import RecordedFrame
from caerus.sim.core import driver as driver_module
from caerus.sim.core import replay as replay_module
from caerus.sim.core.driver import HL_BBO, MarketDriver, book_ticker_topic
from caerus.sim.core.frames import TOP_OF_BOOK_PREFIXES
from caerus.sim.core.hub import Topics
from caerus.sim.core.instrument_feeds import binance_tape_topics
from caerus.sim.core.market import BinanceQuote, MarketConfig, MarketModel
from caerus.sim.core.replay import ReplayDriver

YIELD = "<sched_yield>"


class _Sink:
    """A subscriber that writes what it is sent into the shared timeline."""

    def __init__(self, timeline: list[str], venue: str) -> None:
        self.timeline = timeline
        self.venue = venue

    def send(self, text: str, control: bool = False) -> None:
        self.timeline.append(text)


def _timeline_of_model(monkeypatch: pytest.MonkeyPatch, yield_after_top: bool, events: int = 3000) -> tuple[
        list[str], MarketDriver]:
    timeline: list[str] = []
    monkeypatch.setattr(driver_module.os, "sched_yield", lambda: timeline.append(YIELD))
    model = MarketModel(MarketConfig(seed=5))
    topics = Topics()
    drv = MarketDriver(model, topics, yield_after_top=yield_after_top)
    # subscribed after the driver exists, so the trade tape is live (its frames follow their quote's top)
    for key, venue in ((book_ticker_topic("BTCUSDT"), "binance"), (HL_BBO, "hyperliquid"),
                       (binance_tape_topics("BTCUSDT")["aggTrade"], "binance")):
        topics.add(key, _Sink(timeline, venue))  # type: ignore[arg-type]
    for ev in itertools.islice(model.events(), events):
        if isinstance(ev, BinanceQuote):
            drv._binance(ev)
        else:
            drv._hyperliquid(ev)
    return timeline, drv


def test_the_market_driver_yields_once_right_after_each_top_of_book_frame(monkeypatch: pytest.MonkeyPatch) -> None:
    timeline, drv = _timeline_of_model(monkeypatch, yield_after_top=True)
    tops = [i for i, t in enumerate(timeline) if t.startswith(TOP_OF_BOOK_PREFIXES)]
    others = [i for i, t in enumerate(timeline) if t != YIELD and not t.startswith(TOP_OF_BOOK_PREFIXES)]
    kinds = {timeline[i][:len(p)] for i in tops for p in TOP_OF_BOOK_PREFIXES if timeline[i].startswith(p)}
    assert kinds == set(TOP_OF_BOOK_PREFIXES)  # both venues' tops went out
    assert others, "no aggTrade frame: the test would not show that other frames get no yield"
    assert all(timeline[i + 1] == YIELD for i in tops)  # each top is followed at once by a yield...
    assert all(i + 1 == len(timeline) or timeline[i + 1] != YIELD for i in others)  # ...and nothing else is
    assert timeline.count(YIELD) == len(tops) == drv.yields
    # the lateness of each top was recorded before the yield, so the yield's wait is never in it
    assert drv.lateness.buffers["binance"].n + drv.lateness.buffers["hyperliquid"].n == len(tops)


def test_the_market_driver_never_yields_when_off(monkeypatch: pytest.MonkeyPatch) -> None:
    timeline, drv = _timeline_of_model(monkeypatch, yield_after_top=False)
    assert any(t.startswith(TOP_OF_BOOK_PREFIXES) for t in timeline)
    assert YIELD not in timeline and drv.yields == 0


@pytest.mark.parametrize("yield_after_top", [True, False])
def test_the_replay_driver_yields_after_top_of_book_frames_only(monkeypatch: pytest.MonkeyPatch,
                                                               yield_after_top: bool) -> None:
    timeline: list[str] = []
    monkeypatch.setattr(replay_module.os, "sched_yield", lambda: timeline.append(YIELD))
    top = '{"e":"bookTicker","u":%d,"s":"BTCUSDT","b":"100.0","B":"1","a":"100.1","A":"1","T":1,"E":1}'
    trade = ('{"e":"aggTrade","E":1,"s":"BTCUSDT","a":%d,"p":"100.0","q":"1","f":1,"l":1,"T":1,"m":false}')
    recorded = [RecordedFrame("binance", i * 1_000_000, (top if i % 2 == 0 else trade) % i) for i in range(6)]
    topics = Topics()
    drv = ReplayDriver(recorded, topics, wait_s=0.0, yield_after_top=yield_after_top)
    sink = _Sink(timeline, "binance")
    topics.add("binance:btcusdt@bookTicker", sink)  # type: ignore[arg-type]
    topics.add("binance:btcusdt@aggTrade", sink)  # type: ignore[arg-type]
    asyncio.run(asyncio.wait_for(drv.run(), 10.0))
    frames_sent = [t for t in timeline if t != YIELD]
    assert len(frames_sent) == 6 and drv.sent == 6
    if yield_after_top:
        assert [t == YIELD for t in timeline] == [False, True, False] * 3  # top, yield, trade, ...
        assert drv.yields == 3
    else:
        assert YIELD not in timeline and drv.yields == 0
