"""Compatibility suite, issue 51: the pinned real clients, unmodified (base URL, CA file and test keys only), through
whole life cycles against a ``caerus venue-sim`` process over TLS: fees charged at the venues' base tier and
reported where the venues report them, a stop-triggered exit, a GTD expiry on the emulator's clock, a WebSocket API
order on a ``session.logon`` session, ccxt's ``watch_positions``, and actions signed for the other Hyperliquid
network refused.

Clients: Binance's ``binance-sdk-derivatives-trading-usds-futures``, ccxt pro ``binanceusdm`` and ``hyperliquid``,
``hyperliquid-python-sdk`` (versions pinned in the ``dev`` extra). Fees are checked against caerus.fees, the one
schedule the emulator charges: Binance regular 2.0 / 5.0 bps maker / taker, Hyperliquid tier 0 1.5 / 4.5 bps.

Prices come from the live emulated market, so a few steps retry when the market moved first, as a bot does: a stop
whose trigger the market passed while the order travelled (-2021), a post-only order the market crossed. Every wait
and retry is bounded (``WAIT_S``); each client is closed in a ``finally``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from eth_account import Account

from caerus import fees
from tests.fixtures.venue_sim import VenueSim
from tests.integration.sim.test_sim_compat_clients import (
    BINANCE_KEY,
    BINANCE_SECRET,
    WAIT_S,
    _binance_client,
    _ccxt_binance,
    _ccxt_hyperliquid,
    _mids,
    _run,
    https,
)

pytestmark = pytest.mark.integration

START = 100_000.0  # CAERUS_SIM_START_BALANCE's default
BN_TAKER, BN_MAKER = fees.tier("binance").taker_rate, fees.tier("binance").maker_rate  # 0.0005, 0.0002
HL_TAKER, HL_MAKER = fees.tier("hyperliquid").taker_rate, fees.tier("hyperliquid").maker_rate  # 0.00045, 0.00015
GTD_LEAD_S = 1  # --binance-gtd-min-lead: the venue's 600 s compressed


@pytest.fixture
def wallet() -> Any:
    return Account.from_key("0x" + "51" * 32)


@pytest.fixture
def ed25519_pem(tmp_path: Path) -> str:
    """An Ed25519 API key pair: the private key (PEM) the client signs with; the emulator gets the public key."""
    key = Ed25519PrivateKey.generate()
    pub = tmp_path / "binance-ed25519.pub.pem"
    pub.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                  serialization.PublicFormat.SubjectPublicKeyInfo))
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def _start(factory: Callable[..., VenueSim], monkeypatch: pytest.MonkeyPatch, wallet: Any, tmp_path: Path,
           **env: str) -> VenueSim:
    started = factory(args=("--binance-gtd-min-lead", str(GTD_LEAD_S)),
                      env={"CAERUS_SIM_BINANCE_API_KEY": BINANCE_KEY, "CAERUS_SIM_BINANCE_SECRET": BINANCE_SECRET,
                           "CAERUS_SIM_BINANCE_ED25519_PUBLIC_KEY_FILE": str(tmp_path / "binance-ed25519.pub.pem"),
                           "CAERUS_SIM_HL_ADDRESS": wallet.address, **env})
    for var in ("REQUESTS_CA_BUNDLE", "WEBSOCKET_CLIENT_CA_BUNDLE", "SSL_CERT_FILE"):
        monkeypatch.setenv(var, started["ca_file"])
    return started


@pytest.fixture
def sim(venue_sim_factory: Callable[..., VenueSim], monkeypatch: pytest.MonkeyPatch, wallet: Any, tmp_path: Path,
        ed25519_pem: str) -> VenueSim:
    """An emulator playing Hyperliquid testnet (the default) with the Binance key's HMAC secret and Ed25519 key."""
    return _start(venue_sim_factory, monkeypatch, wallet, tmp_path)


_EVENT_NAMES = {"AlgoUpdate": "ALGO_UPDATE", "OrderTradeUpdate": "ORDER_TRADE_UPDATE",
                "AccountUpdate": "ACCOUNT_UPDATE"}


def _raw(e: Any) -> dict[str, Any]:
    """A user-data event as the SDK delivered it, as a dict with its event type ``e`` (the SDK's models carry the
    type as their class, not as a field)."""
    inst = e.actual_instance if hasattr(e, "actual_instance") else e
    if not hasattr(inst, "to_dict"):
        return dict(inst)
    return {**inst.to_dict(), "e": _EVENT_NAMES.get(type(inst).__name__, type(inst).__name__)}


def _round_trip_settled(out: dict[str, Any], qty: float, currency: str, taker: float, pnl_key: str, *,
                        fee_abs: float, balance_abs: float) -> None:
    """A buy then a sell of ``qty`` (``out["trades"]``): each paid the taker fee in ``currency``, and the balance
    is the start plus the realised PnL (the venue's ``info[pnl_key]``) minus the fees."""
    assert [(t["side"], t["amount"]) for t in out["trades"]] == [("buy", qty), ("sell", qty)]
    for t in out["trades"]:
        assert t["fee"]["currency"] == currency and t["fee"]["cost"] == pytest.approx(t["cost"] * taker, abs=fee_abs)
    realised = sum(float(t["info"][pnl_key]) for t in out["trades"])
    paid = sum(t["fee"]["cost"] for t in out["trades"])
    assert out["balance"][currency]["total"] == pytest.approx(START + realised - paid, abs=balance_abs)


def _last_price(sim: VenueSim) -> float:
    """BTCUSDT's last trade (REST ticker/price): what a CONTRACT_PRICE stop watches."""
    import urllib.request

    url = https(sim["binance_url"]) + "/fapi/v1/ticker/price?symbol=BTCUSDT"
    with urllib.request.urlopen(url, context=sim.ssl_context(), timeout=10) as resp:
        return float(json.loads(resp.read())["price"])


async def _until(pred: Callable[[], bool], what: str) -> None:
    deadline = asyncio.get_running_loop().time() + WAIT_S
    while not pred():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{what}: not within {WAIT_S:.0f} s")
        await asyncio.sleep(0.05)


# -- Binance: binance-sdk-derivatives-trading-usds-futures ----------------------------------------------------------
def test_binance_sdk_life_cycle_pays_the_regular_tier_maker_and_taker_and_a_stop_exits(sim: VenueSim) -> None:
    """Open with a market buy (taker), add with a post-only buy the market reaches (maker), leave with a
    STOP_MARKET reduce-only algo order the market triggers (taker): every fill's commission is its notional times
    the tier's rate, on the user stream (``n``), in userTrades and in the wallet."""
    client = _binance_client(sim)
    listen_key = client.rest_api.start_user_data_stream().data().listen_key

    async def body() -> dict[str, Any]:
        events: list[Any] = []
        streams = await asyncio.wait_for(client.websocket_streams.create_connection(), WAIT_S)
        api = await asyncio.wait_for(client.websocket_api.create_connection(), WAIT_S)
        out: dict[str, Any] = {"events": events}
        try:
            (await streams.user_data(listen_key)).on("message", lambda e: events.append(_raw(e)))
            await asyncio.sleep(0.2)  # the subscription is acknowledged before the first order
            opened = (await api.new_order(symbol="BTCUSDT", side="BUY", type="MARKET", quantity=0.003)).data()
            assert opened.result.status == "FILLED", opened
            # a maker fill: a post-only buy at the bid, re-pegged (cancelled and placed again at the new bid) until
            # the market comes down to it; whatever part of it filled stays in the position
            deadline = asyncio.get_running_loop().time() + 2 * WAIT_S
            maker_id = None
            while maker_id is None:
                assert asyncio.get_running_loop().time() < deadline, "no maker fill"
                bid = float((await api.symbol_order_book_ticker(symbol="BTCUSDT")).data().actual_instance
                            .result.bid_price)
                placed = (await api.new_order(symbol="BTCUSDT", side="BUY", type="LIMIT", time_in_force="GTX",
                                              quantity=0.002, price=bid)).data()
                if isinstance(placed, dict):  # -5022: the market crossed it first
                    continue
                oid = placed.result.order_id

                def traded(oid: int = oid) -> bool:
                    return any(e.get("o", {}).get("i") == oid and e["o"]["x"] == "TRADE" for e in events)

                try:
                    await asyncio.wait_for(_until(traded, "maker"), 2.0)
                except TimeoutError:
                    pass
                await api.cancel_order(symbol="BTCUSDT", order_id=oid)  # the rest, if any (-2011 when filled)
                await asyncio.sleep(0.05)
                if traded():
                    maker_id = oid
            out["maker_id"] = maker_id
            # the stop: a little under the last trade (retried when the market passed it first: -2021); it closes
            # the whole position, whatever the maker leg filled
            for _ in range(50):
                stop = (await api.new_algo_order(algo_type="CONDITIONAL", symbol="BTCUSDT", side="SELL",
                                                 type="STOP_MARKET", close_position="true",
                                                 trigger_price=round(_last_price(sim) - 0.5, 1))).data()
                if not isinstance(stop, dict):
                    break
                assert stop["error"]["code"] == -2021, stop
            out["stop"] = stop.result
            await _until(lambda: any(e.get("e") == "ALGO_UPDATE" and e["o"]["X"] == "FINISHED" for e in events),
                         "the stop triggered and its order ended")
            await _until(lambda: any(e.get("e") == "ACCOUNT_UPDATE" and float(e["a"]["P"][0]["pa"]) == 0.0
                                     for e in events), "the position closed")
        finally:
            await asyncio.wait_for(api.close_connection(close_session=True), WAIT_S)
            await asyncio.wait_for(streams.close_connection(close_session=True), WAIT_S)
        return out

    out = asyncio.run(body())
    rest = client.rest_api
    trades = [t.to_dict() for t in rest.account_trade_list(symbol="BTCUSDT").data()]
    entry, *makers, exit_trade = trades
    assert (entry["side"], entry["maker"], exit_trade["side"], exit_trade["maker"]) == ("BUY", False, "SELL", False)
    assert makers and all(t["side"] == "BUY" and t["maker"] and t["orderId"] == out["maker_id"] for t in makers)
    for t in trades:
        rate = BN_MAKER if t["maker"] else BN_TAKER
        assert float(t["commission"]) == pytest.approx(float(t["price"]) * float(t["qty"]) * rate, abs=1e-8), t
        assert t["commissionAsset"] == "USDT"
    updates = [e["o"] for e in out["events"] if e.get("e") == "ORDER_TRADE_UPDATE" and e["o"]["x"] == "TRADE"]
    assert sorted(u["n"] for u in updates) == sorted(t["commission"] for t in trades)
    exit_fill = updates[-1]
    assert (exit_fill["o"], exit_fill["ot"], exit_fill["cp"]) == ("MARKET", "STOP_MARKET", True)
    assert float(exit_fill["z"]) == pytest.approx(0.003 + sum(float(t["qty"]) for t in makers))
    assert exit_fill["i"] == int(rest.query_algo_order(algo_id=out["stop"].algo_id).data().actual_order_id)
    paid = sum(float(t["commission"]) for t in trades)
    realised = sum(float(t["realizedPnl"]) for t in trades)
    balance = float(rest.futures_account_balance_v3().data()[0].balance)
    assert balance == pytest.approx(START + realised - paid, abs=1e-6) and paid > 0
    assert float(rest.position_information_v3(symbol="BTCUSDT").data()[0].position_amt) == 0.0
    rate = rest.user_commission_rate(symbol="BTCUSDT").data()
    assert float(rate.maker_commission_rate) == pytest.approx(BN_MAKER)
    assert float(rate.taker_commission_rate) == pytest.approx(BN_TAKER)


def test_binance_sdk_gtd_order_expires_on_the_emulators_clock(sim: VenueSim) -> None:
    """A GTD limit order rests, then expires at its goodTillDate without any market event (the venue's 600 s
    minimum lead is --binance-gtd-min-lead 1 here); one whose goodTillDate is too close is refused (-5040)."""
    client = _binance_client(sim)
    listen_key = client.rest_api.start_user_data_stream().data().listen_key
    below = round(sim.mid() * 0.97, 1)

    async def body() -> tuple[Any, Any, list[Any]]:
        events: list[Any] = []
        streams = await asyncio.wait_for(client.websocket_streams.create_connection(), WAIT_S)
        api = await asyncio.wait_for(client.websocket_api.create_connection(), WAIT_S)
        try:
            (await streams.user_data(listen_key)).on("message", lambda e: events.append(_raw(e)))
            await asyncio.sleep(0.2)
            now = int(time.time() * 1000)
            soon = (await api.new_order(symbol="BTCUSDT", side="BUY", type="LIMIT", time_in_force="GTD",
                                        quantity=0.003, price=below, good_till_date=now + 500)).data()
            placed = (await api.new_order(symbol="BTCUSDT", side="BUY", type="LIMIT", time_in_force="GTD",
                                          quantity=0.003, price=below, good_till_date=now + 3_000)).data()
            oid = placed.result.order_id
            await _until(lambda: any(e.get("o", {}).get("i") == oid and e["o"]["x"] == "EXPIRED" for e in events),
                         "the GTD order's EXPIRED event")
            return soon, placed, events
        finally:
            await asyncio.wait_for(api.close_connection(close_session=True), WAIT_S)
            await asyncio.wait_for(streams.close_connection(close_session=True), WAIT_S)

    soon, placed, events = asyncio.run(body())
    assert soon["error"] == {"code": -5040, "msg": f"The goodTillDate timestamp must be greater than the current "
                                                   f"time plus {GTD_LEAD_S} seconds and smaller than 253402300799000"}
    assert (placed.result.status, placed.result.time_in_force) == ("NEW", "GTD")
    assert placed.result.good_till_date % 1000 == 0  # the venue keeps whole seconds
    expired = [e["o"] for e in events if e.get("o", {}).get("i") == placed.result.order_id][-1]
    assert (expired["x"], expired["X"], expired["gtd"]) == ("EXPIRED", "EXPIRED", placed.result.good_till_date)
    assert client.rest_api.query_order(symbol="BTCUSDT", order_id=placed.result.order_id).data().status == "EXPIRED"


def test_binance_sdk_session_logon_then_unsigned_orders_depth_and_ticker_book(sim: VenueSim,
                                                                            ed25519_pem: str) -> None:
    """The SDK logs its connection on with its Ed25519 key (``session.logon``); its orders then go out unsigned and
    are the session's; ``depth`` and ``ticker.book`` answer on the same connection. An HMAC key cannot log on."""
    from binance_common.configuration import ConfigurationWebSocketAPI
    from binance_sdk_derivatives_trading_usds_futures.websocket_api.websocket_api import (
        DerivativesTradingUsdsFuturesWebSocketAPI,
    )

    ed_api = DerivativesTradingUsdsFuturesWebSocketAPI(ConfigurationWebSocketAPI(
        api_key=BINANCE_KEY, private_key=ed25519_pem, stream_url=sim["binance_order_url"],
        https_agent=sim.ssl_context()))
    below = round(sim.mid() * 0.97, 1)

    async def body() -> dict[str, Any]:
        out: dict[str, Any] = {}
        conn = await asyncio.wait_for(ed_api.create_connection(), WAIT_S)
        hmac_conn = await asyncio.wait_for(_binance_client(sim).websocket_api.create_connection(), WAIT_S)
        try:
            out["before"] = (await conn.send_message({"method": "session.status", "params": {}})).data()
            out["logon"] = (await conn.send_signed_message({"method": "session.logon", "params": {}},
                                                           signer=ed_api.signer, session_logon=True)).data()
            out["status"] = (await conn.send_message({"method": "session.status", "params": {}})).data()
            out["order"] = (await conn.new_order(symbol="BTCUSDT", side="BUY", type="LIMIT", time_in_force="GTC",
                                                 quantity=0.003, price=below)).data()
            out["depth"] = (await conn.order_book(symbol="BTCUSDT", limit=5)).data()
            out["book"] = (await conn.symbol_order_book_ticker(symbol="BTCUSDT")).data()
            out["hmac_logon"] = (await hmac_conn.send_signed_message({"method": "session.logon", "params": {}},
                                                                     session_logon=True)).data()
        finally:
            await asyncio.wait_for(conn.close_connection(close_session=True), WAIT_S)
            await asyncio.wait_for(hmac_conn.close_connection(close_session=True), WAIT_S)
        return out

    out = asyncio.run(body())
    assert out["before"]["result"]["apiKey"] is None
    assert out["logon"]["result"]["apiKey"] == BINANCE_KEY and out["status"]["result"]["apiKey"] == BINANCE_KEY
    assert out["order"].result.status == "NEW" and float(out["order"].result.price) == below
    depth = out["depth"].result.to_dict()
    assert len(depth["bids"]) == 5 and float(depth["bids"][0][0]) < float(depth["asks"][0][0])
    top = out["book"].actual_instance.result
    assert top.symbol == "BTCUSDT" and float(top.bid_price) < float(top.ask_price)
    assert out["hmac_logon"]["error"] == {"code": -1022, "msg": "Signature for this request is not valid."}


# -- ccxt pro binanceusdm -------------------------------------------------------------------------------------------
def test_ccxt_binanceusdm_life_cycle_fees_stop_exit_gtd_and_watch_positions(sim: VenueSim) -> None:
    async def body() -> dict[str, Any]:
        import ccxt

        ex = _ccxt_binance(sim, keys=True)
        out: dict[str, Any] = {}
        try:
            await ex.load_markets()
            out["fee"] = await ex.fetch_trading_fee("BTC/USDT:USDT")  # GET /fapi/v1/commissionRate
            out["snapshot"] = list(await ex.watch_positions(["BTC/USDT:USDT"]))  # the REST snapshot: flat
            watcher = asyncio.ensure_future(ex.watch_positions(["BTC/USDT:USDT"]))
            await ex.create_order("BTC/USDT:USDT", "market", "buy", 0.003)
            out["opened"] = list(await asyncio.wait_for(watcher, WAIT_S))  # ACCOUNT_UPDATE on the user stream
            for _ in range(50):  # a stop-loss under the last trade (ccxt routes it to the Algo Order API)
                try:
                    out["stop"] = await ex.create_order("BTC/USDT:USDT", "market", "sell", 0.003, None, {
                        "stopLossPrice": round(_last_price(sim) - 0.5, 1), "reduceOnly": True})
                    break
                except ccxt.ExchangeError as exc:  # -2021: the market passed it first
                    assert "-2021" in str(exc), exc
            deadline = asyncio.get_running_loop().time() + WAIT_S
            while True:  # watch_positions until the stop has closed the position
                left = deadline - asyncio.get_running_loop().time()
                positions = await asyncio.wait_for(ex.watch_positions(["BTC/USDT:USDT"]), max(left, 0.1))
                if all(not p["contracts"] for p in positions):
                    out["closed"] = list(positions)
                    break
            out["stop_after"] = await ex.fetch_order(out["stop"]["id"], "BTC/USDT:USDT", {"trigger": True})
            out["trades"] = await ex.fetch_my_trades("BTC/USDT:USDT")
            out["balance"] = await ex.fetch_balance()
            below = round(sim.mid() * 0.97, 1)
            gtd = await ex.create_order("BTC/USDT:USDT", "limit", "buy", 0.003, below, {
                "timeInForce": "GTD", "goodTillDate": int(time.time() * 1000) + 3_000})
            out["gtd"] = gtd
            while (o := await ex.fetch_order(gtd["id"], "BTC/USDT:USDT"))["status"] == "open":
                assert asyncio.get_running_loop().time() < deadline + WAIT_S, "the GTD order never expired"
                await asyncio.sleep(0.2)
            out["gtd_after"] = o
            return out
        finally:
            await ex.close()

    out = _run(body)
    assert out["fee"]["maker"] == pytest.approx(BN_MAKER) and out["fee"]["taker"] == pytest.approx(BN_TAKER)
    assert all(not p["contracts"] for p in out["snapshot"])
    (opened,) = [p for p in out["opened"] if p["contracts"]]
    assert (opened["side"], opened["contracts"]) == ("long", 0.003)
    assert out["stop"]["type"] == "market" and out["stop"]["triggerPrice"] is not None
    assert out["stop_after"]["info"]["algoStatus"] == "FINISHED" and out["stop_after"]["info"]["actualOrderId"]
    _round_trip_settled(out, 0.003, "USDT", BN_TAKER, "realizedPnl", fee_abs=1e-8, balance_abs=1e-6)
    assert out["gtd"]["status"] == "open" and out["gtd_after"]["status"] == "expired"


# -- Hyperliquid: hyperliquid-python-sdk and ccxt -------------------------------------------------------------------
def test_hyperliquid_sdk_life_cycle_pays_tier_0_maker_and_taker(sim: VenueSim, wallet: Any) -> None:
    """market_open (taker), a post-only buy the market reaches (maker), market_close (taker): each fill's ``fee`` is
    its notional times the tier's rate, as ``userFees`` reports it, and the account value is net of them."""
    from hyperliquid.exchange import Exchange
    from hyperliquid.info import Info

    base = https(sim["hyperliquid_url"])
    info = Info(base, skip_ws=True)
    exchange = Exchange(wallet, base)  # signs for testnet: the emulator's URL is not mainnet's
    rates = info.user_fees(wallet.address)
    assert float(rates["userCrossRate"]) == pytest.approx(HL_TAKER)
    assert float(rates["userAddRate"]) == pytest.approx(HL_MAKER)
    opened = exchange.market_open("BTC", True, 0.001)
    assert "filled" in opened["response"]["data"]["statuses"][0], opened
    deadline = time.monotonic() + 2 * WAIT_S
    maker_oid = None
    while maker_oid is None:  # a post-only buy at the bid, re-pegged until the market comes down to it
        assert time.monotonic() < deadline, "no maker fill"
        bid = float(info.l2_snapshot("BTC")["levels"][0][0]["px"])
        placed = exchange.order("BTC", True, 0.001, bid, {"limit": {"tif": "Alo"}})["response"]["data"]
        status = placed["statuses"][0]
        if "resting" not in status:
            continue  # the market crossed it first
        oid = status["resting"]["oid"]
        until = time.monotonic() + 3.0
        while time.monotonic() < until and info.query_order_by_oid(wallet.address, oid)["order"]["status"] == "open":
            time.sleep(0.1)
        exchange.cancel("BTC", oid)  # the rest, if any (an error when it filled)
        if any(f["oid"] == oid for f in info.user_fills(wallet.address)):
            maker_oid = oid
    closed = exchange.market_close("BTC")
    assert "filled" in closed["response"]["data"]["statuses"][0], closed
    fills = list(reversed(info.user_fills(wallet.address)))
    entry, *makers, exit_fill = fills
    assert (entry["dir"], entry["crossed"], exit_fill["dir"], exit_fill["crossed"]) == ("Open Long", True,
                                                                                      "Close Long", True)
    assert makers and all(f["oid"] == maker_oid and not f["crossed"] and f["dir"] == "Open Long" for f in makers)
    for f in fills:
        rate = HL_TAKER if f["crossed"] else HL_MAKER
        assert float(f["fee"]) == pytest.approx(float(f["px"]) * float(f["sz"]) * rate, abs=1e-6)
        assert f["feeToken"] == "USDC"
    paid = sum(float(f["fee"]) for f in fills)
    realised = sum(float(f["closedPnl"]) for f in fills)  # before fees, as the venue reports it
    state = info.user_state(wallet.address)
    assert state["assetPositions"] == [] and paid > 0
    assert float(state["marginSummary"]["accountValue"]) == pytest.approx(START + realised - paid, abs=1e-5)


def test_ccxt_hyperliquid_life_cycle_fees_on_testnet(sim: VenueSim, wallet: Any) -> None:
    async def body() -> dict[str, Any]:
        ex = _ccxt_hyperliquid(sim, wallet)  # ccxt's testnet switch: the emulator plays testnet
        try:
            await ex.load_markets()
            out: dict[str, Any] = {"fee": await ex.fetch_trading_fee("BTC/USDC:USDC")}  # POST /info userFees
            book = await ex.watch_order_book("BTC/USDC:USDC")
            mid = (book["bids"][0][0] + book["asks"][0][0]) / 2
            await ex.create_order("BTC/USDC:USDC", "market", "buy", 0.001, mid)
            await ex.create_order("BTC/USDC:USDC", "market", "sell", 0.001, mid, {"reduceOnly": True})
            out["trades"] = await ex.fetch_my_trades("BTC/USDC:USDC")
            out["balance"] = await ex.fetch_balance()
            return out
        finally:
            await ex.close()

    out = _run(body)
    assert out["fee"]["taker"] == pytest.approx(HL_TAKER) and out["fee"]["maker"] == pytest.approx(HL_MAKER)
    _round_trip_settled(out, 0.001, "USDC", HL_TAKER, "closedPnl", fee_abs=1e-6, balance_abs=1e-5)


def test_hyperliquid_actions_signed_for_the_other_network_are_refused(
        venue_sim_factory: Callable[..., VenueSim], monkeypatch: pytest.MonkeyPatch, wallet: Any, tmp_path: Path,
        ed25519_pem: str, sim: VenueSim) -> None:
    """The emulator plays one network. On testnet (``sim``): ccxt left on mainnet (no sandbox mode) signs its order
    for mainnet and is refused as the venue refuses it; the SDK's testnet usdSend goes through. On an emulator
    playing mainnet: the SDK (which signs for testnet against any URL but mainnet's) is refused for its order and
    for its usdSend (the chain named); ccxt on mainnet is accepted there."""
    from hyperliquid.exchange import Exchange
    from hyperliquid.info import Info

    async def ccxt_order(target: VenueSim, testnet: bool) -> Any:
        ex = _ccxt_hyperliquid(target, wallet, testnet=testnet)
        try:
            await ex.load_markets()
            mid = float((await ex.fetch_ticker("BTC/USDC:USDC"))["last"] or 0) or float(_mids(Info(
                https(target["hyperliquid_url"]), skip_ws=True))["BTC"])
            return await ex.create_order("BTC/USDC:USDC", "limit", "buy", 0.001, round(mid * 0.9))
        except Exception as exc:  # the venue's refusal, as ccxt raises it
            return exc
        finally:
            await ex.close()

    testnet_base = https(sim["hyperliquid_url"])
    refused = asyncio.run(asyncio.wait_for(ccxt_order(sim, testnet=False), 4 * WAIT_S))
    assert isinstance(refused, Exception) and "User or API Wallet 0x" in str(refused)
    assert wallet.address.lower() not in str(refused).lower()
    before = float(Info(testnet_base, skip_ws=True).user_state(wallet.address)["marginSummary"]["accountValue"])
    sent = Exchange(wallet, testnet_base).usd_transfer(12.5, "0x" + "cd" * 20)
    assert sent == {"status": "ok", "response": {"type": "default"}}, sent
    after = float(Info(testnet_base, skip_ws=True).user_state(wallet.address)["marginSummary"]["accountValue"])
    assert after == pytest.approx(before - 12.5, abs=1e-6)

    mainnet = _start(venue_sim_factory, monkeypatch, wallet, tmp_path, CAERUS_SIM_HL_NETWORK="mainnet")
    base = https(mainnet["hyperliquid_url"])
    mid = float(_mids(Info(base, skip_ws=True))["BTC"])
    sdk = Exchange(wallet, base)
    order = sdk.order("BTC", True, 0.001, round(mid * 0.9), {"limit": {"tif": "Gtc"}})
    assert order["status"] == "err" and order["response"].startswith("User or API Wallet 0x"), order
    assert wallet.address.lower() not in order["response"].lower()
    send = sdk.usd_transfer(1.0, "0x" + "cd" * 20)
    assert send["status"] == "err" and "hyperliquidChain 'Testnet'" in send["response"] and "Mainnet" in \
        send["response"], send
    accepted = asyncio.run(asyncio.wait_for(ccxt_order(mainnet, testnet=False), 4 * WAIT_S))
    assert not isinstance(accepted, Exception) and accepted["info"]["resting"]["oid"], accepted
