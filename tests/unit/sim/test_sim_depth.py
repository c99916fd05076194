"""The emulated Binance book (caerus.sim.core.depth) and trade tape (caerus.sim.core.tape): a client applying the diff
events to a snapshot holds exactly the emulator's book, and trades happen only where the top moved through."""

from __future__ import annotations

import itertools

import pytest

from caerus.sim.core.depth import DepthBook
from caerus.sim.core.market import BinanceQuote, MarketConfig, MarketModel
from caerus.sim.core.tape import Tape


def quotes(seed: int, n: int) -> list[BinanceQuote]:
    events = MarketModel(MarketConfig(seed=seed, jumps_per_min=60.0)).events()  # many jumps: big moves
    return list(itertools.islice((e for e in events if isinstance(e, BinanceQuote)), n))


@pytest.mark.parametrize("seed", [1, 7, 42])
@pytest.mark.parametrize("batch", [1, 3, 25])
def test_a_client_applying_diffs_to_a_snapshot_holds_the_emulators_book(seed: int, batch: int) -> None:
    book = DepthBook(seed)
    qs = quotes(seed, 3000)
    for q in qs[:50]:
        book.apply(q)
    bids, asks = book.top(book.levels)
    client_b, client_a, last = dict(bids), dict(asks), book.update_id  # the REST snapshot
    for i, q in enumerate(qs[50:], 1):
        book.apply(q)
        if i % batch:
            continue
        ev = book.changes_since(last)
        assert ev is not None and ev.prev_id == last and ev.first_id == last + 1 and ev.last_id == q.update_id
        for side, changes in ((client_b, ev.bids), (client_a, ev.asks)):
            for px, qty in changes:
                if qty == 0:
                    side.pop(px, None)
                else:
                    side[px] = qty
        last = ev.last_id
        assert client_b == book.bids and client_a == book.asks
        # The top of the book is the quote, never crossed, and the book is full.
        assert max(book.bids) == q.bid and min(book.asks) == q.ask and max(book.bids) < min(book.asks)
        assert len(book.bids) == len(book.asks) == book.levels
    if last != book.update_id:
        ev = book.changes_since(last)
        assert ev is not None and ev.last_id == book.update_id
        last = ev.last_id
    assert book.changes_since(last) is None  # nothing new: no event


def test_partial_depth_is_the_top_of_the_same_book_sorted() -> None:
    book = DepthBook(3)
    for q in quotes(3, 500):
        book.apply(q)
        bids, asks = book.top(5)
        assert [p for p, _ in bids] == sorted((p for p, _ in bids), reverse=True)
        assert [p for p, _ in asks] == sorted(p for p, _ in asks)
        assert bids[0] == (q.bid, q.bid_qty) and asks[0] == (q.ask, q.ask_qty)
        assert all(qty > 0 for _, qty in bids + asks)


def test_trades_only_where_the_top_moved_through_a_level() -> None:
    tape = Tape(first_id=10)
    assert tape.on_top(1, (100.0, 2.0), (100.1, 3.0), 100.0, 100.1) is None  # nothing moved
    assert tape.on_top(2, (100.0, 2.0), (100.1, 3.0), 100.05, 100.1) is None  # the bid improved: no trade
    hit = tape.on_top(3, (100.0, 2.0), (100.1, 3.0), 99.9, 100.0)
    assert hit is not None and (hit.trade_id, hit.px, hit.qty, hit.buyer_is_maker) == (10, 100.0, 2.0, True)
    lift = tape.on_top(4, (99.9, 1.0), (100.0, 4.0), 100.0, 100.2)
    assert lift is not None and (lift.trade_id, lift.px, lift.qty, lift.buyer_is_maker) == (11, 100.0, 4.0, False)
    st = tape.stats
    assert (st.count, st.open, st.high, st.low, st.last, st.volume) == (2, 100.0, 100.0, 100.0, 100.0, 6.0)
    assert (st.first_id, st.last_id) == (10, 11)


def test_the_driver_keeps_the_book_only_while_it_is_read() -> None:
    from caerus.sim.core.driver import MarketDriver
    from caerus.sim.core.hub import Topics

    drv = MarketDriver(MarketModel(), Topics())
    qs = quotes(1, 300)
    for q in qs[:100]:
        drv._binance(q)
    assert drv.depth.update_id == 0 and not drv.depth.bids  # nobody read it: the quotes cost nothing
    book = drv.book()  # a REST snapshot or a depth subscription: rebuilt at the newest quote
    assert book.update_id == qs[99].update_id and max(book.bids) == qs[99].bid and min(book.asks) == qs[99].ask
    for q in qs[100:]:
        drv._binance(q)
    assert drv.depth.update_id == qs[-1].update_id and max(drv.depth.bids) == qs[-1].bid


def test_a_new_depth_subscriber_chains_from_the_book_at_subscription() -> None:
    """The first diff event after subscribing carries every update since (``pu`` = the id at subscription), so a
    REST snapshot taken between the subscription and that event chains with it (U <= lastUpdateId + 1, as the
    venue's docs ask): the old chain started at the newest update alone and skipped the ones in between."""
    import json

    from caerus.sim.core.driver import MarketDriver
    from caerus.sim.core.hub import Topics

    topics = Topics()
    drv = MarketDriver(MarketModel(), topics)
    sent: list[dict[str, object]] = []
    topics.publish = lambda key, raw: sent.append(json.loads(raw))  # type: ignore[method-assign]
    qs = quotes(1, 50)
    for q in qs[:10]:
        drv._binance(q)
    key = "binance:btcusdt@depth@100ms"
    topics.add(key, object())  # type: ignore[arg-type]  # only the subscription is needed, not a connection
    at_subscribe = drv.depth.update_id
    for q in qs[10:20]:
        drv._binance(q)
    snapshot_id = qs[14].update_id  # a REST snapshot taken between the subscription and the event
    drv._depth(key, "", qs[19].t_ns)
    (ev,) = sent
    data = ev.get("data", ev)
    assert isinstance(data, dict)
    assert data["pu"] == at_subscribe and data["U"] == at_subscribe + 1 and data["u"] == qs[19].update_id
    assert data["U"] <= snapshot_id + 1 <= data["u"] + 1


def _two_symbol_driver() -> tuple[object, list[dict[str, object]], list[BinanceQuote], list[BinanceQuote]]:
    """A driver emulating BTC and ETH, its published frames, and each symbol's first quotes from the model."""
    import json

    from caerus.sim.core.driver import MarketDriver
    from caerus.sim.core.hub import Topics

    model = MarketModel(MarketConfig(seed=5, symbols=("BTC", "ETH")))
    topics = Topics()
    drv = MarketDriver(model, topics)
    sent: list[dict[str, object]] = []
    topics.publish = lambda key, raw: sent.append(json.loads(raw))  # type: ignore[method-assign]
    qs = list(itertools.islice((e for e in MarketModel(MarketConfig(seed=5, symbols=("BTC", "ETH"))).events()
                                if isinstance(e, BinanceQuote)), 400))
    btc = [q for q in qs if q.symbol == 0]
    eth = [q for q in qs if q.symbol == 1]
    return drv, sent, btc, eth


def test_each_emulated_symbol_has_its_own_book_moving_on_its_own_quotes() -> None:
    drv, _, btc, eth = _two_symbol_driver()
    from caerus.sim.core.driver import MarketDriver
    assert isinstance(drv, MarketDriver) and len(btc) > 60 and len(eth) > 60
    drv._binance(btc[0])
    drv._binance(eth[0])
    b_book, e_book = drv.book("BTCUSDT"), drv.book("ethusdt")
    assert b_book is not e_book and b_book is drv.depth
    assert (b_book.update_id, e_book.update_id) == (btc[0].update_id, eth[0].update_id)
    # ETH quotes move ETH's book only, on ETH's grid; BTC's stays where its last quote left it.
    for q in eth[1:30]:
        drv._binance(q)
    assert b_book.update_id == btc[0].update_id and max(b_book.bids) == btc[0].bid
    assert e_book.update_id == eth[29].update_id and max(e_book.bids) == eth[29].bid
    assert min(e_book.asks) == eth[29].ask and max(e_book.bids) < 10_000 < min(b_book.asks)
    assert all(round(p / 0.01) * 0.01 == pytest.approx(p) for p in e_book.bids)
    for q in btc[1:30]:
        drv._binance(q)
    assert e_book.update_id == eth[29].update_id and b_book.update_id == btc[29].update_id
    assert max(b_book.bids) == btc[29].bid
    with pytest.raises(KeyError):
        drv.book("SOLUSDT")  # listed, not emulated in this session


def test_an_eth_depth_subscriber_chains_from_eths_book_at_subscription() -> None:
    """The 5e59c62 chain rule per symbol: ETH's first diff event after subscribing carries every ETH update since
    (``pu`` = ETH's id at subscription), names ETHUSDT, and a BTC subscription made at the same time chains on
    BTC's own ids."""
    drv, sent, btc, eth = _two_symbol_driver()
    from caerus.sim.core.driver import MarketDriver
    assert isinstance(drv, MarketDriver)
    for q in btc[:10] + eth[:10]:
        drv._binance(q)
    eth_key, btc_key = "binance:ethusdt@depth@100ms", "binance:btcusdt@depth@100ms"
    drv.topics.add(eth_key, object())  # type: ignore[arg-type]  # only the subscription is needed
    drv.topics.add(btc_key, object())  # type: ignore[arg-type]
    eth_at, btc_at = drv.book("ETHUSDT").update_id, drv.book("BTCUSDT").update_id
    assert (eth_at, btc_at) == (eth[9].update_id, btc[9].update_id)
    for q in eth[10:20] + btc[10:13]:
        drv._binance(q)
    snapshot_id = eth[14].update_id  # an ETH REST snapshot taken between the subscription and the event
    drv._depth(eth_key, "", eth[19].t_ns)
    drv._depth(btc_key, "", btc[12].t_ns)
    ev_eth, ev_btc = sent
    assert ev_eth["s"] == "ETHUSDT" and ev_eth["pu"] == eth_at and ev_eth["U"] == eth_at + 1
    assert ev_eth["u"] == eth[19].update_id and ev_eth["U"] <= snapshot_id + 1 <= ev_eth["u"] + 1  # type: ignore[operator]
    assert ev_btc["s"] == "BTCUSDT" and ev_btc["pu"] == btc_at and ev_btc["u"] == btc[12].update_id
    # ETH's levels print on ETH's grid (2 price decimals), from ETH's book
    px, _qty = ev_eth["b"][0]  # type: ignore[index]
    assert len(px.partition(".")[2]) == 2 and float(px) < 10_000
