"""Hyperliquid order handling in the emulator: signed actions (``POST /exchange``, the WebSocket ``post``) and the
order-related info answers, as the venue gives them, including its rejections.

Checked: request shape (``type: error``), action type (``order``, ``cancel``, ``cancelByCloid``, ``modify``,
``batchModify``, ``scheduleCancel`` at least 5 s ahead, ``updateLeverage``, and the user-signed ``usdSend`` and
``withdraw3``; any other is "Unsupported action type"), the EIP-712 signature recovering to the configured wallet
for the network this venue is (an L1 action's phantom-agent source "a" mainnet / "b" testnet, a user-signed
action's ``hyperliquidChain``; otherwise ``status: err`` "User or API Wallet 0x... does not exist." or the chain
named), vault, ``expiresAfter``, nonce freshness and reuse, then per order: asset, price, size,
the 80% band around the mark (caerus.sim.core.price_band), reduce-only against the position, minimum value; IOC / GTC /
ALO against the book. Resting orders fill when the market reaches them and ``scheduleCancel`` cancels every open
order at its time (:func:`on_book`). Signatures are checked by the emulator's own verifier (caerus.sim.core.verify).
State: the shared desk (caerus.sim.core.desk).
"""

from __future__ import annotations

import re
import time
from typing import Any

from caerus.sim.core import catalogue, price_band
from caerus.sim.core.desk import DESK, Book, book_fill, book_key, cross, decimal_of, forget_oldest, mark, position
from caerus.sim.core.ledger import hl_direction
from caerus.sim.core.verify import HL_USER_SIGNED, hyperliquid_signer, hyperliquid_user_signer

#: every coin the emulated Hyperliquid lists, by asset index (meta order)
HL_ASSETS: dict[int, dict[str, Any]] = {
    i.hl_asset: {"coin": i.name, "sz_decimals": i.sz_decimals} for i in catalogue.HYPERLIQUID
    if i.hl_asset is not None}


HL_MIN_NOTIONAL = 10.0
HL_MAX_LEVERAGE = 40  # every listed coin's maxLeverage in meta
HL_SCHEDULE_CANCEL_MIN_MS = 5000  # scheduleCancel's time must be at least 5 s ahead
HL_NONCE_PAST_MS = 2 * 24 * 3600 * 1000
HL_NONCE_FUTURE_MS = 24 * 3600 * 1000


_NEVER_PLACED = "Order was never placed, already canceled, or filled."


_HL_ADDRESS = re.compile(r"^0x[0-9a-fA-F]{40}$")


def on_book(key: str, book: Book) -> None:
    """A new top of book for ``key``: a due ``scheduleCancel`` cancels, then the resting orders it reaches fill."""
    if DESK.hl_open.get(key) or DESK.hl_dead_man_ms is not None:
        now_ms = time.time_ns() // 1_000_000
        _hl_dead_man(now_ms)
        _match_resting(key, book, now_ms)


def _match_resting(key: str, book: Book, now_ms: int) -> None:
    """Fill the resting orders the market moved through: a buy at or above the ask, a sell at or below the bid,
    at the order's own price (it was the maker), up to the touch's size."""
    for oid in sorted(DESK.hl_open[key]):
        rec = DESK.hl_orders.get(oid)
        if rec is None or rec["status"] != "open":
            DESK.hl_open[key].discard(oid)
            continue
        order = rec["order"]
        px, left = float(order["limitPx"]), float(order["sz"])
        is_buy = order["side"] == "B"
        if (is_buy and book.ask_px <= px) or (not is_buy and book.bid_px >= px):
            qty = min(left, book.ask_qty if is_buy else book.bid_qty)
            if qty <= 0:
                continue
            _hl_trade(order, px, qty, now_ms, crossed=False)
            order["sz"] = _hl_sz(left - qty, _sz_decimals(order["coin"]))
            if float(order["sz"]) <= 0:
                rec["status"], rec["statusTimestamp"] = "filled", now_ms
                DESK.hl_open[key].discard(oid)
                _hl_events(order, "filled", now_ms)


def _hl_dead_man(now_ms: int) -> None:
    """``scheduleCancel``: at its time every open order is canceled, and the schedule is spent."""
    if DESK.hl_dead_man_ms is not None and now_ms >= DESK.hl_dead_man_ms:
        DESK.hl_dead_man_ms = None
        for oids in DESK.hl_open.values():
            for oid in sorted(oids):
                _hl_cancel_oid(oid, None, now_ms, status="scheduledCancel")


def _hl_events(record: dict[str, Any], status: str, now_ms: int) -> None:
    """An ``orderUpdates`` event: the order's state."""
    DESK.events["hyperliquid"].append({"channel": "orderUpdates", "data": [
        {"order": record, "status": status, "statusTimestamp": now_ms}]})


def _hl_trade(record: dict[str, Any], px: float, qty: float, now_ms: int, *, crossed: bool) -> None:
    """Book one fill of a Hyperliquid order: the ledger, the fills history (``userFills``) and the stream event,
    with the venue's ``dir``, ``startPosition``, ``closedPnl`` (before the fee, as the venue reports it) and
    ``fee`` in USDC: the tier's taker rate when the order crossed, its maker rate when it rested."""
    coin = record["coin"]
    booked = book_fill("hyperliquid", record["side"] == "B", px, qty, coin, maker=not crossed)
    szd = _sz_decimals(coin)
    fill = {"coin": coin, "px": _hl_px(px, szd), "sz": _hl_sz(qty, szd), "side": record["side"], "time": now_ms,
            "startPosition": f"{booked.start:.{szd}f}", "dir": hl_direction(booked),
            "closedPnl": f"{booked.closed_pnl:.6f}", "hash": f"0x{record['oid']:064x}", "oid": record["oid"],
            "crossed": crossed, "fee": _hl_usd(booked.fee), "tid": next(DESK.trade_ids), "feeToken": "USDC",
            **({"cloid": record["cloid"]} if record["cloid"] else {})}
    DESK.ledger.fills["hyperliquid"].appendleft(fill)
    DESK.events["hyperliquid"].append({"channel": "userFills", "data": {"user": DESK.hyperliquid_address,
                                                                        "fills": [fill]}})
    DESK.events["hyperliquid"].append({"channel": "user", "data": {"fills": [fill]}})  # userEvents


def _sz_decimals(coin: str) -> int:
    inst = catalogue.BY_NAME.get(coin)
    return inst.sz_decimals if inst is not None else 5


def _hl_px(px: float, sz_decimals: int) -> str:
    """A Hyperliquid price: at most ``6 - szDecimals`` decimals, trailing zeros dropped (one kept)."""
    decimals = max(0, 6 - sz_decimals)
    text = f"{px:.{decimals}f}"
    if decimals == 0:
        return text
    text = text.rstrip("0")
    return text + "0" if text.endswith(".") else text


def _hl_usd(value: float) -> str:
    """A USDC amount as the venue prints a fill's fee: at most 6 decimals, trailing zeros dropped (one kept)."""
    text = f"{value:.6f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def _hl_sz(sz: float, sz_decimals: int) -> str:
    return f"{sz:.{sz_decimals}f}".rstrip("0").rstrip(".") if sz_decimals else f"{sz:.0f}"


def _hl(req_id: Any, response: dict[str, Any]) -> dict[str, Any]:
    return {"channel": "post", "data": {"id": req_id, "response": response}}


def _hl_request_error(req_id: Any, text: str) -> dict[str, Any]:
    return _hl(req_id, {"type": "error", "payload": text})


def _hl_recover(action: dict[str, Any], nonce: int, sig: dict[str, Any], vault: str | None,
                expires_after: int | None) -> str:
    """Who signed an L1 action for the network this venue is: the phantom agent's source is this network's, so an
    action signed for the other network recovers to some other address (refused as an unknown wallet, as the venue
    does)."""
    return hyperliquid_signer(action, nonce, sig, is_mainnet=DESK.hyperliquid_network == "mainnet",
                              vault_address=vault, expires_after=expires_after).lower()


def _hl_order_status(o: Any, now_ms: int) -> dict[str, Any]:
    if not isinstance(o, dict) or not {"a", "b", "p", "s", "r", "t"} <= o.keys():
        return {"error": "Invalid order: missing fields."}
    spec = HL_ASSETS.get(o["a"]) if isinstance(o["a"], int) else None
    if spec is None:
        return {"error": f"Invalid asset {o['a']!r}."}
    px, sz = decimal_of(o["p"]), decimal_of(o["s"])
    sz_decimals = int(spec["sz_decimals"])
    if px is None or not px.is_finite() or px <= 0 or int(px.as_tuple().exponent) < -(6 - sz_decimals) \
            or (px != px.to_integral_value() and len(px.normalize().as_tuple().digits) > 5):
        return {"error": "Order has invalid price."}
    if sz is None or not sz.is_finite() or sz <= 0 or int(sz.as_tuple().exponent) < -sz_decimals:
        return {"error": "Order has invalid size."}
    is_buy = bool(o["b"])
    coin = str(spec["coin"])
    band = price_band.hyperliquid_refusal(px, mark("hyperliquid", coin))
    if band is not None:
        return {"error": band}
    if o["r"] is True:  # reduce only: against the position, and no larger than it
        szi, _ = position("hyperliquid", coin)
        if szi == 0.0 or (szi > 0) == is_buy or float(sz) > abs(szi) + 1e-12:
            return {"error": f"Reduce only order would increase position. asset={o['a']}"}
    elif float(px) * float(sz) < HL_MIN_NOTIONAL:
        return {"error": f"Order must have minimum value of ${HL_MIN_NOTIONAL:.0f}. asset={o['a']}"}
    tif = (o["t"].get("limit") or {}).get("tif") if isinstance(o["t"], dict) else None
    if tif not in ("Ioc", "Gtc", "Alo"):
        return {"error": "Invalid order type."}
    fill = cross("hyperliquid", is_buy, float(px), float(sz), coin)
    if tif == "Alo" and fill is not None:
        book = DESK.books.get(book_key("hyperliquid", coin))
        bbo = f"{book.bid_px}@{book.ask_px}" if book else f"{px}"
        return {"error": f"Post only order would have immediately matched, bbo was {bbo}. asset={o['a']}"}
    if fill is None and tif == "Ioc":
        return {"error": f"Order could not immediately match against any resting orders. asset={o['a']}"}
    oid = next(DESK.ids)
    forget_oldest(DESK.hl_orders, DESK.hl_cloids)
    cloid = o.get("c") if isinstance(o.get("c"), str) else None
    record = {"coin": spec["coin"], "side": "B" if is_buy else "A", "limitPx": o["p"], "sz": o["s"], "oid": oid,
              "timestamp": now_ms, "origSz": o["s"], "cloid": cloid}
    if cloid is not None:
        DESK.hl_cloids[cloid.lower()] = oid
    if fill is None:
        DESK.hl_orders[oid] = {"order": record, "status": "open", "statusTimestamp": now_ms}
        DESK.hl_open[book_key("hyperliquid", coin)].add(oid)
        _hl_events(record, "open", now_ms)
        return {"resting": {"oid": oid}}
    fpx, fqty = fill
    # A partial fill: the rest of a Gtc order rests (open), an Ioc remainder is canceled.
    status = "filled" if fqty >= float(sz) else ("open" if tif == "Gtc" else "canceled")
    record["sz"] = _hl_sz(float(sz) - fqty, sz_decimals)
    DESK.hl_orders[oid] = {"order": record, "status": status, "statusTimestamp": now_ms}
    if status == "open":
        DESK.hl_open[book_key("hyperliquid", coin)].add(oid)
    _hl_events(record, status, now_ms)
    _hl_trade(record, fpx, fqty, now_ms, crossed=True)
    return {"filled": {"totalSz": _hl_sz(fqty, sz_decimals), "avgPx": _hl_px(fpx, sz_decimals), "oid": oid}}


def _hl_cancel_oid(oid: int | None, asset: int | None, now_ms: int, status: str = "canceled") -> str | dict[str, Any]:
    """Cancel one open order (``asset`` must be its coin's when given): "success", or the venue's error."""
    rec = DESK.hl_orders.get(oid) if oid is not None else None
    coin = HL_ASSETS[asset]["coin"] if asset in HL_ASSETS else None
    if rec is None or rec["status"] != "open" or (asset is not None and rec["order"]["coin"] != coin):
        return {"error": f"{_NEVER_PLACED} asset={asset}"}
    rec["status"], rec["statusTimestamp"] = status, now_ms
    assert oid is not None
    DESK.hl_open[book_key("hyperliquid", rec["order"]["coin"])].discard(oid)
    _hl_events(rec["order"], status, now_ms)
    return "success"


def _hl_oid(ref: Any) -> int | None:
    """An order reference of a cancel / modify: an oid, or a cloid (0x + 32 hex)."""
    if isinstance(ref, str):
        return DESK.hl_cloids.get(ref.lower())
    return ref if isinstance(ref, int) and not isinstance(ref, bool) else None


def _hl_modify(ref: Any, order: Any, now_ms: int) -> dict[str, Any]:
    """One modify: the open order is canceled and the new one placed (a new oid, as on the venue)."""
    oid = _hl_oid(ref)
    rec = DESK.hl_orders.get(oid) if oid is not None else None
    if rec is None or rec["status"] != "open":
        return {"error": "Cannot modify canceled or filled order"}
    if not isinstance(order, dict) or order.get("a") not in HL_ASSETS \
            or HL_ASSETS[order["a"]]["coin"] != rec["order"]["coin"]:
        return {"error": "Invalid order: missing fields."}
    _hl_cancel_oid(oid, None, now_ms)
    return _hl_order_status(order, now_ms)


def _hl_execute(action: dict[str, Any], now_ms: int) -> dict[str, Any]:
    """The signed, fresh action's effect and the venue's answer."""
    kind = action.get("type")
    if kind == "order":
        statuses = [_hl_order_status(o, now_ms) for o in action["orders"]]
        return {"status": "ok", "response": {"type": "order", "data": {"statuses": statuses}}}
    if kind == "cancel":
        out = [_hl_cancel_oid(_hl_oid(c.get("o")), c.get("a"), now_ms) if isinstance(c, dict)
               else {"error": _NEVER_PLACED} for c in action["cancels"]]
        return {"status": "ok", "response": {"type": "cancel", "data": {"statuses": out}}}
    if kind == "cancelByCloid":
        out = [_hl_cancel_oid(_hl_oid(c.get("cloid")), c.get("asset"), now_ms) if isinstance(c, dict)
               else {"error": _NEVER_PLACED} for c in action["cancels"]]
        return {"status": "ok", "response": {"type": "cancel", "data": {"statuses": out}}}
    if kind == "modify":
        status = _hl_modify(action.get("oid"), action.get("order"), now_ms)
        if "error" in status:
            return {"status": "err", "response": status["error"]}
        return {"status": "ok", "response": {"type": "default"}}
    if kind == "batchModify":
        statuses = [_hl_modify(m.get("oid"), m.get("order"), now_ms) if isinstance(m, dict)
                    else {"error": "Invalid order: missing fields."} for m in action["modifies"]]
        return {"status": "ok", "response": {"type": "order", "data": {"statuses": statuses}}}
    if kind == "scheduleCancel":
        when = action.get("time")
        if when is not None and when < now_ms + HL_SCHEDULE_CANCEL_MIN_MS:
            return {"status": "err", "response": "Scheduled cancel time too early, must be at least 5 seconds "
                                                 "from now."}
        DESK.hl_dead_man_ms = when
        return {"status": "ok", "response": {"type": "default"}}
    # updateLeverage (shape checked by _hl_shape_error)
    spec = HL_ASSETS[action["asset"]]
    if not 1 <= action["leverage"] <= HL_MAX_LEVERAGE:
        return {"status": "err", "response": f"Invalid leverage value. asset={action['asset']}"}
    DESK.ledger.leverage[book_key("hyperliquid", spec["coin"])] = (action["leverage"], action["isCross"])
    return {"status": "ok", "response": {"type": "default"}}


def _hl_shape_error(action: dict[str, Any]) -> str | None:
    """Why the action does not deserialize into one of the types this emulator executes (None: it does)."""
    kind = action.get("type")
    lists = {"order": "orders", "cancel": "cancels", "cancelByCloid": "cancels", "batchModify": "modifies"}
    if kind in lists:
        return None if isinstance(action.get(lists[kind]), list) and action[lists[kind]] else \
            f"Failed to deserialize the JSON body into the target type: {kind} needs a non-empty {lists[kind]}"
    if kind == "modify":
        return None if "oid" in action and isinstance(action.get("order"), dict) else \
            "Failed to deserialize the JSON body into the target type: modify needs oid and order"
    if kind == "scheduleCancel":
        t = action.get("time")
        return None if t is None or (isinstance(t, int) and not isinstance(t, bool)) else \
            "Failed to deserialize the JSON body into the target type: scheduleCancel time must be an integer"
    if kind == "updateLeverage":
        ok = action.get("asset") in HL_ASSETS and isinstance(action.get("isCross"), bool) \
            and isinstance(action.get("leverage"), int) and not isinstance(action.get("leverage"), bool)
        return None if ok else "Failed to deserialize the JSON body into the target type: updateLeverage needs " \
                               "asset, isCross and leverage"
    return "unsupported"


def hyperliquid_post_response(msg: dict[str, Any], *, now_ms: int | None = None) -> dict[str, Any]:
    """Hyperliquid's answer to one ``{"method":"post",...}`` frame (already JSON-decoded)."""
    req_id = msg.get("id") if isinstance(msg, dict) else None
    if not isinstance(msg, dict) or msg.get("method") != "post" or not isinstance(req_id, int):
        return _hl_request_error(req_id, "Invalid post request: expected {method: post, id: int, request}.")
    request = msg.get("request")
    if isinstance(request, dict) and request.get("type") == "info" and isinstance(request.get("payload"), dict):
        now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
        info = hyperliquid_info(request["payload"], now)
        if info is None:
            return _hl_request_error(req_id, "Only orderStatus, clearinghouseState and openOrders info requests are "
                                             "served over post by this emulator.")
        return _hl(req_id, {"type": "info", "payload": {"type": request["payload"]["type"], "data": info}})
    if not isinstance(request, dict) or request.get("type") != "action" or not isinstance(request.get("payload"),
                                                                                         dict):
        return _hl_request_error(req_id, "Only action and info requests are supported by this emulator.")
    answer = hyperliquid_action(request["payload"], now_ms=now_ms)
    if isinstance(answer, str):
        return _hl_request_error(req_id, answer)
    return _hl(req_id, {"type": "action", "payload": answer})


def hyperliquid_clearinghouse_state(now_ms: int) -> dict[str, Any]:
    """``clearinghouseState`` from the ledger: each coin's position (``szi`` signed) valued at the mark, its
    unrealised PnL and margin at the chosen leverage, and account value = start + realised PnL - fees paid - USDC
    sent out + unrealised PnL."""
    positions, notional, margin, upnl_total = [], 0.0, 0.0, 0.0
    for inst in catalogue.HYPERLIQUID:
        key = book_key("hyperliquid", inst.name)
        szi, entry = DESK.ledger.position(key)
        if szi == 0.0:
            continue
        m = mark("hyperliquid", inst.name) or entry
        lev, cross = DESK.ledger.leverage_of(key)
        value, upnl = abs(szi) * m, DESK.ledger.unrealised(key, m)
        used = value / lev
        notional, margin, upnl_total = notional + value, margin + used, upnl_total + upnl
        szd = inst.sz_decimals
        positions.append({"type": "oneWay", "position": {
            "coin": inst.name, "szi": f"{szi:.{szd}f}", "entryPx": f"{entry:.{max(0, 6 - szd)}f}",
            "positionValue": f"{value:.2f}", "unrealizedPnl": f"{upnl:.6f}",
            "returnOnEquity": f"{upnl / used if used else 0.0:.6f}", "liquidationPx": None,
            "marginUsed": f"{used:.6f}", "maxLeverage": HL_MAX_LEVERAGE,
            "leverage": {"type": "cross", "value": lev} if cross else {"type": "isolated", "value": lev,
                                                                        "rawUsd": f"{-szi * entry:.6f}"},
            "cumFunding": {"allTime": "0.0", "sinceOpen": "0.0", "sinceChange": "0.0"}}})
    value = DESK.ledger.wallet("hyperliquid") + upnl_total
    summary = {"accountValue": f"{value:.6f}", "totalNtlPos": f"{notional:.6f}",
               "totalRawUsd": f"{DESK.ledger.wallet('hyperliquid'):.6f}", "totalMarginUsed": f"{margin:.6f}"}
    return {"marginSummary": summary, "crossMarginSummary": summary,
            "crossMaintenanceMarginUsed": f"{margin / 2:.6f}", "withdrawable": f"{max(0.0, value - margin):.6f}",
            "assetPositions": positions, "time": now_ms}


def hyperliquid_user_fills() -> list[dict[str, Any]]:
    """``userFills``: the account's fills, newest first (at most 2000, as the venue answers)."""
    return list(DESK.ledger.fills["hyperliquid"])


def hyperliquid_open_orders() -> list[dict[str, Any]]:
    return [o["order"] for o in DESK.hl_orders.values() if o["status"] == "open"]


def hyperliquid_info(req: dict[str, Any], now_ms: int) -> Any:
    """The info answers an order client needs over a post (``orderStatus``, ``clearinghouseState``,
    ``openOrders``); None for any other type."""
    kind = req.get("type")
    if kind == "clearinghouseState":
        return hyperliquid_clearinghouse_state(now_ms)
    if kind == "openOrders":
        return hyperliquid_open_orders()
    return hyperliquid_info_order(req)


def hyperliquid_info_order(req: dict[str, Any]) -> dict[str, Any] | None:
    """The ``orderStatus`` info answer for ``{"type": "orderStatus", "user", "oid": int | cloid}`` (None when the
    request is not an orderStatus one): ``{"status": "order", "order": {...}}`` or ``{"status": "unknownOid"}``."""
    if req.get("type") != "orderStatus":
        return None
    oid = req.get("oid")
    if isinstance(oid, str):
        oid = DESK.hl_cloids.get(oid.lower())
    rec = DESK.hl_orders.get(oid) if isinstance(oid, int) and not isinstance(oid, bool) else None
    if rec is None:
        return {"status": "unknownOid"}
    return {"status": "order", "order": rec}


_HL_CHAIN = {"mainnet": "Mainnet", "testnet": "Testnet"}
_DECIMAL = re.compile(r"^[0-9]+(\.[0-9]+)?$")


def _hl_user_signed(action: dict[str, Any], nonce: int, sig: dict[str, Any],
                    now_ms: int | None) -> dict[str, Any] | str:
    """A user-signed action (``usdSend``, ``withdraw3``): USDC leaving the account, signed by the wallet itself over
    the action's fields with the network in ``hyperliquidChain``. Refused: an action for the other network, a
    signer that is not the wallet, a nonce that is not the action's ``time`` or is stale / reused, more than the
    account can withdraw."""
    chain, chain_id, amount = action.get("hyperliquidChain"), action.get("signatureChainId"), action.get("amount")
    dest, when = action.get("destination"), action.get("time")
    if not (isinstance(chain, str) and isinstance(chain_id, str) and re.fullmatch(r"0x[0-9a-fA-F]+", chain_id)
            and isinstance(amount, str) and _DECIMAL.match(amount) and isinstance(dest, str)
            and _HL_ADDRESS.match(dest) and isinstance(when, int) and not isinstance(when, bool)):
        return (f"Failed to deserialize the JSON body into the target type: {action.get('type')} needs "
                "hyperliquidChain, signatureChainId (hex), destination (an address), amount (a decimal string) and "
                "time (an integer)")
    expected = _HL_CHAIN[DESK.hyperliquid_network]
    if chain != expected:
        return {"status": "err", "response": f"Invalid hyperliquidChain {chain!r}: this is {expected}; the action "
                                             "was signed for another network."}
    try:
        signer = hyperliquid_user_signer(action, sig).lower()
    except Exception as exc:  # a malformed signature is answered, never raised
        return f"Invalid signature: {type(exc).__name__}"
    if DESK.hyperliquid_address is None or DESK.hyperliquid_address != signer:
        return {"status": "err", "response": f"User or API Wallet {signer} does not exist."}
    now_ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    if when != nonce:
        return {"status": "err", "response": f"Invalid nonce: the action's time {when} is not the nonce {nonce}."}
    if not (now_ms - HL_NONCE_PAST_MS < nonce < now_ms + HL_NONCE_FUTURE_MS):
        return {"status": "err", "response": f"Invalid nonce: {nonce} is outside the allowed window."}
    if nonce in DESK.seen_nonces:
        return {"status": "err", "response": f"Invalid nonce: duplicate nonce {nonce}."}
    withdrawable = float(hyperliquid_clearinghouse_state(now_ms)["withdrawable"])
    if float(amount) > withdrawable:
        return {"status": "err", "response": "Insufficient balance for withdrawal."}
    DESK.seen_nonces.add(nonce)
    DESK.ledger.sent["hyperliquid"] += float(amount)
    return {"status": "ok", "response": {"type": "default"}}


def hyperliquid_action(payload: Any, *, now_ms: int | None = None) -> dict[str, Any] | str:
    """The venue's answer to one signed action (the ``POST /exchange`` body, the WebSocket post's payload):
    ``{"status": "ok" | "err", "response": ...}``, or a str when the payload does not deserialize (HTTP 422)."""
    if not isinstance(payload, dict):
        return "Failed to deserialize the JSON body into the target type"
    action, nonce, sig = payload.get("action"), payload.get("nonce"), payload.get("signature")
    vault = payload.get("vaultAddress")
    expires_after = payload.get("expiresAfter")
    vault_ok = vault is None or (isinstance(vault, str) and _HL_ADDRESS.match(vault) is not None)
    expires_ok = expires_after is None or (isinstance(expires_after, int) and not isinstance(expires_after, bool))
    if not isinstance(action, dict) or isinstance(nonce, bool) or not isinstance(nonce, int) \
            or not isinstance(sig, dict) or not vault_ok or not expires_ok:
        return "Failed to deserialize the JSON body into the target type"
    if action.get("type") in HL_USER_SIGNED:
        return _hl_user_signed(action, nonce, sig, now_ms)
    shape = _hl_shape_error(action)
    if shape == "unsupported":
        return {"status": "err", "response": f"Unsupported action type {action.get('type')!r}."}
    if shape is not None:
        return shape
    try:
        signer = _hl_recover(action, nonce, sig, vault, expires_after)
    except Exception as exc:  # any malformed signature (eth-keys raises its own types too): answered, not raised
        return f"Invalid signature: {type(exc).__name__}"
    if DESK.hyperliquid_address is None or DESK.hyperliquid_address != signer:
        return {"status": "err", "response": f"User or API Wallet {signer} does not exist."}
    if vault is not None and vault.lower() not in DESK.hyperliquid_vaults:
        return {"status": "err", "response": f"Vault not registered: {vault.lower()}"}
    now_ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    if expires_after is not None and expires_after < now_ms:
        return {"status": "err", "response": f"Action expired: expiresAfter {expires_after} is before the "
                                             f"current time {now_ms}."}
    if not (now_ms - HL_NONCE_PAST_MS < nonce < now_ms + HL_NONCE_FUTURE_MS):
        return {"status": "err", "response": f"Invalid nonce: {nonce} is outside the allowed window."}
    if nonce in DESK.seen_nonces:
        return {"status": "err", "response": f"Invalid nonce: duplicate nonce {nonce}."}
    DESK.seen_nonces.add(nonce)
    _hl_dead_man(now_ms)
    return _hl_execute(action, now_ms)
