"""The emulator's REST before its market has produced anything (a client racing a busy machine's start-up):
answers in the venue's shape, never an error the real venue would not give."""

from __future__ import annotations

import email.message
import json

from caerus.sim.core.http import HttpRequest
from caerus.sim.hyperliquid.rest import HyperliquidRest


def _post(body: dict) -> HttpRequest:
    return HttpRequest("POST", "/info", {}, email.message.Message(), json.dumps(body).encode())  # type: ignore[arg-type]


def test_hyperliquid_info_before_the_first_block() -> None:
    rest = HyperliquidRest(lambda: None)
    mids = rest(_post({"type": "allMids"}))
    assert (mids.status, mids.body) == (200, {})
    book = rest(_post({"type": "l2Book", "coin": "BTC"}))
    assert book.status == 200 and book.body["levels"] == [[], []]
    meta, ctxs = rest(_post({"type": "metaAndAssetCtxs"})).body
    assert len(ctxs) == len(meta["universe"])  # one context per listed coin, in universe order
    assert meta["universe"][0]["name"] == "BTC" and all(ctx["midPx"] is None for ctx in ctxs)
