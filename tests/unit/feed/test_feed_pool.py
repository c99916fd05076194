"""The feed's pool from its command line: instruments split into lanes, each with its own supervisor and
endpoint, one shared bucket of new connections, interleaved connection ids, and the venues' limits refused."""

from __future__ import annotations

import argparse
import io
import json
import re
from pathlib import Path

import msgspec
import pytest

from caerus import instruments
from caerus.config import ConfigError
from caerus.feed.app import pool_supervisors
from caerus.feed.config import add_arguments, from_args
from caerus.instruments import BTC, Instrument, InstrumentSet
from caerus.venuekit.feed_outputs import FeedOutputs
from caerus.venues import registry


def _cfg(*argv: str):
    p = argparse.ArgumentParser()
    add_arguments(p, registry)
    return from_args(p.parse_args(["--segment", "p.book.x", *argv]), registry)


def test_lanes_get_their_share_one_bucket_and_their_own_connection_ids(shm_dir: Path) -> None:
    cfg = _cfg("--venue", "binance", "--symbols", "AUSDT,BUSDT,CUSDT", "--connections", "3",
               "--connect-burst", "2")
    out = FeedOutputs("binance", "p.book.b", "p.events.b", "p.stats.b", capacity=64, log_stream=io.StringIO(),
                      venue_code=1, instrument_ids=cfg.ids)
    try:
        sink = cfg.spec.feed.sink(out, symbols=cfg.symbols, ids=cfg.ids, lanes=cfg.connections)
        sups = pool_supervisors(cfg, sink, out, None)
        assert len({id(s.bucket) for s in sups}) == 1 and sups[0].bucket.burst == 3  # every lane opens at start
        streams = [json.loads(s.endpoint.subscribe[0])["params"] for s in sups]
        assert streams == [["ausdt@bookTicker"], ["busdt@bookTicker"], ["cusdt@bookTicker"]]
        first_ids = [s.conn_seq + s._conn_step for s in sups]
        assert first_ids == [1, 2, 3] and {s._conn_step for s in sups} == {3}
    finally:
        out.close()


def test_the_instrument_file_gives_each_venue_its_names_and_ids(tmp_path: Path) -> None:
    eth = Instrument(id=1, name="ETH", binance_symbol="ETHUSDT", hl_coin="ETH", tick_size=0.01, lot_size=0.001,
                     min_qty=0.001, min_notional=20.0, hl_asset=1, sz_decimals=4)
    path = instruments.save(InstrumentSet([BTC, eth]), tmp_path / "instruments.json")
    bn = _cfg("--venue", "binance", "--instruments", str(path))
    hl = _cfg("--venue", "hyperliquid", "--instruments", str(path))
    assert bn.symbols == ("BTCUSDT", "ETHUSDT") and hl.symbols == ("BTC", "ETH") and bn.ids == hl.ids == (0, 1)
    assert bn.connections == 1
    subs = [msgspec.json.decode(f) for f in hl.endpoint().subscribe]
    assert [s["subscription"]["coin"] for s in subs] == ["BTC", "ETH"]


@pytest.mark.parametrize(("argv", "needle"), [
    (("--venue", "binance", "--symbols", "AUSDT,BUSDT", "--connections", "3"), "--connections 3"),
    (("--venue", "hyperliquid", "--symbols", ",".join(f"C{i}" for i in range(9)), "--connections", "9"),
     "8 connections"),
    (("--venue", "binance", "--symbols", "AUSDT,AUSDT"), "distinct"),
    (("--venue", "binance", "--symbols", ",".join(f"S{i}USDT" for i in range(1025)), "--connections", "1"),
     "at most 1024"),
])
def test_pools_the_venue_would_refuse_stop_the_feed_before_it_starts(argv: tuple[str, ...], needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        _cfg(*argv)


def test_a_share_carries_its_ids_of_the_instrument_file_under_its_own_name(tmp_path: Path, shm_dir: Path) -> None:
    """A split venue's feed process (caerus.plan.feed_shares): --share FIRST:END picks ids of --instruments, the
    process is named for its .hlog, and it keeps per-instrument counters even for one instrument."""
    eth = Instrument(id=1, name="ETH", binance_symbol="ETHUSDT", hl_coin="ETH", tick_size=0.01, lot_size=0.001,
                     min_qty=0.001, min_notional=20.0, hl_asset=1, sz_decimals=4)
    path = instruments.save(InstrumentSet([BTC, eth]), tmp_path / "instruments.json")
    cfg = _cfg("--venue", "binance", "--instruments", str(path), "--share", "1:2", "--process-name",
               "feed-binance-2", "--metrics-dir", str(tmp_path))
    assert cfg.symbols == ("ETHUSDT",) and cfg.ids == (1,) and cfg.split and cfg.process == "feed-binance-2"
    whole = _cfg("--venue", "binance", "--instruments", str(path))
    assert whole.ids == (0, 1) and not whole.split and whole.process == "feed-binance"
    log = io.StringIO()
    out = FeedOutputs("binance", "s.book.b", "s.events.b", "s.stats.b", capacity=64, log_stream=log, venue_code=1,
                      instrument_ids=cfg.ids, per_instrument=cfg.split, process=cfg.process,
                      metrics_dir=cfg.metrics_dir)
    try:
        assert "inst.1.books" in out.counters.int_names
        out.log("start")
        assert json.loads(log.getvalue())["proc"] == "feed-binance-2"
    finally:
        out.close()
    assert (tmp_path / "feed-binance-2.hlog").is_file()


@pytest.mark.parametrize(("argv", "needle"), [
    (("--share", "1:1"), "--share '1:1' must be FIRST:END with 0 <= FIRST < END <= 2"),
    (("--share", "0:3"), "--share '0:3'"),
    (("--share", "a:b"), "--share 'a:b'"),
    (("--share", "1"), "--share '1'"),
    (("--process-name", "feed/x"), "--process-name 'feed/x'"),
])
def test_a_bad_share_or_name_is_refused_naming_it(tmp_path: Path, argv: tuple[str, ...], needle: str) -> None:
    eth = Instrument(id=1, name="ETH", binance_symbol="ETHUSDT", hl_coin="ETH", tick_size=0.01, lot_size=0.001,
                     min_qty=0.001, min_notional=20.0, hl_asset=1, sz_decimals=4)
    path = instruments.save(InstrumentSet([BTC, eth]), tmp_path / "instruments.json")
    with pytest.raises(ConfigError, match=re.escape(needle)):
        _cfg("--venue", "binance", "--instruments", str(path), *argv)


def test_a_share_needs_the_instrument_file() -> None:
    with pytest.raises(ConfigError, match="--share picks ids of --instruments"):
        _cfg("--venue", "binance", "--symbols", "AUSDT,BUSDT", "--share", "0:1")
