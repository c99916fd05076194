"""Every peer of benchmarks/peers decodes the same recorded emulator frames to the same (bid, ask) books as Caerus,
in order, as its own code hands them off (what the side-by-side table times is the same work on the same input);
and a peer handed a frame with another price is caught."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.peers import feed_decode, frames

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "peers" / "frames.jsonl"
EXPECTED_AVAILABLE = {("binance", "caerus", ""), ("binance", "cryptofeed", ""), ("binance", "nautilus_trader", ""),
                      ("hyperliquid", "caerus", ""), ("hyperliquid", "cryptofeed", ""), ("binance_depth", "caerus", ""),
                      ("binance_depth", "nautilus_trader", "decode + top of book"),
                      ("binance_depth", "nautilus_trader", "decode + top of book as its QuoteTick"),
                      ("binance_depth", "nautilus_trader", "full book")}


@pytest.mark.parametrize("venue", feed_decode.VENUES)
def test_every_peer_hands_off_the_books_caerus_hands_off(venue: str, shm_dir: Path) -> None:
    fr = frames.load(FIXTURE)
    raw, combined = feed_decode.inputs_for(fr, venue)
    assert raw  # the fixture has every stream
    handed: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for make in feed_decode.CONTENDERS:
        dec = make(venue)
        if dec is None:  # no second way to measure this tool on this venue
            continue
        if dec.unavailable:
            assert (venue, dec.name, dec.variant) not in EXPECTED_AVAILABLE, dec.unavailable
            continue
        try:
            feed_decode.run(dec, [dec.prepare(r, c) for r, c in zip(raw, combined, strict=True)])
            handed[dec.name, dec.variant] = dec.handed_off()
        finally:
            dec.close()
    assert {(venue, *k) for k in handed} == {p for p in EXPECTED_AVAILABLE if p[0] == venue}
    for key, got in handed.items():
        assert feed_decode.disagreement(handed["caerus", ""], got) is None, key
    assert feed_decode.disagreement(feed_decode.reference_values(raw, venue), handed["caerus", ""]) is None


def test_a_peer_fed_another_price_disagrees(shm_dir: Path) -> None:
    fr = frames.load(FIXTURE)
    expected = feed_decode.reference_values(fr.binance_raw, "binance")
    dec = feed_decode.cryptofeed("binance")
    bad = list(fr.binance_combined)
    bad[7] = bad[7].replace(b'"b":"', b'"b":"1', 1)  # one bid with an extra leading digit
    feed_decode.run(dec, [dec.prepare(c, c) for c in bad])
    assert (feed_decode.disagreement(expected, dec.handed_off()) or "").startswith("book 7: (bid, ask)")
