"""benchmarks.signing builds its orders by the ORDER layout's field names and runs every signer on them."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import signing
from caerus import wire


def test_the_benchmark_order_is_a_full_order_record_by_name() -> None:
    order = signing._order(3, wire.Venue.HYPERLIQUID)
    assert len(order) == len(wire.ORDER.fields)
    by_name = dict(zip(wire.ORDER.names, order, strict=True))
    assert by_name["order_id"] == 3 and by_name["symbol"] == 0 and by_name["venue"] == wire.Venue.HYPERLIQUID
    assert by_name["px"] > 0 and by_name["qty"] > 0 and by_name["side"] == 1
    wire.ORDER.struct.pack(*order)  # every value fits its field


def test_every_signer_runs_and_the_goal_is_reported(tmp_path: Path) -> None:
    out = tmp_path / "signing.json"
    assert signing.main(["--quick", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert {"binance.hmac", "binance.ed25519", "hyperliquid.eip712", "hyperliquid.eip712.frame",
            "hyperliquid.eip712.eth_account"} <= set(doc["metrics"])
    assert all(m["n"] > 0 for m in doc["metrics"].values())
    assert doc["goals"] and "hyperliquid.eip712 p50" in json.dumps(doc["goals"])
