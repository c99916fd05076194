"""Frames file format: recorder round trip and validation errors naming line and problem."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from caerus.recording import FrameRecorder, write_frames
from caerus.sim.core.replay import read_frames


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "frames.jsonl"
    n = write_frames(path, [("binance", 0, '{"e":"bookTicker"}'), ("hyperliquid", 5_000_000, "hello")])
    assert n == 2
    got = read_frames(path)
    assert [(f.venue, f.t_ns, f.frame) for f in got] == [("binance", 0, '{"e":"bookTicker"}'),
                                                          ("hyperliquid", 5_000_000, "hello")]
    assert json.loads(path.read_text().splitlines()[0]) == {"venue": "binance", "t_ns": 0,
                                                            "frame": '{"e":"bookTicker"}'}


def test_recorder_clock_starts_at_zero(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    with FrameRecorder(path) as rec:
        rec.record("binance", b"a")
        rec.record("hyperliquid", "b")
    frames = read_frames(path)
    assert frames[0].t_ns == 0 and frames[1].t_ns >= 0
    with pytest.raises(ValueError, match="venue"), FrameRecorder(tmp_path / "x.jsonl") as rec:
        rec.record("no such venue", "x")


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("not json", "not JSON"),
        ('{"venue":"kraken","t_ns":0,"frame":"x"}', "venue must be"),
        ('{"venue":"binance","t_ns":-1,"frame":"x"}', "t_ns must be"),
        ('{"venue":"binance","t_ns":0,"frame":3}', "frame must be a string"),
    ],
)
def test_bad_lines_are_named(tmp_path: Path, line: str, problem: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"venue":"binance","t_ns":0,"frame":"ok"}\n' + line + "\n")
    with pytest.raises(ValueError, match=f"bad.jsonl:2: {problem}"):
        read_frames(path)


def test_time_going_backwards_and_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "back.jsonl"
    write_frames(path, [("binance", 10, "a")])
    path.write_text(path.read_text() + '{"venue":"binance","t_ns":5,"frame":"b"}\n')
    with pytest.raises(ValueError, match="goes backwards"):
        read_frames(path)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(ValueError, match="no frames"):
        read_frames(empty)
