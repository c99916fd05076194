"""--warm-every-us (the feed's warm path) is refused where it cannot work, before the feed starts."""

from __future__ import annotations

import argparse

import pytest

from caerus.config import ConfigError
from caerus.feed.config import add_arguments, from_args
from caerus.venues import registry


def _cfg(*argv: str):
    p = argparse.ArgumentParser()
    add_arguments(p, registry)
    return from_args(p.parse_args(["--segment", "s.book.x", "--venue", "binance", *argv]), registry)


@pytest.mark.parametrize("policy", ["spin", "hybrid"])
def test_busy_client_on_a_polling_loop_takes_it(policy: str) -> None:
    assert _cfg("--client", "busy", "--wait-policy", policy, "--warm-every-us", "100").warm_every_us == 100.0


def test_off_by_default() -> None:
    assert _cfg("--client", "busy", "--wait-policy", "hybrid").warm_every_us == 0.0


@pytest.mark.parametrize(("argv", "named"), [
    (("--client", "asyncio", "--wait-policy", "hybrid"), "--client is 'asyncio'"),
    (("--client", "busy", "--wait-policy", "sleep"), "busy-polling --wait-policy"),
])
def test_refused_where_there_is_no_shadow_to_read(argv: tuple[str, ...], named: str) -> None:
    with pytest.raises(ConfigError, match="--warm-every-us") as err:
        _cfg(*argv, "--warm-every-us", "100")
    assert named in str(err.value)


@pytest.mark.parametrize("bad", ["-1", "nan"])
def test_a_bad_interval_is_named(bad: str) -> None:
    with pytest.raises(ConfigError, match=r"warm.every.us must be (>= 0|a finite number)"):
        _cfg("--client", "busy", "--wait-policy", "hybrid", "--warm-every-us", bad)
