"""The side-by-side benchmark's harness (benchmarks/peers) measures what it says: Caerus's contender hands off exactly
the books the recorded emulator frames carry, a peer that hands off anything else stops the run, the raw frame given
to Caerus is the combined frame's payload verbatim, and the table's ratios and verdicts point the right way.
The peers themselves run in .venv-peers: tests/peers/ checks them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks.peers import backtest, feed_decode, frames, table

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "peers" / "frames.jsonl"


def test_recorded_frames_split_by_venue_and_unwrap_to_the_payload_verbatim() -> None:
    fr = frames.load(FIXTURE)
    assert len(fr.binance_combined) == 40 and len(fr.hyperliquid) == 39  # the subscription answer is not data
    assert len(fr.binance_depth_combined) == 20
    for combined, raw in zip(fr.binance_combined, fr.binance_raw, strict=True):
        assert json.loads(combined)["data"] == json.loads(raw)
        assert combined == b'{"stream":"btcusdt@bookTicker","data":' + raw + b"}"
    for combined, raw in zip(fr.binance_depth_combined, fr.binance_depth_raw, strict=True):
        assert combined == b'{"stream":"btcusdt@depth5@100ms","data":' + raw + b"}"
        assert json.loads(raw)["e"] == "depthUpdate" and len(json.loads(raw)["b"]) == 5


def test_unwrap_refuses_a_frame_that_is_not_a_combined_stream_frame() -> None:
    with pytest.raises(ValueError, match="not a Binance combined-stream frame"):
        frames.unwrap(b'{"e":"bookTicker","b":"1"}')


def test_a_frames_file_without_both_venues_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_text("\n".join(ln for ln in FIXTURE.read_text().splitlines() if '"venue": "binance"' in ln
                              or '"venue":"binance"' in ln) + "\n")
    with pytest.raises(ValueError, match="needs Binance bookTicker and Hyperliquid bbo frames, has 40 and 0"):
        frames.load(path)


@pytest.mark.parametrize("venue", feed_decode.VENUES)
def test_caerus_hands_off_every_recorded_book_with_the_frames_values(venue: str, shm_dir: Path) -> None:
    fr = frames.load(FIXTURE)
    raw, _ = feed_decode.inputs_for(fr, venue)
    expected = feed_decode.reference_values(raw, venue)
    dec = feed_decode.caerus(venue)
    try:
        for _ in range(2):  # a second round replays the same ids and times: the harness must reset the feed
            t = feed_decode.run(dec, [dec.prepare(r, r) for r in raw])
            assert t.shape == (len(raw),) and (t > 0).all()
            assert feed_decode.disagreement(expected, dec.handed_off()) is None
    finally:
        dec.close()
    assert len(set(expected)) > 5  # the frames are not all one book: a value mix-up would show


def test_a_contender_handing_off_other_books_is_named_with_the_first_difference() -> None:
    exp = [(1.0, 2.0), (1.5, 2.5)]
    assert feed_decode.disagreement(exp, list(exp)) is None
    assert feed_decode.disagreement(exp, exp[:1]) == "handed off 1 books for 2 frames"
    assert feed_decode.disagreement(exp, [(1.0, 2.0), (2.5, 1.5)]) == (
        "book 1: (bid, ask) (2.5, 1.5) where the frame says (1.5, 2.5)")


def test_ratios_are_contender_over_caerus_and_the_verdict_says_who_wins() -> None:
    rows = table.rows_for("c", {"caerus": np.array([100, 100, 200]), "slow": np.array([300, 300, 300]),
                                "fast": np.array([50, 50, 50])}, "caerus", unavailable={"gone": "why"})
    by = {r.contender: r for r in rows}
    assert by["caerus"].ratio_p50 == 1.0 and by["slow"].ratio_p50 == 3.0 and by["fast"].ratio_p50 == 0.5
    assert table.verdict(by["slow"]) == "Caerus faster"
    assert table.verdict(by["fast"]) == "**peer faster at p50**"
    assert table.verdict(by["gone"]) == "not available: why"
    md = table.markdown(rows)
    assert "| c | slow | 3 | 0.30 | 0.30 | 3.00x |" in md and "not available: why" in md
    assert json.loads(json.dumps(table.as_json(rows)))[3]["p50_ns"] is None


def test_the_backtest_row_comes_from_backtest_speeds_json(tmp_path: Path) -> None:
    assert backtest.rows(None)[0].unavailable.startswith("not run here")
    path = tmp_path / "bt.json"
    path.write_text(json.dumps({"extra": {"total_books_per_s": 3e6, "peer": {"books_per_s": 1e6}}}))
    ours, peer = backtest.rows(path)
    assert peer.ratio_p50 == 3.0 and "1,000,000 books/s" in peer.note and "3,000,000 books/s" in ours.note
    assert table.verdict(ours) == "reference" and table.verdict(peer) == "Caerus faster"


def test_without_the_peers_venv_the_command_says_how_to_make_it(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from benchmarks.peers import __main__ as cli

    monkeypatch.setattr(cli, "PEERS_PYTHON", tmp_path / "no-venv" / "bin" / "python")
    monkeypatch.setattr(cli, "_in_peers_venv", lambda: False)
    assert cli.main(["--quick", "--no-docs"]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and "pip install --require-hashes -r locks/peers.txt" in err
    assert err.count("\n") == 1  # one line
