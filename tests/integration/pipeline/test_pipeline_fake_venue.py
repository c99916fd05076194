"""A third venue is one package: the test venue ``fakevenue`` (tests/fixtures/fakevenue, registered through
``CAERUS_VENUE_PLUGINS`` / ``CAERUS_SIM_PLUGINS``) runs end to end in real processes: `caerus venue-sim` serving
its protocol -> `caerus feed --venue fakevenue` -> `caerus strategy` (bench mode) -> `caerus execution` (paper,
against the emulated Hyperliquid book from a second, built-in feed).

The strategy keys its leading leg on wire code 1 and takes no venue codes from config, so fakevenue stands in
for that leg (it publishes code 1); nothing in caerus/ names it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from caerus.ipc.counter_block import CounterBlock
from caerus.ipc.swmr import SwmrReader
from caerus.records.book import BOOK_ASK_PX, BOOK_BID_PX, BOOK_FLAGS, BOOK_VENUE
from caerus.records.exec import EXEC_ORDER_ID, EXEC_OUTCOME
from caerus.wire import BOOK, EXEC, Outcome, is_tradeable
from tests.fixtures.common import CaerusProcesses

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
FINAL = {Outcome.FILLED, Outcome.PARTIAL, Outcome.NOT_FILLED}
S = "fv"


def test_fake_venue_feed_strategy_execution(venue_sim_factory: Callable, shm_dir: Path, tmp_path: Path) -> None:
    sim = venue_sim_factory(env={"CAERUS_SIM_PLUGINS": "tests.fixtures.fakevenue.emulator"})
    assert "fakevenue_url" in sim, f"the emulator did not serve the registered protocol: {dict(sim)}"
    (tmp_path / "strategy.toml").write_text('mode = "bench"\norder_qty = 0.001\nmax_position = 0.002\n')
    (tmp_path / "execution.toml").write_text("[risk]\nmax_orders_per_s = 100\nprice_band_bps = 500.0\n"
                                             "[paper]\nlatency_ms = 1.0\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CAERUS_VENUE_PLUGINS": "tests.fixtures.fakevenue"}
    procs = CaerusProcesses(env, ROOT, tmp_path)
    start, logs = procs.start, procs.logs

    try:
        start("feed-fakevenue", ["feed", "--venue", "fakevenue", "--segment", f"{S}.book.fakevenue", "--url",
                                 sim["fakevenue_url"], "--ca-file", sim["ca_file"], "--wait-policy", "sleep"])
        start("feed-hyperliquid", ["feed", "--venue", "hyperliquid", "--segment", f"{S}.book.hyperliquid", "--url",
                                   sim["hyperliquid_url"], "--ca-file", sim["ca_file"], "--wait-policy", "sleep"])
        start("execution", ["execution", "--segment", f"{S}.orders", "--transport", "paper", "--book-segment",
                            f"{S}.book.hyperliquid", "--exec-segment", f"{S}.exec", "--stats-segment",
                            f"{S}.stats.execution", "--config", str(tmp_path / "execution.toml"),
                            "--wait-policy", "sleep"])
        start("strategy", ["strategy", "--segment", f"{S}.book.fakevenue", "--segment", f"{S}.book.hyperliquid",
                           "--order-segment", f"{S}.orders", "--stats-segment", f"{S}.stats.strategy", "--config",
                           str(tmp_path / "strategy.toml"), "--wait-policy", "sleep"])
        books = SwmrReader.attach(f"{S}.book.fakevenue", BOOK, timeout=30)
        exec_reader = SwmrReader.attach(f"{S}.exec", EXEC, timeout=30)
        feed = CounterBlock.attach(f"{S}.stats.feed-fakevenue", timeout=30)
        strategy = CounterBlock.attach(f"{S}.stats.strategy", timeout=30)
        fake_books: list[tuple] = []
        records: list[tuple] = []

        def three_results() -> bool:
            while (rec := books.read_next()) is not None:
                fake_books.append(rec)
            while (rec := exec_reader.read_next()) is not None:
                records.append(rec)
            # Feed and strategy refresh their counter blocks periodically: wait for those too, not only the results.
            return (sum(1 for r in records if r[EXEC_OUTCOME] in FINAL) >= 3 and feed.get("books") > 0
                    and strategy.get("books.binance") > 0)

        procs.wait_for(three_results, 90,
                       lambda: f"fewer than 3 paper results; fakevenue feed counters {feed.snapshot()}")
        counters = feed.snapshot()
        strategy_counters = strategy.snapshot()
        strategy.close()
        for name in ("strategy", "execution", "feed-fakevenue", "feed-hyperliquid"):
            assert procs[name].stop(grace=10) == 0, logs()
        books.close()
        exec_reader.close()
        feed.close()
    finally:
        for p in procs.values():
            p.stop(grace=10)

    # The fake venue's feed published tradeable books under its wire code, from its own protocol's frames.
    assert fake_books and all(r[BOOK_VENUE] == 1 and is_tradeable(r[BOOK_FLAGS]) for r in fake_books[:50])
    assert all(r[BOOK_BID_PX] < r[BOOK_ASK_PX] for r in fake_books[:50])
    assert counters["books"] > 0 and counters["acks"] >= 1 and counters["frames_dropped"] == 0
    # The strategy read them as its leading leg (the bench strategy fires only on that leg's books), and the
    # orders it fired reached execution and were answered on paper, once each.
    assert strategy_counters["books.binance"] > 0, strategy_counters
    finals = [r for r in records if r[EXEC_OUTCOME] in FINAL]
    assert len({r[EXEC_ORDER_ID] for r in finals}) == len(finals) >= 3
