"""Strategy config loading (clear errors naming the field) and the supervisor (kill switch, error budget)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from caerus import config
from caerus.config import ConfigError
from caerus.runtime.supervisor import HaltCause, State, Supervisor
from caerus.strategy.config import StrategyConfig


def load_config(path: Path | None) -> StrategyConfig:
    return config.load_config(StrategyConfig, path, "strategy")


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "strategy.toml"
    p.write_text(text)
    return p


def test_defaults_and_overrides(tmp_path: Path) -> None:
    assert load_config(None).entry_bps == 5.0
    cfg = load_config(write(tmp_path, 'entry_bps = 8.0\nmode = "bench"\ncooldown_ms = 0\n'))
    assert (cfg.entry_bps, cfg.mode, cfg.cooldown_ms) == (8.0, "bench", 0.0)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("entry_bps = 'five'\n", "$.entry_bps"),
        ("entry_bpz = 5.0\n", "entry_bpz"),
        ("entry_bps = -1.0\n", "$.entry_bps"),
        ("mode = 'yolo'\n", "$.mode"),
        ("entry_bps = 2.0\nexit_bps = 3.0\n", "exit_bps"),
        ("order_qty = 1.0\n", "max_position"),
        ("entry_bps = = 2\n", "not valid TOML"),
        ("max_hold_ms = inf\n", "finite"),
    ],
)
def test_bad_config_names_the_field(tmp_path: Path, text: str, needle: str) -> None:
    p = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_config(p)
    assert needle in str(err.value)
    assert str(p) in str(err.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "nope.toml")


def test_kill_file_halts_once(tmp_path: Path) -> None:
    halts: list[HaltCause] = []
    kill = tmp_path / "KILL"
    sup = Supervisor(kill_file=kill, on_halt=halts.append)
    sup.running()
    assert not sup.check_kill_file() and not sup.halted
    kill.touch()
    assert sup.check_kill_file()
    assert sup.halted and sup.state == State.HALTED and sup.halt_cause == HaltCause.KILL_FILE
    assert not sup.check_kill_file()
    assert halts == [HaltCause.KILL_FILE]


def test_error_budget_halts_only_when_errors_are_close_together() -> None:
    clock = [0.0]
    sup = Supervisor(max_errors=3, error_window_s=10.0, clock=lambda: clock[0])
    for t in (0.0, 20.0, 40.0, 60.0):  # spread out: never 3 within 10 s
        clock[0] = t
        assert not sup.record_error(ValueError("x"))
    clock[0] = 61.0
    assert not sup.record_error(ValueError("x"))  # 40, 60, 61: the oldest of the last 3 is 21 s old
    clock[0] = 62.0
    assert sup.record_error(ZeroDivisionError("boom"))  # 60, 61, 62
    assert sup.halt_cause == HaltCause.ERRORS and sup.errors == 6
    assert sup.last_error == "ZeroDivisionError: boom"


def test_signals_kill_switch_and_stop() -> None:
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1)}
    try:
        sup = Supervisor()
        sup.install_signals()
        sup.running()
        os.kill(os.getpid(), signal.SIGUSR1)
        assert sup.halt_cause == HaltCause.SIGNAL and sup.state == State.HALTED
        assert not sup.stopping
        os.kill(os.getpid(), signal.SIGTERM)
        assert sup.stopping and sup.state == State.STOPPING
    finally:
        for s, h in saved.items():
            signal.signal(s, h)
