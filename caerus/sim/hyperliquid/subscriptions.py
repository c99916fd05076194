"""What a Hyperliquid WebSocket subscription is, as the emulator reads one: the keys each channel defines (as
Hyperliquid documents them), the type each key's value must have, and :func:`normalise`, which turns the object a
client sent into the one the emulator keeps.

Only the keys a channel defines are kept, so a client cannot park megabytes in a subscription by adding keys the
venue ignores (issue 44), and two objects differing only in such keys are the same subscription. A ``user`` must
be an address (``0x`` and 40 hex digits), not any string. Whether a coin is listed and emulated, or an interval
exists, is the server's question (caerus.sim.hyperliquid.server.refusal), asked after this.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")


def is_address(value: object) -> bool:
    """A Hyperliquid address: ``0x`` and exactly 40 hex digits (either case), nothing around it."""
    return isinstance(value, str) and _ADDRESS.fullmatch(value) is not None


def _text(v: object) -> bool:
    return isinstance(v, str)


def _int_or_null(v: object) -> bool:
    return v is None or (isinstance(v, int) and not isinstance(v, bool))


def _bool(v: object) -> bool:
    return isinstance(v, bool)


#: a key's check and what the refusal says it must be
_Check = tuple[Callable[[object], bool], str]
COIN: _Check = (_text, "a coin name (a string)")
USER: _Check = (is_address, "an address (0x and 40 hex digits)")
TEXT: _Check = (_text, "a string")
INT_OR_NULL: _Check = (_int_or_null, "an integer or null")
BOOL: _Check = (_bool, "true or false")

#: channel type -> {key: (check, required)}: every key each subscription type carries, in Hyperliquid's docs'
#: order (``fast`` on ``l2Book`` is the 0.5 s / 5-level book this emulator serves, see caerus.sim.hyperliquid.server)
CHANNEL_KEYS: dict[str, dict[str, tuple[_Check, bool]]] = {
    "allMids": {"dex": (TEXT, False)},
    "bbo": {"coin": (COIN, True)},
    "l2Book": {"coin": (COIN, True), "nSigFigs": (INT_OR_NULL, False), "mantissa": (INT_OR_NULL, False),
               "fast": (BOOL, False)},
    "trades": {"coin": (COIN, True)},
    "candle": {"coin": (COIN, True), "interval": (TEXT, True)},
    "activeAssetCtx": {"coin": (COIN, True)},
    "activeAssetData": {"user": (USER, True), "coin": (COIN, True)},
    "notification": {"user": (USER, True)},
    "webData2": {"user": (USER, True)},
    "orderUpdates": {"user": (USER, True)},
    "userEvents": {"user": (USER, True)},
    "userFills": {"user": (USER, True), "aggregateByTime": (BOOL, False)},
    "userFundings": {"user": (USER, True)},
    "userNonFundingLedgerUpdates": {"user": (USER, True)},
}


def normalise(subscription: object) -> dict[str, Any] | str:
    """The subscription as kept (``type`` and the keys its channel defines, unknown keys dropped), or why it is
    refused: not an object, an unknown type, a required key missing, or a key's value of the wrong kind."""
    if not isinstance(subscription, dict):
        return "the subscription must be an object"
    kind = subscription.get("type")
    keys = CHANNEL_KEYS.get(kind) if isinstance(kind, str) else None
    if keys is None:
        return f"unknown subscription type {json.dumps(kind)[:80]}"
    out: dict[str, Any] = {"type": kind}
    for name, ((check, must_be), required) in keys.items():
        if name not in subscription:
            if required:
                return f"missing {name}"
            continue
        value = subscription[name]
        if not check(value):
            return f"{name} must be {must_be}, got {json.dumps(value)[:80]}"
        out[name] = value
    return out


def sub_id(subscription: dict[str, Any]) -> str:
    """The key one connection's subscriptions are held by: the normalised object, canonically encoded."""
    return json.dumps(subscription, sort_keys=True, separators=(",", ":"))
