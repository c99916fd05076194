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
    assert args[args.index("--feed-client") + 1] == wire_to_decision.CLIENTS[0]


def test_a_bad_emulator_yield_stops_before_any_session(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire_to_decision, "run_session", lambda *a: pytest.fail("a session was started"))
    with pytest.raises(SystemExit) as exc:
        wire_to_decision.main(["--emulator-yield", "sometimes"])
    assert exc.value.code == 2  # argparse: invalid choice
