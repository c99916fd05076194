"""Binance REST tape queries (``klines``, ``trades``, ``aggTrades``): one prologue, one rule for bad parameters
(issue 33 item 5): a ``limit`` out of range or a non-digit ``startTime`` / ``endTime`` / ``fromId`` is the venue's
-1100 naming the parameter, on every query that takes it."""

from __future__ import annotations

import email.message
from typing import Any

import pytest

from caerus.sim.binance.rest import BinanceRest
from caerus.sim.core import frames
from caerus.sim.core.http import HttpRequest
from caerus.sim.core.market import BinanceQuote
from caerus.sim.core.tape import MINUTE_NS, Tape


class _Driver:
    """The part of the market driver the tape queries read: one BTC quote and a tape with three trades."""

    def __init__(self) -> None:
        self.epoch_ns = 0
        self.quotes = {0: BinanceQuote(0, 1, 100.0, 1.0, 100.1, 1.0)}
        self.tape = Tape(first_id=1)
        for k, (bid, ask) in enumerate(((99.9, 100.1), (99.9, 100.2), (99.8, 100.2))):
            self.tape.on_top(MINUTE_NS + k, (100.0, 1.0), (100.1, 1.0), bid, ask)

    def quote_of(self, sym: str) -> BinanceQuote | None:
        return self.quotes[0] if sym == "BTCUSDT" else None

    def binance_tape_of(self, sym: str, read: bool = True) -> Tape | None:
        return self.tape if sym == "BTCUSDT" else None

    def format_of(self, index: int) -> frames.InstrumentFormat:
        return frames.BTC_FORMAT


def _get(rest: BinanceRest, path: str, **query: str) -> tuple[int, Any]:
    reply = rest(HttpRequest("GET", "/fapi/v1" + path, dict(query), email.message.Message(), b""))  # type: ignore[arg-type]
    return reply.status, reply.body


@pytest.mark.parametrize("path,extra", [("/klines", {"interval": "1m"}), ("/trades", {}), ("/aggTrades", {})])
def test_each_tape_query_answers_and_refuses_a_bad_limit_alike(path: str, extra: dict[str, str]) -> None:
    drv = _Driver()
    rest = BinanceRest(lambda: drv)  # type: ignore[arg-type,return-value]
    status, body = _get(rest, path, symbol="BTCUSDT", **extra)
    assert status == 200 and len(body) == (1 if path == "/klines" else 3)
    for bad in ("0", "x", "5000"):
        status, body = _get(rest, path, symbol="BTCUSDT", limit=bad, **extra)
        assert status == 400 and body["code"] == -1100 and "'limit'" in body["msg"], (bad, body)
    status, body = _get(rest, path, symbol="ETHUSDT", **extra)  # listed, not emulated here
    assert status == 400 and body["code"] == -1121


@pytest.mark.parametrize("path,extra", [("/klines", {"interval": "1m"}), ("/aggTrades", {})])
@pytest.mark.parametrize("name", ["startTime", "endTime"])
def test_a_non_digit_time_bound_is_refused_naming_it(path: str, extra: dict[str, str], name: str) -> None:
    """klines used to ignore a non-digit bound silently (and answer unbounded) while aggTrades refused it."""
    drv = _Driver()
    rest = BinanceRest(lambda: drv)  # type: ignore[arg-type,return-value]
    status, body = _get(rest, path, symbol="BTCUSDT", **{name: "12:00"}, **extra)
    assert status == 400 and body == {
        "code": -1100, "msg": f"Illegal characters found in parameter '{name}'; legal range is '^[0-9]+$'."}
    status, body = _get(rest, path, symbol="BTCUSDT", **{name: str(MINUTE_NS // 1_000_000)}, **extra)
    assert status == 200  # digits pass


def test_klines_time_bounds_select_bars() -> None:
    drv = _Driver()
    rest = BinanceRest(lambda: drv)  # type: ignore[arg-type,return-value]
    start_ms = MINUTE_NS // 1_000_000
    status, body = _get(rest, "/klines", symbol="BTCUSDT", interval="1m", startTime=str(start_ms + 60_000))
    assert (status, body) == (200, [])  # after the only bar
    status, body = _get(rest, "/klines", symbol="BTCUSDT", interval="1m", endTime=str(start_ms))
    assert status == 200 and [row[0] for row in body] == [start_ms] and body[0][8] == 3
