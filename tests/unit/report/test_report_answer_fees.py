"""The report's opening names the taker fee its paper fills paid: the fee schedule's tier and rate of each venue
traded (caerus.fees, what the paper transport charges when the config fixes no ``fee_bps``), or the fixed rate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from caerus import fees
from caerus.execution.books import LatestBooks
from caerus.execution.config import PaperConfig
from caerus.execution.transports.paper import PaperTransport
from caerus.report import answer
from caerus.wire import Outcome, Venue
from tests.fixtures.pipeline import make_book

T0 = 1_700_000_000_000_000_000
BN, HL = int(Venue.BINANCE), int(Venue.HYPERLIQUID)


def _order(venue: int, px: float, qty: float, oid: int = 1) -> tuple:
    return (oid, 1, venue, 1, 0, 1, BN, 0, px, qty, 7, T0 - 10_000, T0 - 5_000, T0 - 2_000, T0, oid + 1, 0, 0, 0)


def _note(tmp_path: Path, cfg: PaperConfig, venues: list[int]) -> str:
    books = LatestBooks()
    for v in (BN, HL):
        books.put(make_book(v, 99_999.0, 100_000.0, T0))
    t = PaperTransport(cfg, books)
    for i, v in enumerate(venues):
        assert t.send_msg(_order(v, 100_010.0, 0.002, oid=i + 1)).outcome == Outcome.FILLED
    (tmp_path / "paper.json").write_text(json.dumps(t.summary()))
    paper = answer.paper_fills(tmp_path)
    assert paper is not None and paper["fills"] == len(venues)
    op = answer.Opening(lead=[])
    answer._session_fills(op, paper, {}, paper["horizons_ms"])
    assert len(op.fills_notes) == 1
    return op.fills_notes[0]


@pytest.mark.parametrize(("cfg", "venues", "want"), [
    (PaperConfig(), [HL], f"taker fee from the venues' fee schedule (caerus/fees.py): hyperliquid tier 0 "
                          f"{fees.taker_bps('hyperliquid'):g} bps)"),
    (PaperConfig(binance_fee_tier=1), [BN, HL], "taker fee from the venues' fee schedule (caerus/fees.py): binance "
                                                "VIP 1 4 bps, hyperliquid tier 0 4.5 bps)"),
    (PaperConfig(fee_bps=1.5), [BN], "taker fee 1.5 bps on every venue, fixed by the paper config's fee_bps)"),
], ids=["schedule, one venue", "schedule, a tier", "fixed"])
def test_the_paper_fills_note_names_the_taker_fee_charged(tmp_path: Path, cfg: PaperConfig, venues: list[int],
                                                          want: str) -> None:
    note = _note(tmp_path, cfg, venues)
    assert want in note and "None" not in note


def test_a_paper_json_without_fee_records_says_so() -> None:
    assert answer.fee_text({"markout_ms": [100.0]}, ["hyperliquid"]) == "taker fee not recorded in paper.json"
