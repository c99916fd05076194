"""An emulator with a fresh trading account on both venues, as the live-transport tests start it, and the small
bounded helpers those tests share (a venue's current mid, waiting on a condition while ticking housekeeping).

``start_sim_account(venue_sim_factory, tmp_path)`` starts the emulator (the ``venue_sim_factory`` fixture) with
random Binance API credentials and a new Hyperliquid wallet, and writes the 0600 credentials file the fleet reads.
"""

from __future__ import annotations

import json
import os
import secrets
import ssl
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eth_account import Account

from caerus.execution.credentials import load_credentials
from caerus.execution.transports.live import make_live_transport
from caerus.venues import registry
from caerus.wire import Venue

WAIT_S = 30.0


@dataclass(frozen=True)
class SimAccount:
    """A started emulator and the account the test trades with on it."""

    sim: Any  # what venue_sim_factory returned: its URLs and CA file by key
    creds: Path  # 0600 TOML with both venues' credentials
    api_key: str
    secret: str
    hl: Any  # the Hyperliquid wallet (eth_account LocalAccount)

    def order_url(self, venue: str) -> str:
        """Where ``venue``'s order entry listens on the emulator."""
        return str(self.sim["binance_order_url"] if venue == "binance" else self.sim["hyperliquid_url"])

    def transport(self, venue: str, **options: Any) -> Any:
        """A live order transport for ``venue`` against the emulator, with this account's credentials."""
        spec = registry.get(venue)
        return make_live_transport(spec, network="testnet", credentials=load_credentials(spec, self.creds),
                                   enable_live=True, url=self.order_url(venue), ca_file=self.sim["ca_file"],
                                   **options)


def venue_code(venue: str) -> Venue:
    """The wire code of a venue named as the fleet names it."""
    return Venue.BINANCE if venue == "binance" else Venue.HYPERLIQUID


def start_sim_account(venue_sim_factory: Callable[..., Any], tmp_path: Path, **sim_options: Any) -> SimAccount:
    """Start the emulator with a fresh account (``sim_options`` go to the factory) and write its credentials."""
    api_key, secret, hl = secrets.token_hex(32), secrets.token_hex(32), Account.create()
    sim = venue_sim_factory(**sim_options, env={"CAERUS_SIM_BINANCE_API_KEY": api_key,
                                                "CAERUS_SIM_BINANCE_SECRET": secret,
                                                "CAERUS_SIM_HL_ADDRESS": hl.address})
    creds = tmp_path / "credentials.toml"
    creds.write_text(f'[binance]\napi_key = "{api_key}"\nsecret = "{secret}"\n\n'
                     f'[hyperliquid]\nprivate_key = "{hl.key.hex()}"\n')
    os.chmod(creds, 0o600)
    return SimAccount(sim, creds, api_key, secret, hl)


def until(what: str, cond: Callable[[], Any], tick: Callable[[], Any], wait_s: float = WAIT_S) -> None:
    """Call ``tick`` every 20 ms until ``cond()`` holds; fail naming ``what`` after ``wait_s``."""
    deadline = time.monotonic() + wait_s
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        tick()
        time.sleep(0.02)


def https_base(sim: Any, venue: str) -> str:
    """The emulator's REST base URL for ``venue`` (its WebSocket URL's host and port)."""
    return "https" + str(sim[f"{venue}_url"]).removeprefix("wss")


def sim_mids(sim: Any, venue: str, instruments: list[tuple[str, str]]) -> list[float]:
    """Each instrument's current mid on ``venue`` (instruments as (Hyperliquid coin, Binance symbol) pairs), over
    the emulator's REST API: the same numbers its order entry fills against. Bounded retry while the market
    starts."""
    ctx = ssl.create_default_context(cafile=sim["ca_file"])
    base = https_base(sim, venue)
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            if venue == "hyperliquid":
                req = urllib.request.Request(base + "/info", data=b'{"type":"allMids"}', method="POST")
                with urllib.request.urlopen(req, context=ctx, timeout=5) as r:
                    mids = json.loads(r.read())
                return [float(mids[coin]) for coin, _ in instruments]
            out = []
            for _, symbol in instruments:
                with urllib.request.urlopen(f"{base}/fapi/v1/ticker/bookTicker?symbol={symbol}", context=ctx,
                                            timeout=5) as r:
                    t = json.loads(r.read())
                out.append((float(t["bidPrice"]) + float(t["askPrice"])) / 2)
            return out
        except (KeyError, OSError, ValueError):  # no market yet (503 / empty mids)
            assert time.monotonic() < deadline, f"no {venue} market from the emulator within {WAIT_S} s"
            time.sleep(0.2)


def sim_mid(sim: Any, venue: str) -> float:
    """The emulated market's current BTC mid on ``venue`` (see :func:`sim_mids`)."""
    return sim_mids(sim, venue, [("BTC", "BTCUSDT")])[0]


def close_watch_rig(watch: Any, ours: Any, other: Any, producer: Any, consumer: Any) -> None:
    """Close what a position-watch test built: the watch, our transport and the other client on the same account,
    then the order ring (its consumer unlinks it)."""
    watch.close()
    ours.close()
    other.close()
    producer.close()
    consumer.close(unlink=True)
