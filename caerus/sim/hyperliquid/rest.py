"""Hyperliquid HTTP API the emulator serves next to ``/ws``: ``POST /info`` and ``POST /exchange``.

``/info`` answers ``meta``, ``metaAndAssetCtxs``, ``spotMeta``, ``spotMetaAndAssetCtxs``, ``perpDexs``,
``allMids``, ``l2Book``, ``clearinghouseState``, ``openOrders``, ``frontendOpenOrders``, ``orderStatus`` and
``userFills`` in the documented shapes, from the same market the WebSocket publishes and the same order desk
that answered the orders. ``/exchange`` takes the signed action body the SDK posts and answers exactly what a
WebSocket ``post`` carries as its payload (caerus.sim.orders.hyperliquid_action). A body that does not
deserialize, or an unknown ``type``, is answered 422 as the venue does.

``meta`` lists every Hyperliquid coin of caerus.sim.core.catalogue in asset-index order; ``metaAndAssetCtxs`` has one
context per coin (a coin this session does not emulate shows no book), ``allMids`` every emulated coin's mid;
``l2Book`` every emulated coin's (null for a coin not listed, as the venue answers); ``userFills`` the ledger's
fills, ``userFees`` the fee tier the emulator charges (caerus.fees), ``fundingHistory`` hourly entries at the
current rate, ``exchangeStatus``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from caerus import fees
from caerus.sim.core import frames
from caerus.sim.core.desk import fee_tier
from caerus.sim.core.http import HttpReply, HttpRequest
from caerus.sim.core.tape import INTERVAL_MINUTES, TickerStats
from caerus.sim.hyperliquid.orders import (
    HL_ASSETS,
    HL_MAX_LEVERAGE,
    hyperliquid_action,
    hyperliquid_clearinghouse_state,
    hyperliquid_info_order,
    hyperliquid_open_orders,
    hyperliquid_user_fills,
)

if TYPE_CHECKING:
    from caerus.sim.core.driver import MarketDriver

DESERIALIZE = "Failed to deserialize the JSON body into the target type"
MAX_LEVERAGE = HL_MAX_LEVERAGE
FUNDING_INTERVAL_MS = 3_600_000  # hourly funding
FUNDING_HISTORY_MAX = 500  # entries per fundingHistory answer
def user_fees() -> dict[str, Any]:
    """``userFees``: the rates the emulator charges (the account's tier of caerus.fees: ``userCrossRate`` taker,
    ``userAddRate`` maker) and the perps schedule's tiers, no volume history."""
    tier = fee_tier("hyperliquid")
    base, *higher = fees.tiers("hyperliquid")
    return {
        "dailyUserVlm": [],
        "feeSchedule": {"cross": _rate(base.taker_rate), "add": _rate(base.maker_rate), "spotCross": "0.0007",
                        "spotAdd": "0.0004",
                        "tiers": {"vip": [{"ntlCutoff": f"{t.min_volume_usd:.1f}", "cross": _rate(t.taker_rate),
                                           "add": _rate(t.maker_rate)} for t in higher], "mm": []},
                        "referralDiscount": "0.04", "stakingDiscountTiers": []},
        "userCrossRate": _rate(tier.taker_rate), "userAddRate": _rate(tier.maker_rate), "userSpotCrossRate": "0.0007",
        "userSpotAddRate": "0.0004", "activeReferralDiscount": "0.0", "trial": None, "feeTrialReward": "0.0",
        "nextTrialAvailableTimestamp": None, "stakingLink": None,
        "activeStakingDiscount": {"bpsOfMaxSupply": "0.0", "discount": "0.0"}}


def _rate(rate: float) -> str:
    text = f"{rate:.8f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


USDC_TOKEN_ID = "0x6d1e7cde53ba9467b783cb7c530ce054"  # USDC's token id on Hyperliquid


def _unprocessable(why: str = "") -> HttpReply:
    return HttpReply(422, DESERIALIZE + (f": {why}" if why else ""), "text/plain")


def meta() -> dict[str, Any]:
    return {"universe": [{"name": a["coin"], "szDecimals": a["sz_decimals"], "maxLeverage": MAX_LEVERAGE,
                          "marginTableId": MAX_LEVERAGE} for a in HL_ASSETS.values()],
            "marginTables": [[MAX_LEVERAGE, {"description": "", "marginTiers": [
                {"lowerBound": "0.0", "maxLeverage": MAX_LEVERAGE}]}]],
            "collateralToken": 0}


def spot_meta() -> dict[str, Any]:
    """No spot pairs are emulated; USDC (the perps' collateral) is the one token."""
    return {"universe": [], "tokens": [{"name": "USDC", "szDecimals": 8, "weiDecimals": 8, "index": 0,
                                        "tokenId": USDC_TOKEN_ID, "isCanonical": True, "evmContract": None,
                                        "fullName": None}]}


class HyperliquidRest:
    def __init__(self, market: Callable[[], MarketDriver | None]) -> None:
        self._market = market
        self._info: dict[str, Callable[[dict[str, Any]], Any]] = {
            "meta": lambda r: meta(),
            "spotMeta": lambda r: spot_meta(),
            "metaAndAssetCtxs": lambda r: [meta(), [self._asset_ctx(a["coin"]) for a in HL_ASSETS.values()]],
            "spotMetaAndAssetCtxs": lambda r: [spot_meta(), []],
            "perpDexs": lambda r: [None],
            "allMids": lambda r: self._all_mids(),
            "l2Book": self._l2_book,
            "clearinghouseState": lambda r: hyperliquid_clearinghouse_state(time.time_ns() // 1_000_000),
            "openOrders": lambda r: hyperliquid_open_orders(),
            "frontendOpenOrders": lambda r: [o | {"orderType": "Limit", "reduceOnly": False, "isTrigger": False,
                                                  "triggerPx": "0.0", "triggerCondition": "N/A",
                                                  "isPositionTpsl": False}
                                             for o in hyperliquid_open_orders()],
            "orderStatus": self._order_status,
            "userFills": lambda r: hyperliquid_user_fills(),
            "userFillsByTime": lambda r: [f for f in hyperliquid_user_fills()
                                          if int(r.get("startTime") or 0) <= f["time"]
                                          <= int(r.get("endTime") or 2**62)],
            "userFees": lambda r: user_fees(),
            "exchangeStatus": lambda r: {"time": time.time_ns() // 1_000_000, "specialStatuses": None},
            "fundingHistory": self._funding_history,
            "candleSnapshot": self._candles,
        }

    def __call__(self, req: HttpRequest) -> HttpReply:
        if req.method != "POST" or req.path not in ("/info", "/exchange"):
            return HttpReply(404, f"no endpoint {req.method} {req.path}\n", "text/plain")
        try:
            body = req.json()
        except ValueError as exc:
            return _unprocessable(f"invalid JSON ({exc})")
        if req.path == "/exchange":
            answer = hyperliquid_action(body)
            return _unprocessable(answer) if isinstance(answer, str) else HttpReply(200, answer)
        if not isinstance(body, dict) or not isinstance(body.get("type"), str):
            return _unprocessable("missing field `type`")
        handler = self._info.get(body["type"])
        if handler is None:
            return _unprocessable(f"unknown variant `{body['type']}`")
        out = handler(body)
        return out if isinstance(out, HttpReply) else HttpReply(200, out)

    def _block(self) -> tuple[Any, Any]:
        """(driver, newest block with both sides), or (driver, None) before the first one: the venue always has
        a market, so early requests get an empty answer in the venue's shape, never an error."""
        drv = self._market()
        block = drv.last_block if drv is not None else None
        if block is None or block.bid is None or block.ask is None:
            return drv, None
        return drv, block

    def _coin_block(self, coin: str) -> tuple[Any, Any]:
        """(driver, newest block of ``coin`` with both sides) or (driver, None) (no book yet, or not emulated)."""
        drv = self._market()
        block = drv.block_of(coin) if drv is not None else None
        if block is None or block.bid is None or block.ask is None:
            return drv, None
        return drv, block

    def _all_mids(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for asset in HL_ASSETS.values():
            drv, block = self._coin_block(asset["coin"])
            mid = frames.hl_mid(block, drv.format_of(block.symbol)) if block is not None else None
            if mid is not None:
                out[asset["coin"]] = mid
        return out

    def _asset_ctx(self, coin: str) -> dict[str, Any]:
        drv, block = self._coin_block(coin)
        if block is None:  # no book (yet): the venue shows a null mid and no impact prices
            return dict(frames.HL_EMPTY_ASSET_CTX)
        tape = drv.hl_tape_of(coin, read=False)  # every coin's context is in metaAndAssetCtxs: a peek keeps nothing
        return frames.hl_asset_ctx(block, tape.stats if tape is not None else TickerStats(), drv.hl_marks_of(coin),
                                   drv.format_of(block.symbol))

    def _l2_book(self, req: dict[str, Any]) -> Any:
        coin = req.get("coin")
        if coin not in {a["coin"] for a in HL_ASSETS.values()}:
            return None  # the venue answers null for a coin it does not list
        drv, block = self._coin_block(str(coin))
        if block is None:
            return {"coin": coin, "time": time.time_ns() // 1_000_000, "levels": [[], []]}
        return json.loads(frames.hl_l2_book(block, block.t_ns, drv.epoch_ns, 20, drv.format_of(block.symbol)))["data"]

    def _candles(self, req: dict[str, Any]) -> Any:
        """``candleSnapshot`` ``{"req": {coin, interval, startTime, endTime}}``: bars from the coin's trade tape
        (kept from now on; a coin not emulated has none: ``[]``), oldest first, at most 5000."""
        raw = req.get("req")
        spec: dict[str, Any] = raw if isinstance(raw, dict) else {}
        coin, minutes = spec.get("coin"), INTERVAL_MINUTES.get(str(spec.get("interval")))
        if minutes is None or not isinstance(spec.get("startTime"), int):
            return _unprocessable("candleSnapshot needs req.coin, req.interval and req.startTime")
        drv = self._market()
        tape = drv.hl_tape_of(coin) if drv is not None and isinstance(coin, str) else None
        if drv is None or tape is None:
            return []
        end = spec["endTime"] * 1_000_000 if isinstance(spec.get("endTime"), int) else None
        bars = tape.bars_of(minutes, spec["startTime"] * 1_000_000, end)[-5000:]
        fmt = drv.format_of(drv.hl_index_of(str(coin)))
        return [frames.hl_candle_fields(b, spec["interval"], minutes, fmt) for b in bars]

    def _funding_history(self, req: dict[str, Any]) -> list[dict[str, Any]]:
        """The coin's settled funding hours in [startTime, endTime] (caerus.sim.core.marks: the session's own history;
        an hour settles at its end, with the rate its ``funding`` showed and the hour's average premium)."""
        coin = req.get("coin")
        if coin not in {a["coin"] for a in HL_ASSETS.values()}:
            return []
        drv = self._market()
        marks = drv.hl_marks_of(str(coin)) if drv is not None else None
        if marks is None:
            return []
        start, end = int(req.get("startTime") or 0), int(req.get("endTime") or time.time_ns() // 1_000_000)
        rows = [h for h in marks.history if start <= h.time_ms <= end][:FUNDING_HISTORY_MAX]
        return [{"coin": coin, "fundingRate": frames.hl_rate(h.rate), "premium": frames.hl_rate(h.premium),
                 "time": h.time_ms} for h in rows]

    def _order_status(self, req: dict[str, Any]) -> dict[str, Any]:
        answer = hyperliquid_info_order(req)
        assert answer is not None  # routed here by its type
        return answer

