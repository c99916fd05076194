"""Many instruments through a real feed process over TLS: one connection per venue, and a pool that rotates.

The emulator emulates several perpetuals; `caerus feed --symbols` carries them all. Checked on both WebSocket
clients: every instrument's books arrive validated, each instrument's own order holds, and a pool of connections
(`--connections 2`) splits the instruments and rotates each connection make-before-break without publishing an
update twice or leaving an instrument's book gapped (no STALE record, no reconnect).
"""

from __future__ import annotations

import pytest

from caerus.records.book import BOOK_CONN, BOOK_FLAGS, BOOK_SEQ, BOOK_SYMBOL, BOOK_T_EXCHANGE
from caerus.records.event import EVENT_AUX
from caerus.wire import BookFlags, EventKind
from tests.integration.feed.test_feed_scenarios import Feed, client, feed_factory  # noqa: F401 - fixtures

pytestmark = pytest.mark.integration

COINS = ("BTC", "ETH", "SOL", "XRP")
SYMBOLS = {"binance": tuple(f"{c}USDT" for c in COINS), "hyperliquid": COINS}
EMULATED = ["--symbols", ",".join(COINS), "--binance-rate", "40"]


def per_instrument(records: list[tuple]) -> dict[int, list[tuple]]:
    out: dict[int, list[tuple]] = {}
    for r in records:
        if r[BOOK_FLAGS] & BookFlags.VALID:
            out.setdefault(r[BOOK_SYMBOL], []).append(r)
    return out


def check_each_instrument_in_order(records: list[tuple]) -> None:
    for sym, recs in per_instrument(records).items():
        seqs = [r[BOOK_SEQ] for r in recs]
        assert seqs == sorted(set(seqs)), f"instrument {sym}: published out of order or twice"
        times = [r[BOOK_T_EXCHANGE] for r in recs]
        assert times == sorted(times), f"instrument {sym}: exchange time went backwards"


@pytest.mark.parametrize("venue", ["binance", "hyperliquid"])
def test_every_instrument_arrives_validated_on_one_connection(venue_sim_factory, feed_factory, venue: str) -> None:  # noqa: F811
    sim = venue_sim_factory(args=EMULATED)
    feed = feed_factory(venue, sim, "--symbols", ",".join(SYMBOLS[venue]))
    feed.wait_for("books of every instrument", lambda f: all(
        len(per_instrument(f.records).get(i, [])) >= 10 for i in range(len(COINS))))
    assert feed.stop() == 0
    c = feed.counters()
    assert c["connects"] == 1 and c["instruments"] == len(COINS) and c["reject.wrong_instrument"] == 0, c
    assert all(c[f"inst.{i}.books"] >= 10 for i in range(len(COINS))), c
    check_each_instrument_in_order(feed.records)


def test_a_pool_splits_the_instruments_and_rotates_without_gap_or_repeat(venue_sim_factory, feed_factory) -> None:  # noqa: F811
    sim = venue_sim_factory(args=EMULATED)
    feed = feed_factory("binance", sim, "--symbols", ",".join(SYMBOLS["binance"]), "--connections", "2",
                        "--rotate-after", "1.2", "--rotation-timeout", "1.0")

    def conns_of(f: Feed, sym: int) -> set[int]:
        return {r[BOOK_CONN] for r in per_instrument(f.records).get(sym, [])}

    feed.wait_for("two rotations of each connection", lambda f: len(conns_of(f, 0)) >= 3 and len(conns_of(f, 2)) >= 3)
    assert feed.stop() == 0
    c = feed.counters()
    assert c["reconnects"] == 0 and c["fail.stale"] == 0 and c["rejects"] == 0, c
    stale = [r for r in feed.records if r[BOOK_FLAGS] & BookFlags.STALE]
    assert len(stale) == len(COINS), "an instrument's book was gapped (only the shutdown's STALE records expected)"
    check_each_instrument_in_order(feed.records)
    # lanes: BTC, ETH on one connection, SOL, XRP on the other; each lane's connection ids (odd, even) move on with
    # its own rotations. (An instrument may stop before its first record on its lane's newest connection: the
    # switch happens at whichever of the lane's instruments catches up first, so the sets need not be equal.)
    conns = {sym: conns_of(feed, sym) for sym in range(len(COINS))}
    assert {c % 2 for c in conns[0] | conns[1]} == {1} and {c % 2 for c in conns[2] | conns[3]} == {0}, conns
    assert len(conns[1]) >= 2 and len(conns[3]) >= 2, conns  # both instruments of each lane rotated


@pytest.mark.parametrize("venue", ["binance", "hyperliquid"])
def test_a_silent_instrument_on_a_live_connection_is_caught(venue_sim_factory, feed_factory, venue: str) -> None:  # noqa: F811
    """The emulator stops one instrument's frames while the connection and the others flow: the connection's
    watchdog cannot see it; the per-instrument one marks that instrument STALE (readers stop trading it), names
    it in an event, subscribes to it again once, and the others stay tradeable."""
    sim = venue_sim_factory(scenario="silent-instrument", args=[*EMULATED, "--scenario-after", "2"])
    feed = feed_factory(venue, sim, "--symbols", ",".join(SYMBOLS[venue]), "--instrument-stale-after", "1.5")
    silent = len(COINS) - 1
    feed.wait_for("the silent instrument caught", lambda f: f.counters()["instrument_stale"] >= 1)
    n_before = {i: len(rs) for i, rs in per_instrument(feed.records).items()}
    feed.wait_for("the others still flowing", lambda f: all(
        len(per_instrument(f.records).get(i, [])) > n_before.get(i, 0) + 5 for i in range(silent)))
    assert feed.stop() == 0
    c = feed.counters()
    # asked for once more on the same connection (the venue answers; the emulator keeps it quiet), which survives
    assert c["instrument_stale"] == 1 and c["resubscribes"] == 1, c
    assert c["stale"] == 0 and c["reconnects"] == 0 and c["sub_errors"] == 0, c
    stale = [r for r in feed.records if r[BOOK_FLAGS] & BookFlags.STALE]
    assert stale[0][BOOK_SYMBOL] == silent  # the first STALE record: the silent one, before the shutdown's
    ev = [e for e in feed.event_records if e[1] == EventKind.STALE]
    assert [e[EVENT_AUX] for e in ev] == [silent]
    last_valid = max(i for i, r in enumerate(feed.records)
                     if r[BOOK_SYMBOL] == silent and r[BOOK_FLAGS] & BookFlags.VALID)
    assert feed.records.index(stale[0]) > last_valid  # nothing of it after the STALE mark
