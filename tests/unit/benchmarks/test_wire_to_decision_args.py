"""benchmarks.wire_to_decision hands its --emulator-yield to every session it runs, and refuses a value the session
would not take, before any session starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import wire_to_decision


class _Stop(Exception):
    pass


def test_emulator_yield_reaches_the_session(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []

    def run_session(benchmark: str, out: Path, seconds: float, seed: int, args: list[str], timeout_s: float) -> Path:
        seen.append(args)
        raise _Stop  # one session's arguments are what this test reads; none is started

    monkeypatch.setattr(wire_to_decision, "run_session", run_session)
    with pytest.raises(_Stop):
        wire_to_decision.main(["--quick", "--emulator-yield", "off"])
    args = seen[0]
    assert args[args.index("--emulator-yield") + 1] == "off"
    assert float(args[args.index("--feed-warm-every-us") + 1]) == wire_to_decision.FEED_WARM_EVERY_US  # default
    assert args[args.index("--feed-client") + 1] == wire_to_decision.CLIENTS[0]


def test_a_bad_emulator_yield_stops_before_any_session(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire_to_decision, "run_session", lambda *a: pytest.fail("a session was started"))
    with pytest.raises(SystemExit) as exc:
        wire_to_decision.main(["--emulator-yield", "sometimes"])
    assert exc.value.code == 2  # argparse: invalid choice


def test_warm_every_us_reaches_the_session(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []

    def run_session(benchmark: str, out: Path, seconds: float, seed: int, args: list[str], timeout_s: float) -> Path:
        seen.append(args)
        raise _Stop

    monkeypatch.setattr(wire_to_decision, "run_session", run_session)
    with pytest.raises(_Stop):
        wire_to_decision.main(["--quick", "--warm-every-us", "0"])
    assert seen[0][seen[0].index("--feed-warm-every-us") + 1] == "0.0"


def test_compare_warm_runs_a_cold_busy_arm_interleaved(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []

    def run_session(benchmark: str, out: Path, seconds: float, seed: int, args: list[str], timeout_s: float) -> Path:
        seen.append([out.name, *args])
        if len(seen) == 3:
            raise _Stop
        return out

    monkeypatch.setattr(wire_to_decision, "run_session", run_session)
    import caerus.metrics.summary as summary

    # no session ran: nothing to load (main reads each session's metrics through this module)
    monkeypatch.setattr(summary, "load_metrics", lambda d: type("Loaded", (), {"metrics": {}})())
    with pytest.raises(_Stop):
        wire_to_decision.main(["--quick", "--compare-warm"])
    got = [(a[0], a[a.index("--feed-client") + 1], float(a[a.index("--feed-warm-every-us") + 1])) for a in seen]
    warm = wire_to_decision.FEED_WARM_EVERY_US
    assert got == [("sessions-asyncio", "asyncio", warm), ("sessions-busy", "busy", warm),
                   ("sessions-busy-cold", "busy", 0.0)]
