"""`caerus venue-sim` argument handling: bad config is refused (exit 2) before anything starts."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from caerus.sim import app, protocols


def parse(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    app.add_arguments(p)
    return p.parse_args(list(argv))


def test_good_config(tmp_path: Path) -> None:
    cfg = app.config_from_args(parse("--cert-dir", str(tmp_path), "--seed", "9", "--scenario", "stall",
                                     "--scenario-after", "0.5", "--hl-lag-ms", "250"))
    assert cfg.seed == 9 and cfg.scenario.name == "stall" and cfg.scenario.after_s == 0.5
    assert cfg.market.hl_lag_ms == 250
    assert (cfg.binance_fee_tier, cfg.hl_fee_tier, cfg.binance_gtd_min_lead_s) == (0, 0, 600.0)  # the venues' base
    tiers = app.config_from_args(parse("--cert-dir", str(tmp_path), "--binance-fee-tier", "2", "--hl-fee-tier", "3"))
    assert (tiers.binance_fee_tier, tiers.hl_fee_tier) == (2, 3)


def test_symbols_and_factor_share(tmp_path: Path) -> None:
    cfg = app.config_from_args(parse("--cert-dir", str(tmp_path), "--symbols", "BTC, ETH,SOL", "--factor-share",
                                     "0.3"))
    assert cfg.market.symbols == ("BTC", "ETH", "SOL") and cfg.market.factor_share == 0.3
    default = app.config_from_args(parse("--cert-dir", str(tmp_path)))
    assert default.market.symbols == ("BTC",) and default.market.factor_share == 0.6


def test_replay_scenario_spelling(tmp_path: Path) -> None:
    frames = tmp_path / "f.jsonl"
    frames.write_text('{"venue":"binance","t_ns":0,"frame":"x"}\n')
    cfg = app.config_from_args(parse("--cert-dir", str(tmp_path), "--scenario", f"replay:{frames}"))
    assert cfg.replay == frames and cfg.scenario.name == "none"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ((), "--cert-dir is required"),
        (("--cert-dir", "X", "--scenario", "nope"), "unknown scenario"),
        (("--cert-dir", "X", "--host", "10.0.0.1"), "loopback"),
        (("--cert-dir", "X", "--host", "localhost"), "loopback IP"),
        (("--cert-dir", "X", "--binance-port", "70000"), "binance_port"),
        (("--cert-dir", "X", "--replay", "/nonexistent.jsonl"), "does not exist"),
        (("--cert-dir", "X", "--binance-rate", "-3"), "binance_rate_hz"),
        (("--cert-dir", "X", "--hl-idle-timeout", "0"), "hl_idle_timeout_s"),
        (("--cert-dir", "X", "--ready-file", "/nonexistent/dir/ready.json"), "--ready-file folder"),
        (("--cert-dir", "X", "--symbols", "BTC,FOO,ETH,BAR"), "'FOO', 'BAR'"),
        (("--cert-dir", "X", "--symbols", "BTC,ETH,BTC"), "'BTC' more than once"),
        (("--cert-dir", "X", "--symbols", ","), "--symbols"),
        (("--cert-dir", "X", "--symbols", "BTC,ETH", "--factor-share", "2"), "factor_share"),
        (("--cert-dir", "X", "--binance-fee-tier", "10"), "binance_fee_tier: binance fee tier must be an integer 0..9"),
        (("--cert-dir", "X", "--hl-fee-tier", "7"), "hl_fee_tier: hyperliquid fee tier must be an integer 0..6"),
        (("--cert-dir", "X", "--binance-gtd-min-lead", "-1"), "binance_gtd_min_lead_s"),
    ],
)
def test_bad_config_exits_2_with_a_message(argv: tuple[str, ...], message: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    args = parse(*argv)
    with pytest.raises(ValueError, match=message):
        app.config_from_args(args)
    assert app.run(args) == 2
    assert message.split()[0] in capsys.readouterr().err


def test_list_scenarios(capsys: pytest.CaptureFixture[str]) -> None:
    assert app.run(parse("--list-scenarios")) == 0
    out = capsys.readouterr().out
    assert "tls-failure" in out and "early-close" in out


def test_a_protocol_plugin_that_cannot_be_imported_is_a_value_error_naming_it() -> None:
    assert protocols.load_plugins({}) == ()
    assert protocols.load_plugins({protocols.PLUGINS_ENV: " json , "}) == ("json",)
    with pytest.raises(ValueError, match=r"CAERUS_SIM_PLUGINS: cannot import emulator protocol 'no\.such\.module'"):
        protocols.load_plugins({protocols.PLUGINS_ENV: "json,no.such.module"})
