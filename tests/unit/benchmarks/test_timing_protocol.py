"""The timing protocol every side-by-side benchmark uses (benchmarks/protocol, issue 49): warm-ups run first and
apart, every contender gets the same number of interleaved repetitions in a rotated order, a record with unequal
counts is refused, and a peer repetition in which numba compiled is refused by backtest_speed. (The numba side,
against the real hftbacktest, is tests/peers/test_timing_protocol.py, in .venv-peers.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import backtest_speed, peers_venv, protocol


def _contenders(log: list[str], names: str = "abc") -> list[protocol.Contender[str]]:
    def make(name: str) -> protocol.Contender[str]:
        def run(i: int) -> str:
            log.append(f"{name}{i}")
            return f"{name}{i}"

        return protocol.Contender(name, run, lambda: log.append(f"warm {name}"), "one run, dropped")

    return [make(n) for n in names]


def test_warm_ups_run_first_then_the_same_rotated_repetitions_for_every_contender() -> None:
    log: list[str] = []
    timed = protocol.interleaved(_contenders(log), 3)
    assert log[:3] == ["warm a", "warm b", "warm c"]  # every warm-up before any timed repetition
    assert log[3:] == ["a0", "b0", "c0", "b1", "c1", "a1", "c2", "a2", "b2"]  # rotated: none always first
    assert [t.repetitions for t in timed] == [3, 3, 3] and timed[0].results == ["a0", "a1", "a2"]
    assert all(t.warm_up_s is not None and len(t.seconds) == 3 for t in timed)
    assert protocol.warm_up_lines(timed)[1].startswith("warm-up b: ") and \
        protocol.warm_up_lines(timed)[1].endswith(" s, one run, dropped")
    entry = protocol.as_json(timed)[2]
    assert entry["repetitions"] == 3 and entry["statistic"] == protocol.STATISTIC and entry["contender"] == "c"


def test_a_contender_timing_itself_reports_its_own_seconds_and_the_median_is_kept() -> None:
    times = iter([3.0, 1.0, 2.0])
    c = protocol.Contender("self-timed", lambda i: next(times), None, "inside each repetition",
                           seconds=lambda s: s)
    (t,) = protocol.interleaved([c], 3)
    assert t.seconds == [3.0, 1.0, 2.0] and t.median_s == 2.0 and t.warm_up_s is None
    assert protocol.warm_up_lines([t]) == ["warm-up self-timed: inside each repetition"]


def test_unequal_repetitions_and_bad_arguments_are_refused() -> None:
    log: list[str] = []
    timed = protocol.interleaved(_contenders(log, "ab"), 2)
    timed[1].results.pop()
    timed[1].seconds.pop()
    with pytest.raises(protocol.ProtocolError, match=r"same number .* \{'a': 2, 'b': 1\}"):
        protocol.check(timed)
    with pytest.raises(ValueError, match="repetitions must be >= 1"):
        protocol.interleaved(_contenders(log), 0)
    with pytest.raises(ValueError, match="unique"):
        protocol.interleaved(_contenders(log, "aa"), 1)


def test_a_peer_repetition_that_compiled_inside_its_timed_region_is_refused() -> None:
    clean = {"compiled_in_timed_region": [], "seconds": 0.1}
    assert backtest_speed.compiled_check("hft", clean) is clean
    with pytest.raises(protocol.ProtocolError, match=r"hft: numba compiled inside the timed region \(state_values"):
        backtest_speed.compiled_check("hft", {"compiled_in_timed_region": ["state_values", "accessor"]})


def test_a_worktree_finds_the_main_worktrees_peers_venv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    main, wt = tmp_path / "main", tmp_path / "wt" / "h"
    gitdir = main / ".git" / "worktrees" / "h"
    gitdir.mkdir(parents=True)
    (gitdir / "commondir").write_text("../..\n")
    wt.mkdir(parents=True)
    (wt / ".git").write_text(f"gitdir: {gitdir}\n")
    monkeypatch.delenv("CAERUS_PEERS_VENV", raising=False)
    assert peers_venv.main_worktree(wt) == main and peers_venv.main_worktree(main) is None
    assert peers_venv.venv(wt) == wt / ".venv-peers"  # none anywhere: the checkout's own, to be built
    (main / ".venv-peers" / "bin").mkdir(parents=True)
    (main / ".venv-peers" / "bin" / "python").write_text("")
    assert peers_venv.python(wt) == main / ".venv-peers" / "bin" / "python"
    (wt / ".venv-peers" / "bin").mkdir(parents=True)
    (wt / ".venv-peers" / "bin" / "python").write_text("")
    assert peers_venv.venv(wt) == wt / ".venv-peers"  # the checkout's own first
    monkeypatch.setenv("CAERUS_PEERS_VENV", str(tmp_path / "elsewhere"))
    assert peers_venv.venv(wt) == tmp_path / "elsewhere"
