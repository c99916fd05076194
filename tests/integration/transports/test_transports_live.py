"""Live transports end to end over real TLS WebSockets on loopback against the emulator's order-entry answers:
signed orders accepted, bad signatures and venue rules rejected, start-up guards, lost connections, and no
secret in any log line."""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from pathlib import Path

import pytest
from eth_account import Account

from caerus import wire
from caerus.execution.credentials import load_credentials
from caerus.execution.transports.live import make_live_transport
from caerus.sim import orders
from caerus.venuekit.credentials import CredentialsError, Secret
from caerus.venuekit.order_session import LiveConfigError, LiveTransportError
from caerus.venuekit.order_transport import Transport
from caerus.venues import registry
from caerus.venues.binance import SPEC as BINANCE
from caerus.venues.binance.credentials import BinanceCredentials
from caerus.venues.hyperliquid import SPEC as HYPERLIQUID
from caerus.venues.hyperliquid.credentials import HyperliquidCredentials
from caerus.venues.hyperliquid.execution import CODE_ACTION_ERROR, CODE_ORDER_ERROR
from tests.fixtures.transports_orders import OrderServer, next_reply
from tests.kit import records

pytestmark = pytest.mark.integration


def _order(order_id: int, *, side: int = 1, px: float = 100_000.0, qty: float = 0.01,
           tif: int = wire.Tif.IOC, venue: int = wire.Venue.BINANCE) -> tuple:
    now = time.time_ns()
    return records.order(order_id, venue=venue, side=side, tif=tif, px=px, qty=qty, trigger_venue=venue,
                         trigger_seq=1, trigger_t_recv=now, trigger_t_publish=now, t_seen=now, t_decision=now,
                         seq=order_id)




def _binance(server: OrderServer, creds=None, **kw):
    creds = creds or load_credentials(BINANCE, server.creds_file)
    t = make_live_transport(BINANCE, network="testnet", credentials=creds, enable_live=True,
                            url=server.binance_url, ca_file=server.ca_file, **kw)
    t.start()
    return t


def _hl(server: OrderServer, creds=None, network: str = "testnet", **kw):
    creds = creds or load_credentials(HYPERLIQUID, server.creds_file)
    t = make_live_transport(HYPERLIQUID, network=network, credentials=creds, enable_live=True,
                            url=server.hyperliquid_url, ca_file=server.ca_file, **kw)
    t.start()
    return t


# --- Binance -------------------------------------------------------------------------------------------------

def test_binance_hmac_order_place_accepted(order_server: OrderServer) -> None:
    t = _binance(order_server)
    try:
        assert isinstance(t, Transport)
        res = t.send_msg(_order(11))
        assert res.outcome == wire.Outcome.SENT and res.t_sent > 0
        r = next_reply(t)
        assert (r.order_id, r.outcome, r.fill_qty, r.fill_px, r.venue_code) == (11, wire.Outcome.FILLED, 0.01,
                                                                                100_000.0, 0)
        orders.update_book("binance", 99_000.0, 1.0, 101_000.0, 1.0)
        t.send_msg(_order(12))  # buy 100000 < ask 101000: IOC expires
        assert next_reply(t).outcome == wire.Outcome.NOT_FILLED
        t.send_msg(_order(13, tif=wire.Tif.GTC))
        assert next_reply(t).outcome == wire.Outcome.SENT  # resting, acknowledged
        st = t.stats()
        assert st["sent"] == 3 and st["filled"] == 1 and st["not_filled"] == 1 and st["acked"] == 1
        assert st["in_flight"] == 0 and st["rejected"] == 0
        summary = t.summary()
        assert summary["counters"]["filled"] == 1 and summary["network"] == "testnet"
        assert order_server.api_key not in repr(summary) and order_server.hmac_secret not in repr(summary)
    finally:
        t.close()
    frame = order_server.frames[0]
    assert '"method":"order.place"' in frame and '"timeInForce":"IOC"' in frame and '"price":"100000.0"' in frame


@pytest.mark.parametrize("skew_ms", [-8_000, 0, 8_000])
def test_binance_requests_carry_the_venues_clock_measured_at_start(order_server: OrderServer, skew_ms: int) -> None:
    # The venue's clock is 8 s off ours, more than recvWindow (5 s): without the measured offset every order would
    # be refused -1021 ("outside of the recvWindow").
    orders.DESK.binance_clock_offset_ms = skew_ms
    t = _binance(order_server)
    try:
        assert abs(t.clock_offset_ms - skew_ms) < 1_000
        t.send_msg(_order(21))
        r = next_reply(t)
        assert r.outcome == wire.Outcome.FILLED and r.venue_code == 0, r
        assert t.summary()["clock_offset_ms"] == t.clock_offset_ms
    finally:
        t.close()
        orders.DESK.binance_clock_offset_ms = 0


def test_binance_ed25519_order_place_accepted(order_server: OrderServer) -> None:
    creds = BinanceCredentials(api_key=Secret(order_server.api_key), ed25519_key_file=order_server.ed25519_key_file)
    t = _binance(order_server, creds)
    try:
        t.send_msg(_order(21, side=-1, px=99_000.0))
        r = next_reply(t)
        assert r.outcome == wire.Outcome.FILLED and r.order_id == 21
    finally:
        t.close()


def test_binance_bad_signature_rejected(order_server: OrderServer) -> None:
    wrong = BinanceCredentials(api_key=Secret(order_server.api_key), hmac_secret=Secret("f" * 64))
    t = _binance(order_server, wrong)
    try:
        assert t.send_msg(_order(31)).outcome == wire.Outcome.SENT
        r = next_reply(t)
        assert (r.order_id, r.outcome, r.venue_code) == (31, wire.Outcome.VENUE_REJECTED, -1022)
        assert "Signature" in r.message and t.stats()["rejected"] == 1
    finally:
        t.close()


def test_binance_venue_rules_rejected(order_server: OrderServer) -> None:
    t = _binance(order_server, symbol="FOOUSDT")
    try:
        t.send_msg(_order(41))
        assert next_reply(t).venue_code == -1121
    finally:
        t.close()
    t = _binance(order_server, qty_decimals=4)
    try:
        t.send_msg(_order(42, qty=0.0105))
        assert next_reply(t).venue_code == -1111
    finally:
        t.close()


# --- Hyperliquid ---------------------------------------------------------------------------------------------

def test_hyperliquid_post_accepted(order_server: OrderServer) -> None:
    t = _hl(order_server)
    try:
        assert isinstance(t, Transport)
        assert t.address == Account.from_key(order_server.hl_private_key).address
        assert t.send_msg(_order(51, venue=wire.Venue.HYPERLIQUID, qty=0.001)).outcome == wire.Outcome.SENT
        r = next_reply(t)
        assert (r.order_id, r.outcome, r.fill_qty, r.fill_px) == (51, wire.Outcome.FILLED, 0.001, 100_000.0)
        orders.update_book("hyperliquid", 99_000.0, 1.0, 101_000.0, 0.0005)
        t.send_msg(_order(52, venue=wire.Venue.HYPERLIQUID, qty=0.001))
        assert next_reply(t).outcome == wire.Outcome.NOT_FILLED
        t.send_msg(_order(53, venue=wire.Venue.HYPERLIQUID, px=101_500.0, qty=0.001))
        r = next_reply(t)
        assert (r.outcome, r.fill_qty, r.fill_px) == (wire.Outcome.PARTIAL, 0.0005, 101_000.0)
        st = t.stats()
        assert (st["sent"], st["filled"], st["not_filled"], st["partial"]) == (3, 1, 1, 1)
    finally:
        t.close()
    assert '"method":"post"' in order_server.frames[0] and '"tif":"Ioc"' in order_server.frames[0]


def test_hyperliquid_mainnet_signature_accepted_when_desk_allows(order_server: OrderServer, tmp_path: Path) -> None:
    # Mainnet credentials, confirmed for this account (the local desk stands in for the venue, playing mainnet).
    orders.DESK.hyperliquid_network = "mainnet"
    creds = dataclasses.replace(load_credentials(HYPERLIQUID, order_server.creds_file), network="mainnet")
    confirm = tmp_path / "confirm"
    confirm.write_text(f"hyperliquid mainnet {creds.account_id}\n")
    os.chmod(confirm, 0o600)
    t = _hl(order_server, creds, network="mainnet", confirm_mainnet=confirm, allow_custom_mainnet_url=True)
    try:
        t.send_msg(_order(55, venue=wire.Venue.HYPERLIQUID, qty=0.001))
        assert next_reply(t).outcome == wire.Outcome.FILLED
    finally:
        t.close()


def test_hyperliquid_post_rejected(order_server: OrderServer) -> None:
    stranger = HyperliquidCredentials(private_key=Secret(Account.create().key.hex()))
    t = _hl(order_server, stranger)
    try:
        t.send_msg(_order(61, venue=wire.Venue.HYPERLIQUID, qty=0.001))
        r = next_reply(t)
        assert (r.order_id, r.outcome, r.venue_code) == (61, wire.Outcome.VENUE_REJECTED, CODE_ACTION_ERROR)
        assert "does not exist" in r.message
    finally:
        t.close()
    t = _hl(order_server)
    try:
        # a $1 order is below the venue's minimum value: refused before it is signed, never sent (issue 32)
        assert t.send_msg(_order(62, venue=wire.Venue.HYPERLIQUID, qty=0.00001)).outcome == wire.Outcome.SEND_FAILED
        assert t.stats()["below_minimum"] == 1 and t.stats()["sent"] == 0
        # an order the venue refuses for what only it knows (its book): an order error
        orders.update_book("hyperliquid", 99_000.0, 1.0, 101_000.0, 1.0)
        t.send_msg(_order(63, venue=wire.Venue.HYPERLIQUID, px=101_500.0, qty=0.001, tif=wire.Tif.ALO))
        r = next_reply(t)
        assert (r.order_id, r.outcome, r.venue_code) == (63, wire.Outcome.VENUE_REJECTED, CODE_ORDER_ERROR)
        assert "Post only order would have immediately matched" in r.message
        assert t.summary()["rejects_by_reason"] == {r.message: 1}
    finally:
        t.close()


# --- guards, failures, secrets ---------------------------------------------------------------------------------

def test_live_transports_refuse_to_start_without_explicit_enable_and_network(order_server: OrderServer) -> None:
    for name in ("binance", "hyperliquid"):
        creds = load_credentials(registry.get(name), order_server.creds_file)
        with pytest.raises(LiveConfigError, match="enable_live"):
            make_live_transport(registry.get(name), network="testnet", credentials=creds, url="wss://127.0.0.1:1")
        for network in (None, "", "prod", "Mainnet"):
            with pytest.raises(LiveConfigError, match="testnet' or 'mainnet'"):
                make_live_transport(registry.get(name), network=network, credentials=creds, enable_live=True)
    feed_only = dataclasses.replace(BINANCE, name="feedonly", code=250, order_entry=None)
    with pytest.raises(LiveConfigError, match="unknown live transport 'feedonly'"):
        make_live_transport(feed_only, network="testnet", credentials=None, enable_live=True)
    with pytest.raises(LiveConfigError, match="TLS"):
        make_live_transport(BINANCE, network="testnet", enable_live=True, url="ws://127.0.0.1:1/ws-fapi/v1",
                            credentials=load_credentials(BINANCE, order_server.creds_file))
    with pytest.raises(CredentialsError, match="needs BinanceCredentials"):
        make_live_transport(BINANCE, network="testnet", enable_live=True,
                            credentials=load_credentials(HYPERLIQUID, order_server.creds_file))


@pytest.mark.parametrize("name", ["binance", "hyperliquid"])
def test_credentials_are_bound_to_a_network_and_mainnet_needs_a_confirmation_file(order_server: OrderServer,
                                                                                  tmp_path: Path, name: str) -> None:
    url = order_server.binance_url if name == "binance" else order_server.hyperliquid_url
    testnet = load_credentials(registry.get(name), order_server.creds_file)  # no ``network`` key: testnet credentials
    with pytest.raises(LiveConfigError, match="these credentials are for testnet, not mainnet"):
        make_live_transport(registry.get(name), network="mainnet", credentials=testnet, enable_live=True, url=url,
                            ca_file=order_server.ca_file)
    doc = order_server.creds_file.read_text().replace(f"[{name}]\n", f'[{name}]\nnetwork = "mainnet"\n')
    mainnet_file = tmp_path / "mainnet.toml"
    mainnet_file.write_text(doc)
    os.chmod(mainnet_file, 0o600)
    mainnet = load_credentials(registry.get(name), mainnet_file)
    with pytest.raises(LiveConfigError, match="these credentials are for mainnet, not testnet"):
        make_live_transport(registry.get(name), network="testnet", credentials=mainnet, enable_live=True, url=url,
                            ca_file=order_server.ca_file)
    expected = f"{name} mainnet {mainnet.account_id}"
    with pytest.raises(LiveConfigError, match=f"write the line '{expected}'"):  # the error says exactly what to do
        make_live_transport(registry.get(name), network="mainnet", credentials=mainnet, enable_live=True, url=url,
                            ca_file=order_server.ca_file)
    confirm = tmp_path / "confirm"
    for text, mode, why in ((f"{name} mainnet someone-else\n", 0o600, "does not confirm this account"),
                            (expected + "\n", 0o644, "mode 0644")):
        confirm.write_text(text)
        os.chmod(confirm, mode)
        with pytest.raises(LiveConfigError, match=why):
            make_live_transport(registry.get(name), network="mainnet", credentials=mainnet, enable_live=True, url=url,
                                ca_file=order_server.ca_file, confirm_mainnet=confirm)
    confirm.write_text("# I mean it\n" + expected + "\n")
    os.chmod(confirm, 0o600)
    with pytest.raises(LiveConfigError, match="--allow-custom-mainnet-url"):  # the emulator is not mainnet's host
        make_live_transport(registry.get(name), network="mainnet", credentials=mainnet, enable_live=True, url=url,
                            ca_file=order_server.ca_file, confirm_mainnet=confirm)
    t = make_live_transport(registry.get(name), network="mainnet", credentials=mainnet, enable_live=True, url=url,
                            ca_file=order_server.ca_file, confirm_mainnet=confirm, allow_custom_mainnet_url=True)
    t.close()  # built (never started: the emulated desk here is not a mainnet)
    assert order_server.api_key not in expected and order_server.hl_private_key[-20:] not in expected


def test_world_readable_credentials_file_refused(order_server: OrderServer, tmp_path: Path) -> None:
    f = tmp_path / "open.toml"
    f.write_text(order_server.creds_file.read_text())
    os.chmod(f, 0o644)
    with pytest.raises(CredentialsError, match="with mode 0644; it must be owned by this user"):
        load_credentials(BINANCE, f)


def test_unreachable_venue_fails_start_clearly(order_server: OrderServer) -> None:
    from tests.fixtures.common import free_port

    url = f"wss://127.0.0.1:{free_port()}/ws-fapi/v1"
    t = make_live_transport(BINANCE, network="testnet", enable_live=True, url=url, ca_file=order_server.ca_file,
                            credentials=load_credentials(BINANCE, order_server.creds_file))
    with pytest.raises(LiveTransportError, match=r"cannot connect to wss://127\.0\.0\.1"):
        t.start()


def test_lost_connection_reports_in_flight_and_reconnects(order_server: OrderServer) -> None:
    t = _binance(order_server)
    try:
        order_server.drop_next.set()
        assert t.send_msg(_order(71)).outcome == wire.Outcome.SENT
        r = next_reply(t)
        assert (r.order_id, r.outcome) == (71, wire.Outcome.SEND_FAILED) and "state unknown" in r.message
        deadline = time.monotonic() + 10
        while t.stats()["reconnects"] < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        st = t.stats()
        assert st["disconnects"] == 1 and st["reconnects"] == 1 and st["lost_in_flight"] == 1
        t.send_msg(_order(72))
        assert next_reply(t).outcome == wire.Outcome.FILLED
    finally:
        t.close()
    assert t.send_msg(_order(73)).outcome == wire.Outcome.SEND_FAILED  # closed: fails at once, counted
    assert t.stats()["send_failed"] == 1


def test_secrets_never_in_logs(order_server: OrderServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)  # everything, including websockets' own loggers
    for name in ("websockets", "websockets.client", "caerus"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    try:
        b = _binance(order_server)
        h = _hl(order_server)
        wrong = _binance(order_server, BinanceCredentials(api_key=Secret(order_server.api_key),
                                                          hmac_secret=Secret("e" * 64)))
        try:
            b.send_msg(_order(81))
            h.send_msg(_order(82, venue=wire.Venue.HYPERLIQUID, qty=0.001))
            wrong.send_msg(_order(83))
            got = {next_reply(b).order_id, next_reply(h).order_id, next_reply(wrong).order_id}
            assert got == {81, 82, 83}
            shown = " ".join(repr(x) for x in (b, h, wrong, load_credentials(BINANCE, order_server.creds_file),
                                                load_credentials(HYPERLIQUID, order_server.creds_file)))
        finally:
            for t in (b, h, wrong):
                t.close()
    finally:
        for name in ("websockets", "websockets.client", "caerus"):
            logging.getLogger(name).setLevel(logging.NOTSET)
    text = caplog.text + shown
    assert "order-entry connection open" in caplog.text  # the capture works: our info lines are in it
    assert any(order_server.api_key in f for f in order_server.frames)  # the key was on the wire...
    for secret in (order_server.api_key, order_server.hmac_secret, order_server.hl_private_key,
                   order_server.hl_private_key[2:]):
        assert secret not in text  # ...and nowhere in the logs or reprs
    sigs = [f.split('"signature":"')[1][:40] for f in order_server.frames if '"signature":"' in f]
    assert sigs and not any(s in text for s in sigs)


def test_factory_takes_a_credentials_path_or_the_environment(order_server: OrderServer,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    t = make_live_transport(BINANCE, network="testnet", credentials=order_server.creds_file, enable_live=True,
                            url=order_server.binance_url, ca_file=order_server.ca_file)
    t.start()
    try:
        t.send_msg(_order(91))
        assert next_reply(t).outcome == wire.Outcome.FILLED
    finally:
        t.close()
    monkeypatch.setenv("CAERUS_HL_PRIVATE_KEY", order_server.hl_private_key)
    h = make_live_transport(HYPERLIQUID, network="testnet", enable_live=True, url=order_server.hyperliquid_url,
                            ca_file=order_server.ca_file)
    assert h.address == Account.from_key(order_server.hl_private_key).address
    monkeypatch.delenv("CAERUS_HL_PRIVATE_KEY")
    with pytest.raises(CredentialsError, match="CAERUS_HL_PRIVATE_KEY is not set"):
        make_live_transport(HYPERLIQUID, network="testnet", enable_live=True)


def test_hyperliquid_nonces_stay_above_a_crashed_runs_reservation(order_server: OrderServer, tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = _hl(order_server, state_dir=state)
    try:
        first.send_msg(_order(31, venue=wire.Venue.HYPERLIQUID))
        next_reply(first)
        reserved = first._nonces.reserved
        assert reserved > first._signer.last_nonce
    finally:
        first._session.close()  # a crash: the session dies, the clean-stop record is never written
    second = _hl(order_server, state_dir=state)
    try:
        second.send_msg(_order(32, venue=wire.Venue.HYPERLIQUID))
        r = next_reply(second)
        assert second._signer.last_nonce > reserved  # above everything the crashed run could have signed
        assert r.outcome != wire.Outcome.VENUE_REJECTED, r  # and the venue takes it (within a day ahead)
        # Idle work that stalled for the whole reservation: the order is refused, never signed with a reused nonce.
        second._nonces.reserved = second._signer.last_nonce
        assert second.send_msg(_order(33, venue=wire.Venue.HYPERLIQUID)).outcome == wire.Outcome.SEND_FAILED
        assert second.stats()["nonce_exhausted"] == 1
        second.pump(time.time_ns())  # the engine's idle work extends it
        assert second.send_msg(_order(34, venue=wire.Venue.HYPERLIQUID)).outcome == wire.Outcome.SENT
        next_reply(second)
    finally:
        second.close()
    assert int((state / f"hyperliquid-testnet-{second._signer.address.lower()}.nonce").read_text()) \
        == second._signer.last_nonce  # a clean stop records the last nonce used
