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


def _bt_doc(hashmap: float, roivec: float, identical: bool = True) -> dict[str, object]:
    def hft(name: str, rate: float) -> dict[str, object]:
        return {"name": name, "books_per_s": rate, "compiled_in_timed_regions": 0,
                "agreement": {"identical": identical, "orders_identical_prefix": 312 if identical else 7,
                              "orders_caerus": 312}}

    return {"extra": {"total_books_per_s": 3e6, "loop_books_per_s": 4e6, "repetitions": 5,
                      "load_average": {"start": [2.5, 2, 2]}, "protocol": [{"contender": "x", "repetitions": 5}],
                      "hftbacktest": {"hashmap": hft("hftbacktest HashMapMarketDepthBacktest", hashmap),
                                      "roivec": hft("hftbacktest ROIVectorMarketDepthBacktest", roivec)}}}


def test_the_backtest_rows_come_from_backtest_speeds_json_with_both_backtesters(tmp_path: Path) -> None:
    assert backtest.rows(None)[0].unavailable.startswith("not run here")
    path = tmp_path / "bt.json"
    path.write_text(json.dumps(_bt_doc(1e6, 6e6)))
    recorded: dict[str, object] = {}
    ours, loop, hashmap, roivec = backtest.rows(path, recorded)
    assert hashmap.ratio_p50 == 3.0 and roivec.ratio_p50 == 0.5 and loop.ratio_p50 == 0.75
    assert "ROIVectorMarketDepthBacktest" in roivec.contender and "6,000,000 books/s" in roivec.note
    assert "median of 5" in ours.note and "orders identical 312/312" in roivec.note
    assert table.verdict(ours) == "reference" and table.verdict(hashmap) == "Caerus faster"
    assert table.verdict(roivec) == "**peer faster at p50**" and table.verdict(loop) == "a Caerus variant"
    assert recorded == {table.BACKTEST: [{"contender": "x", "repetitions": 5}]}
    path.write_text(json.dumps(_bt_doc(1e6, 6e6, identical=False)))
    assert "ORDERS DIFFER: first 7 of 312 identical" in backtest.rows(path)[3].note
    # the JSON before issue 49 (one cold hftbacktest run) is not listed as if it were a measurement
    path.write_text(json.dumps({"extra": {"total_books_per_s": 3e6, "peer": {"books_per_s": 1e6}}}))
    assert "no books/s for caerus and hftbacktest's backtesters" in backtest.rows(path)[0].unavailable


def test_each_goal_reads_its_like_for_like_row(tmp_path: Path) -> None:
    depth, hop = "feed decode: Binance USD-M depth5@100ms", "process hop (one-way, 300 us pacing)"
    rows = [table.Row(depth, "caerus 0.1.0", ratio_p50=1.0),
            table.Row(depth, "nautilus_trader 1.231.0, decode + top of book", ratio_p50=1.25),
            table.Row(depth, "nautilus_trader 1.231.0, full book", ratio_p50=20.0),
            table.Row(hop, "caerus SWMR ring", ratio_p50=1.0),
            table.Row(hop, "caerus SWMR ring, hybrid reader", ratio_p50=1.0),
            table.Row(hop, "pyzmq 27.3.0 ipc (PUSH/PULL)", ratio_p50=36.0),
            table.Row(hop, "pyzmq 27.3.0 ipc (PUSH/PULL), spinning", ratio_p50=4.0)]
    path = tmp_path / "bt.json"
    path.write_text(json.dumps(_bt_doc(1e6, 6e6)))
    by = {g["name"]: g for g in table.goals(rows + backtest.rows(path))}
    d5 = by["feed per-message cost, Binance USD-M depth5: Caerus / nautilus_trader (decode + top of book) p50"]
    assert d5["actual"] == 0.8 and d5["met"]
    spin = by["ring hop, spin against spin: pyzmq ipc (spinning) p50 / SWMR ring (spinning) p50"]
    assert spin["actual"] == 4.0 and spin["met"] is False
    assert next(g for n, g in by.items() if n.startswith("ring hop: pyzmq ipc (blocking: "))["actual"] == 36.0
    bt = by["backtest books/s: Caerus / hftbacktest's faster backtester (same books, rule and run)"]
    assert bt["actual"] == 0.5 and bt["met"] is False  # the faster one (ROIVector), not the 3x over HashMap


def test_without_the_peers_venv_the_command_says_how_to_make_it(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from benchmarks.peers import __main__ as cli

    monkeypatch.setattr(cli, "PEERS_PYTHON", tmp_path / "no-venv" / "bin" / "python")
    monkeypatch.setattr(cli, "_in_peers_venv", lambda: False)
    assert cli.main(["--quick", "--no-docs"]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and "pip install --require-hashes -r locks/peers.txt" in err
    assert err.count("\n") == 1  # one line
