"""Session options: bad input stops the session before anything starts, with a message naming the problem."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from caerus.plan import FEED_WARM_EVERY_US, format_cpu_list, plan_fleet
from caerus.session import launch
from caerus.session.local import (
    SessionConfigError,
    SessionOptions,
    book_rates,
    config_hash,
    emulator_yields,
    session_plan,
)

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("opts", "message"),
    [
        (SessionOptions(duration_s=0), "duration must be > 0"),
        (SessionOptions(wait_policy="busy"), "wait policy 'busy'"),
        (SessionOptions(transport="binance"), "transport 'binance'"),
        (SessionOptions(scenario="replay:/nonexistent/frames.jsonl"), "replay file"),
        (SessionOptions(strategy_config=Path("/nonexistent.toml")), "strategy config"),
        (SessionOptions(scenario="no-such-fault"), "unknown scenario 'no-such-fault'"),
        (SessionOptions(live=True, scenario="drop"), "cannot be combined with live venues"),
        (SessionOptions(chaos_every_s=0.5), "chaos interval must be 0"),
        (SessionOptions(live=True, transport="emulator"), "transport emulator sends orders to the venue emulator"),
        (SessionOptions(symbols="BTC,,ETH"), "empty entry"),
        (SessionOptions(symbols="BTC,ETH,BTC"), "lists BTC twice"),
        (SessionOptions(symbol_rate_hz=0), "symbol rate must be > 0"),
        (SessionOptions(symbols="BTC,ETH", feed_connections=3), "feed connections must be 1..2"),
        (SessionOptions(max_feed_books_per_s=0), "books per feed process must be a number > 0, got 0"),
        (SessionOptions(max_feed_books_per_s=float("nan")), "books per feed process must be a number > 0, got nan"),
        (SessionOptions(emulator_yield="sometimes"), "emulator yield 'sometimes' is not one of auto, on, off"),
        (SessionOptions(emulator_cpu="cpu0"), "emulator CPU 'cpu0' is not one of auto, housekeeping, strategy"),
        (SessionOptions(execution_cpu="cpu0"), "execution CPU 'cpu0' is not one of auto, housekeeping, strategy"),
        (SessionOptions(feed_warm_every_us=-5), "feed warm interval must be >= 0 us"),
    ],
)
def test_bad_options_are_named(opts: SessionOptions, message: str) -> None:
    with pytest.raises(SessionConfigError, match=message):
        opts.validate()


def test_known_scenario_passes() -> None:
    SessionOptions(scenario="drop").validate()


def test_config_hash_ignores_output_folder_but_not_seed() -> None:
    plan = plan_fleet(cpus=[0, 1], isolated=[])
    a = config_hash(SessionOptions(out=Path("a")), plan)
    assert a == config_hash(SessionOptions(out=Path("b"), progress="none"), plan)
    assert a != config_hash(SessionOptions(seed=2), plan)
    assert a != config_hash(SessionOptions(), plan_fleet(cpus=[0, 1, 2, 3], isolated=[]))


def test_cli_exits_2_before_starting_anything(tmp_path: Path) -> None:
    out = tmp_path / "sessions"
    res = subprocess.run([sys.executable, "-m", "caerus", "session", "--duration", "0", "--out", str(out)],
                         capture_output=True, text=True, timeout=120, check=False,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert res.returncode == 2
    assert "duration '0' must be positive" in res.stderr
    assert not out.exists()


def test_fleet_argv_emulator_and_live(tmp_path: Path) -> None:
    plan = plan_fleet(cpus=[0, 1], isolated=[])
    seg = launch.Segments("sX")
    urls = {"binance_url": "wss://127.0.0.1:1", "hyperliquid_url": "wss://127.0.0.1:2", "ca_file": "/c/ca.pem"}
    emu = {s.name: s for s in launch.fleet_specs(tmp_path, plan, seg, urls, capture=True, transport="paper")}
    assert list(emu) == ["capture", "execution", "strategy", "feed-binance", "feed-hyperliquid"]
    fb = list(emu["feed-binance"].argv)
    assert fb[fb.index("--url") + 1] == "wss://127.0.0.1:1" and fb[fb.index("--ca-file") + 1] == "/c/ca.pem"
    assert fb[fb.index("--stats-segment") + 1] == "sX.stats.feed-binance"
    assert fb[fb.index("--segment") + 1] == "sX.book.binance"
    assert fb[fb.index("--metrics-dir") + 1] == str(tmp_path)
    assert fb[fb.index("--wait-policy") + 1] == "hybrid" and fb[fb.index("--cpus") + 1] == "0"
    ex = list(emu["execution"].argv)
    assert ex[ex.index("--transport") + 1] == "paper" and ex.count("--book-segment") == 2
    # Both trading processes get the session's kill file by default: touching it halts trading.
    st = list(emu["strategy"].argv)
    kill = str(launch.kill_file_path(tmp_path))
    assert ex[ex.index("--kill-file") + 1] == kill == st[st.index("--kill-file") + 1]
    assert kill == str(tmp_path.resolve() / "KILL")
    assert fb[fb.index("--symbol") + 1] == "BTCUSDT" and "--instruments" not in st
    many = {s.name: list(s.argv) for s in launch.fleet_specs(tmp_path, plan, seg, urls, capture=False,
                                                            transport="paper", instruments=tmp_path / "i.json",
                                                            feed_connections=2)}
    for name in ("execution", "strategy", "feed-binance", "feed-hyperliquid"):
        argv = many[name]
        assert argv[argv.index("--instruments") + 1] == str((tmp_path / "i.json").resolve()), name
        assert "--symbol" not in argv, name
        assert ("--connections" in argv) == name.startswith("feed-"), name
        if name.startswith("feed-"):
            assert argv[argv.index("--connections") + 1] == "2", name
    live = {s.name: s for s in launch.fleet_specs(tmp_path, plan, seg, None, capture=False, transport="paper")}
    assert "capture" not in live
    assert "--url" not in live["feed-hyperliquid"].argv and "--ca-file" not in live["feed-hyperliquid"].argv


def test_invoke_bench_is_caerus_session_bad_input_exits_2_before_starting_anything(tmp_path: Path) -> None:
    import argparse

    from invoke import Context

    import tasks
    from caerus.session.app import add_arguments

    for bad in ({"duration": "soon"}, {"duration": "-5"}, {"transport": "binance"}, {"chaos": 0.5},
                {"max_books_per_feed_process": -1.0}):
        with pytest.raises(SystemExit) as exc:
            tasks.bench(Context(), out=str(tmp_path / "sessions"), no_report=True, **bad)
        assert exc.value.code == 2, bad
    assert not (tmp_path / "sessions").exists()  # nothing started, nothing written
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    for text, seconds in (("30", 30.0), ("90s", 90.0), ("15m", 900.0), ("4h", 14_400.0), ("1h30m", 5_400.0)):
        assert parser.parse_args(["--duration", text]).duration == seconds  # one grammar, local and --host


def test_the_session_plan_splits_a_venue_by_its_estimated_rate() -> None:
    """3 instruments x 40 Hz of Binance books over 60 books/s per feed process: two Binance processes; Hyperliquid
    (one bbo per coin per 70 ms block of the default market) stays one; the default session is not split; the
    option is part of the session's hash."""
    opts = SessionOptions(symbols="BTC,ETH,SOL", symbol_rate_hz=40.0, max_feed_books_per_s=60.0)
    assert book_rates(opts) == {"binance": 40.0, "hyperliquid": pytest.approx(1000.0 / 70.0)}
    plan = session_plan(opts)
    assert plan.feed_split == {"binance": ((0, 2), (2, 3))}
    assert plan.feeds("binance") == ("feed-binance-1", "feed-binance-2") and "feed-binance" not in plan.placements
    assert session_plan(SessionOptions(symbols="BTC,ETH,SOL")).feed_split == {}  # 225 books/s: one process
    assert book_rates(SessionOptions(live=True))["binance"] == 75.0  # the plan's estimate for a live venue
    plan0 = plan_fleet(cpus=[0, 1], isolated=[])
    assert config_hash(SessionOptions(), plan0) != config_hash(SessionOptions(max_feed_books_per_s=60.0), plan0)


def test_the_emulator_yields_its_cpu_where_the_plan_shares_one_with_a_hot_process(tmp_path: Path) -> None:
    shared = plan_fleet(cpus=[0, 1], isolated=[])  # emulator on the strategy's CPU
    own = plan_fleet(cpus=[0, 1, 2, 3, 4], isolated=[1, 2, 3, 4])  # every hot process on a core of its own
    assert shared.emulator_shares_hot_cpu and not own.emulator_shares_hot_cpu
    assert emulator_yields("auto", shared) and not emulator_yields("auto", own)
    assert emulator_yields("on", own) and not emulator_yields("off", shared)
    with pytest.raises(ValueError, match="emulator yield 'yes'"):
        emulator_yields("yes", shared)
    for flag in (True, False):
        spec = launch.venue_sim_spec(tmp_path, shared, 1, None, yield_after_top=flag)
        assert ("--yield-after-top" in spec.argv) is flag
        assert spec.cpus == shared.placement("venue-sim").cpus


def test_the_emulator_runs_where_the_session_puts_it(tmp_path: Path) -> None:
    """--emulator-cpu overrides the plan's place for venue-sim (to compare placements by the main job's numbers):
    housekeeping or the strategy's CPU; auto is the plan's and hashes as sessions did before the option."""
    auto = session_plan(SessionOptions())
    for where in ("housekeeping", "strategy"):
        plan = session_plan(SessionOptions(emulator_cpu=where))
        want = plan.housekeeping if where == "housekeeping" else plan.placement("strategy").cpus
        assert plan.placement("venue-sim").cpus == want
        assert launch.venue_sim_spec(tmp_path, plan, 1, None).cpus == want
        assert {k: v for k, v in plan.placements.items() if k != "venue-sim"} == \
            {k: v for k, v in auto.placements.items() if k != "venue-sim"}
        # the plan's notes (printed as the session's caveat) say where the emulator really runs when moved
        moved = [n for n in plan.notes if n.startswith("venue emulator on CPU")]
        assert len(moved) == (want != auto.placement("venue-sim").cpus), plan.notes
    two = plan_fleet(cpus=[0, 1], isolated=[])
    # the default session's hash before the options existed (main 9644841): its folders keep their names
    assert config_hash(SessionOptions(), two) == "6660f047"
    assert config_hash(SessionOptions(emulator_cpu="housekeeping"), two) != "6660f047"
    assert config_hash(SessionOptions(execution_cpu="housekeeping"), two) != "6660f047"
    with pytest.raises(ValueError, match="emulator placement 'cpu0' is not one of"):
        plan_fleet(cpus=[0, 1], isolated=[], emulator="cpu0")


def test_the_execution_runs_where_the_session_puts_it(tmp_path: Path) -> None:
    """--execution-cpu overrides the plan's place for the execution where it has no CPU of its own (2 vCPUs: the
    strategy's by default), and the execution's process spec pins it there; nothing else moves."""
    auto = session_plan(SessionOptions())
    for where in ("housekeeping", "strategy"):
        plan = session_plan(SessionOptions(execution_cpu=where))
        want = plan.housekeeping if where == "housekeeping" else plan.placement("strategy").cpus
        if plan.placement("execution").dedicated:  # a machine with a core for it: the choice is not applied
            assert any("not applied" in n for n in plan.notes)
            continue
        assert plan.placement("execution").cpus == want
        assert plan.placement("execution").wait_policy == "sleep"
        spec = {s.name: s for s in launch.fleet_specs(tmp_path, plan, launch.Segments("sX"), None, capture=False,
                                                      transport="paper")}["execution"]
        assert spec.cpus == want
        i = spec.argv.index("--cpus")
        assert spec.argv[i + 1] == format_cpu_list(want)
        assert {k: v for k, v in plan.placements.items() if k != "execution"} == \
            {k: v for k, v in auto.placements.items() if k != "execution"}


def test_venue_sim_takes_yield_after_top_into_its_config(tmp_path: Path) -> None:
    import argparse

    from caerus.sim.app import add_arguments, config_from_args

    p = argparse.ArgumentParser()
    add_arguments(p)
    for argv, want in (([], False), (["--yield-after-top"], True)):
        cfg = config_from_args(p.parse_args(["--cert-dir", str(tmp_path), *argv]))
        assert cfg.yield_after_top is want


def test_the_warm_path_goes_to_every_feed_that_can_have_it(tmp_path: Path) -> None:
    """--feed-warm-every-us reaches the busy-client feeds on a polling loop; a sleeping feed runs without it."""
    plan = plan_fleet((0, 1), isolated=())  # feed-binance hybrid, feed-hyperliquid sleep (on the housekeeping CPU)
    seg = launch.Segments("t")
    urls = {"binance_url": "wss://127.0.0.1:1", "hyperliquid_url": "wss://127.0.0.1:2", "ca_file": "/ca.pem"}

    def feed_argv(**kw: object) -> dict[str, list[str]]:
        specs = launch.fleet_specs(tmp_path, plan, seg, urls, capture=False, transport="null", **kw)  # type: ignore[arg-type]
        return {s.name: list(s.argv) for s in specs if s.name.startswith("feed-")}

    warm = feed_argv(feed_client="busy", feed_warm_every_us=FEED_WARM_EVERY_US)
    assert float(warm["feed-binance"][warm["feed-binance"].index("--warm-every-us") + 1]) == FEED_WARM_EVERY_US > 0
    assert "--warm-every-us" not in warm["feed-hyperliquid"]
    assert plan.placement("feed-hyperliquid").wait_policy == "sleep"
    assert feed_argv(feed_client="busy") == warm  # on by default (caerus.plan.FEED_WARM_EVERY_US)
    assert all("--warm-every-us" not in a for a in feed_argv(feed_client="busy", feed_warm_every_us=0).values())
    assert all("--warm-every-us" not in a for a in feed_argv(feed_warm_every_us=100.0).values())  # asyncio: none
