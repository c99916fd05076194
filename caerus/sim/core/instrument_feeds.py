"""Each emulated instrument's trade-derived market data: its trade tape per venue, the topics fed from it, and
whether the tape is kept.

A tape (caerus.sim.core.tape) turns the instrument's top-of-book moves into trades, one-minute bars and session
statistics; trades, klines / candles, the tickers' statistics and ``activeAssetCtx``'s day volume are all read from
it, so they never disagree with the instrument's book. BTC's tapes are always kept (what the emulator always did:
its klines and tickers cover the whole session). Every other instrument's tape is kept only while read, as its
depth book is (caerus.sim.core.driver): one of its tape-fed streams is subscribed, or a REST query read it in the last
``IDLE_S`` seconds. A tape not kept records nothing, so its history covers the times it was read; a fleet reading
only bookTicker / bbo never pays for N tapes.

Pure: no sockets; the clock is passed in.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from caerus.sim.core.tape import INTERVAL_MINUTES, Tape

IDLE_S = 10.0  # a tape is dropped this long after its last read with no subscriber (the depth books' rule)
BINANCE_FIRST_TRADE_ID = 1_000_001
HL_FIRST_TRADE_ID = 500_000_001


def binance_tape_topics(binance_symbol: str) -> dict[str, str]:
    """A symbol's tape-fed stream topics: ``trade``, ``aggTrade``, ``miniTicker``, ``ticker`` and ``kline_<i>`` for
    every interval (name -> topic key, e.g. ``kline_1m`` -> ``binance:ethusdt@kline_1m``)."""
    sym = binance_symbol.lower()
    kinds = ("trade", "aggTrade", "miniTicker", "ticker", *(f"kline_{i}" for i in INTERVAL_MINUTES))
    return {k: f"binance:{sym}@{k}" for k in kinds}


def hl_tape_topics(coin: str) -> dict[str, str]:
    """A coin's tape-fed channel topics: ``trades``, ``activeAssetCtx`` and ``candle_<i>`` for every interval."""
    out = {"trades": f"hyperliquid:trades:{coin}", "activeAssetCtx": f"hyperliquid:activeAssetCtx:{coin}"}
    out.update({f"candle_{i}": candle_topic(coin, i) for i in INTERVAL_MINUTES})
    return out


def candle_topic(coin: str, interval: str) -> str:
    """The topic carrying a coin's ``candle`` frames of one interval (``hyperliquid:candle:ETH:1m``)."""
    return f"hyperliquid:candle:{coin}:{interval}"


@dataclass
class TapeFeed:
    """One instrument's tape on one venue, the topics it feeds and whether it is kept."""

    index: int  # the instrument's index in the model
    tape: Tape
    topics: dict[str, str]  # binance_tape_topics() / hl_tape_topics()
    always: bool = False  # BTC's: kept for the whole session
    live: bool = False
    asked: float = 0.0  # clock of the last read (a subscription or a REST query)
    intervals: tuple[tuple[str, str, int], ...] = field(init=False)  # (topic, interval, minutes) of bar streams
    # Binance's klines go out on the venue's cadence, not per trade: a trade since the last push (``unpushed``),
    # and each kline topic's bar start as last pushed (a bar that ended since gets its final, closed push)
    unpushed: bool = False
    pushed_start: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.live = self.live or self.always
        self.intervals = tuple((t, name.split("_", 1)[1], INTERVAL_MINUTES[name.split("_", 1)[1]])
                               for name, t in self.topics.items() if name.startswith(("kline_", "candle_")))

    def read(self, now: float) -> Tape:
        """The tape, kept from now on for at least IDLE_S."""
        self.asked = now
        self.live = True
        return self.tape

    def maybe_idle(self, now: float, subscribed: bool) -> None:
        """Stop keeping the tape when nothing subscribed to its topics and nothing read it for IDLE_S."""
        if self.always or not self.live:
            return
        if subscribed:
            self.asked = now
        elif now - self.asked > IDLE_S:
            self.live = False


def binance_feed(index: int, binance_symbol: str, always: bool) -> TapeFeed:
    return TapeFeed(index, Tape(first_id=BINANCE_FIRST_TRADE_ID), binance_tape_topics(binance_symbol), always)


def hl_feed(index: int, coin: str, always: bool) -> TapeFeed:
    return TapeFeed(index, Tape(first_id=HL_FIRST_TRADE_ID), hl_tape_topics(coin), always)
