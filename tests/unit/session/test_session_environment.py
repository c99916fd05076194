"""Children of a local session get an allow-listed environment: the runner's secrets (AWS keys, CAERUS_*_SECRET,
venue keys) never reach them; what each process needs does."""

from __future__ import annotations

import re

import pytest

from caerus.session import environment
from caerus.session.environment import ROOT, allowed, child_env

FLEET = ("venue-sim", "capture", "execution", "strategy", "feed-binance", "feed-hyperliquid")
SECRETS = {
    "AWS_SECRET_ACCESS_KEY": "aws-secret", "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SESSION_TOKEN": "tok",
    "CAERUS_BINANCE_SECRET": "bn-secret", "CAERUS_BINANCE_API_KEY": "bn-key", "CAERUS_HL_PRIVATE_KEY": "0xkey",
    "CAERUS_SIM_BINANCE_SECRET": "sim-secret", "CAERUS_TEST_SECRET": "x", "GITHUB_TOKEN": "ghp", "SSH_AUTH_SOCK": "/s",
}
PARENT = {
    **SECRETS, "PATH": "/usr/bin:/bin", "HOME": "/root", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TZ": "UTC",
    "CAERUS_SHM_DIR": "/dev/shm/x", "CAERUS_VENUE_PLUGINS": "my.venue", "CAERUS_SIM_PLUGINS": "my.protocol",
    "PYTHONPATH": "/extra", "PYTHONHASHSEED": "0", "SOMETHING_ELSE": "1",
}


@pytest.mark.parametrize("process", FLEET)
def test_no_secret_reaches_a_child(process: str) -> None:
    env = child_env(process, parent=PARENT)
    assert not set(SECRETS) & set(env), sorted(set(SECRETS) & set(env))
    assert "SOMETHING_ELSE" not in env
    for name in ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "CAERUS_SHM_DIR", "CAERUS_VENUE_PLUGINS", "PYTHONHASHSEED"):
        assert env[name] == PARENT[name], name
    assert env["PYTHONPATH"] == f"{ROOT}:/extra"
    assert env["PYTHONUNBUFFERED"] == "1"


def test_per_process_settings_reach_only_their_process() -> None:
    assert child_env("venue-sim", parent=PARENT)["CAERUS_SIM_PLUGINS"] == "my.protocol"
    for process in FLEET[1:]:
        assert "CAERUS_SIM_PLUGINS" not in child_env(process, parent=PARENT), process


def test_the_sessions_own_settings_are_added() -> None:
    env = child_env("venue-sim", (("CAERUS_SIM_HL_ADDRESS", "0xabc"),), parent=PARENT)
    assert env["CAERUS_SIM_HL_ADDRESS"] == "0xabc"


def test_the_allow_list_names_no_secret() -> None:
    secretish = re.compile(r"SECRET|PASSWORD|TOKEN|PRIVATE|_KEY|^AWS_|CREDENTIAL")
    names = set().union(*(allowed(p) for p in (*FLEET, *environment.PER_PROCESS)))
    assert not {n for n in names if secretish.search(n)}
