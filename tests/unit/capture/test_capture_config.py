"""Capture, sink and replay configuration: bad input is refused with a message naming what was wrong."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from caerus.capture import app, replay
from caerus.capture.clickhouse import check_url
from caerus.venues.binance import data as binance
from caerus.venues.hyperliquid import data as hyperliquid


def _args(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    app.add_arguments(p)
    return p.parse_args(list(argv))


@pytest.mark.parametrize(("argv", "message"), [
    (["--segment", "a.book.binance"], "give --store DIR"),
    (["--segment", "a/b", "--store", "x"], "without '/'"),
    (["--segment", "a.exec", "--segment", "a.exec", "--store", "x"], "given twice"),
    (["--segment", "a.exec", "--brokers", "host"], "--brokers 'host'"),
    (["--segment", "a.exec", "--brokers", "h:99999"], "--brokers 'h:99999'"),
    (["--segment", "a.exec", "--brokers", "h:9092", "--topic", "bad topic"], "--topic"),
    (["--segment", "a.exec", "--brokers", "h:9092", "--kafka-buffer", "0"], "--kafka-buffer 0"),
    (["--segment", "a.exec", "--brokers", "h:9092", "--kafka-rows-per-message", "0"], "--kafka-rows-per-message"),
    (["--segment", "a.exec", "--store", "x", "--wait-policy", "nap"], "--wait-policy 'nap'"),
    (["--segment", "a.exec", "--store", "x", "--cpus", "zero"], "--cpus 'zero'"),
    (["--segment", "a." + "x" * 60, "--store", "x"], "too long"),
])
def test_capture_config_errors(argv: list[str], message: str) -> None:
    with pytest.raises(app.ConfigError, match=message.replace("(", r"\(")):
        app.validate(_args(*argv))


def test_capture_config_accepts_a_session(tmp_path: Path) -> None:
    a = _args("--segment", "S.book.binance", "--segment", "S.exec", "--brokers", "127.0.0.1:9092,[::1]:9093",
              "--cpus", "0-1")
    app.validate(a)
    assert a.cpu_list == (0, 1)
    (tmp_path / "file").write_text("")
    with pytest.raises(app.ConfigError, match="not a directory"):
        app.validate(_args("--segment", "S.exec", "--store", str(tmp_path / "file")))


def test_clickhouse_url() -> None:
    assert check_url("http://127.0.0.1:8123/") == "http://127.0.0.1:8123"
    for bad in ("127.0.0.1:8123", "ftp://h:1", "http://h:1/db?x=1", "http://h:notaport"):
        with pytest.raises(ValueError, match="--clickhouse"):
            check_url(bad)


def test_replay_frames_are_what_the_feeds_decode() -> None:
    text = binance.book_frame(42, 1_796_000_000_123, "BTCUSDT", 100_000.1, 0.00001, 100_000.2, 3.0)
    m = binance.DATA_DECODER.decode(text)
    assert (m.u, m.E, m.b, m.B, m.a, m.A) == (42, 1_796_000_000_123, 100_000.1, 0.00001, 100_000.2, 3.0)
    raw = json.loads(text)
    assert raw["B"] == "0.00001" and raw["b"] == "100000.1" and raw["s"] == "BTCUSDT"  # no scientific notation
    h = hyperliquid.DECODER.decode(hyperliquid.book_frame(0, 1_796_000_000_200, "BTC", 99.5, 1.0, 100.0, 2.0))
    assert h.data.time == 1_796_000_000_200 and h.data.bbo[0].px == 99.5 and h.data.bbo[1].sz == 2.0
    with pytest.raises(ValueError, match="pace"):
        replay.load_books(None, replay.ReplayOptions(venues=(), pace="wall"))  # type: ignore[arg-type]
