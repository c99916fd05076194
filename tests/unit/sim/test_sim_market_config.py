"""Market TOML files and presets: loaded and validated before anything starts, every problem named by its key;
venue-sim --market picks one and its market options override the file; the offline book stream."""

from __future__ import annotations

import argparse
import dataclasses
import itertools
from pathlib import Path

import pytest

from caerus.sim.app import add_arguments, config_from_args
from caerus.sim.core import offline
from caerus.sim.core.market import HlBlock, MarketConfig, MarketModel
from caerus.sim.core.market_config import FIELDS, MarketFileError, load_market, presets


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "market.toml"
    path.write_text(text)
    return path


def test_presets_ship_and_load() -> None:
    assert {"default", "fixed-lag"} <= set(presets())
    default = load_market("default")
    assert default.hl_lag_ms == 650.0 and default.hl_lag_sd_ms > 0 and default.catch_up < 1
    assert default.flicker_share > 0 and default.hl_own_jumps_per_min > 0 and default.regimes_on
    assert load_market("fixed-lag") == MarketConfig()


def test_every_setting_of_the_default_preset_is_commented(tmp_path: Path) -> None:
    text = (Path(__file__).parents[3] / "caerus/sim/markets/default.toml").read_text()
    for line in text.splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            assert "#" in line, f"default.toml: {line.split('=')[0].strip()} says nothing about what it stands for"


def test_a_file_sets_only_what_it_names(tmp_path: Path) -> None:
    cfg = load_market(write(tmp_path, "hl_lag_ms = 250\ncatch_up = 0.5\nsymbols = ['BTC', 'ETH']\n"
                                      "hl_lag_ms_by_symbol = { ETH = 400 }\n"))
    assert (cfg.hl_lag_ms, cfg.catch_up, cfg.symbols, cfg.lag_ms("ETH")) == (250.0, 0.5, ("BTC", "ETH"), 400.0)
    assert cfg.annual_vol == MarketConfig().annual_vol


@pytest.mark.parametrize(("text", "named"), [
    ("hl_lag_msec = 3\n", "'hl_lag_msec'"),
    ("catch_up = 1.5\n", "catch_up"),
    ("flicker_share = 1.0\n", "flicker_share"),
    ("hl_lag_sd_ms = -1\n", "hl_lag_sd_ms"),
    ("regime_vol_mult = 0\n", "regime_vol_mult"),
    ("hl_own_blocks = 2.5\n", "'hl_own_blocks'"),
    ("hl_own_blocks = 0\n", "hl_own_blocks"),
    ("annual_vol = 'high'\n", "'annual_vol'"),
    ("annual_vol = true\n", "'annual_vol'"),
    ("annual_vol = inf\n", "annual_vol"),
    ("hl_own_bps_min = 9\nhl_own_bps_max = 3\n", "hl_own_bps_max"),
    ("symbols = ['BTC', 'NOPE']\n", "symbols"),
    ("hl_lag_ms = 0\nhl_lag_sd_ms = 10\n", "hl_lag_ms"),
])
def test_bad_files_stop_naming_the_key(tmp_path: Path, text: str, named: str) -> None:
    with pytest.raises(MarketFileError, match=named) as info:
        load_market(write(tmp_path, text))
    assert str(tmp_path / "market.toml") in str(info.value)


def test_missing_file_and_bad_toml_are_named(tmp_path: Path) -> None:
    with pytest.raises(MarketFileError, match="no such file, and not a preset"):
        load_market(tmp_path / "absent.toml")
    with pytest.raises(MarketFileError, match="not valid TOML"):
        load_market(write(tmp_path, "catch_up = = 1\n"))


def test_every_field_has_a_comment_saying_what_it_stands_for() -> None:
    source = (Path(__file__).parents[3] / "caerus/sim/core/market_config.py").read_text().splitlines()
    for name in FIELDS:
        line = next(i for i, text in enumerate(source) if text.strip().startswith(f"{name}:"))
        commented = "#" in source[line] or source[line - 1].strip().startswith("#")
        assert commented, f"MarketConfig.{name} has no comment"


def _sim_args(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    add_arguments(p)
    return p.parse_args(["--cert-dir", "/tmp", *argv])


def test_venue_sim_runs_the_default_market_unless_told(tmp_path: Path) -> None:
    assert config_from_args(_sim_args()).market == load_market("default")
    assert config_from_args(_sim_args("--market", "fixed-lag")).market == MarketConfig()
    path = write(tmp_path, "hl_lag_ms = 250\nseed = 9\nsymbols = ['BTC', 'ETH']\n")
    cfg = config_from_args(_sim_args("--market", str(path), "--hl-lag-ms", "300", "--seed", "4")).market
    assert (cfg.hl_lag_ms, cfg.seed, cfg.symbols) == (300.0, 4, ("BTC", "ETH"))  # options override the file
    assert config_from_args(_sim_args("--market", str(path))).market.seed == 9


def test_venue_sim_refuses_a_bad_market_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown setting 'lag'"):
        config_from_args(_sim_args("--market", str(write(tmp_path, "lag = 3\n"))))


def test_offline_books_are_what_the_feeds_receive() -> None:
    cfg = load_market("default", seed=5, symbols=("BTC", "ETH"))
    books = list(offline.books(cfg, 10.0))
    events = list(itertools.takewhile(lambda e: e.t_ns < 10e9, MarketModel(cfg).events()))
    sent = [e for e in events if not isinstance(e, HlBlock) or e.changed]
    assert len(books) == len(sent)
    assert all(b.t_exchange % 1_000_000 == 0 and b.t_exchange - offline.OFFLINE_EPOCH_NS <= b.t_ns for b in books)
    hl = [b for b in books if b.venue == 2 and b.symbol == 1]
    assert [b.seq for b in hl] == list(range(1, len(hl) + 1))
    cols = offline.columns(cfg, 10.0)
    assert set(cols) == set(offline.OfflineBook._fields) and len(cols["t_ns"]) == len(books)
    with pytest.raises(ValueError, match="duration"):
        list(offline.books(cfg, 0))


def test_market_config_is_a_plain_frozen_dataclass() -> None:
    # callers build variants with {**cfg.__dict__, ...} and read dataclasses.fields (caerus calibrate)
    cfg = load_market("default")
    assert MarketConfig(**cfg.__dict__) == cfg
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.catch_up = 0.1  # type: ignore[misc]
