"""Signing cost per order for both venues: what ``send_msg`` spends turning an ORDER tuple into a signed request.

Measured per order (ns, perf_counter_ns around one call, GC off during each run like the engine's loop):
- ``binance.hmac`` / ``binance.ed25519``: the transport's ``build_request`` (params from the tuple, sorted query
  string, signature);
- ``hyperliquid.eip712``: the transport's ``build_request`` (price/size wire formatting, action, nonce, msgpack +
  keccak action hash, EIP-712 digest, secp256k1 signature);
- ``*.frame``: the same plus the JSON encode of the frame (everything but the socket write);
- ``hyperliquid.eip712.eth_account``: the slow reference path (the whole typed-data document through eth-account),
  to show what the per-order signer saves;
- in-run references: ``ref.sha256`` (hashlib SHA-256 of the same Binance payload) and ``ref.json_encode`` (msgspec
  JSON of the unsigned params). Ratios are against ``ref.sha256`` p50.
Goal: Hyperliquid signing p50 <= 200 us (the Rust reference signs in ~42 us). Keys are generated per run.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import os
import secrets
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import msgspec
import numpy as np

from benchmarks.common import add_common_args, at_most, emit, summarize
from caerus import wire
from caerus.execution.transports.live import make_live_transport
from caerus.venuekit.credentials import Secret
from caerus.venues.binance import SPEC as BINANCE
from caerus.venues.binance.credentials import BinanceCredentials
from caerus.venues.binance.signing import query_string
from caerus.venues.hyperliquid import SPEC as HYPERLIQUID
from caerus.venues.hyperliquid.credentials import HyperliquidCredentials
from caerus.venues.hyperliquid.signing import ecdsa_backend, sign_l1_action_reference

HL_GOAL_NS = 200_000


def _measure(fn: Callable[[int], object], n: int, warmup: int) -> np.ndarray:
    out = np.empty(n, dtype=np.int64)
    for i in range(warmup):
        fn(i)
    clock = time.perf_counter_ns
    gc.collect()
    gc.disable()
    try:
        for i in range(n):
            t0 = clock()
            fn(i)
            out[i] = clock() - t0
    finally:
        gc.enable()
    return out


def _order(i: int, venue: int) -> tuple:
    """An ORDER record as the engine unpacks it, built by field name (a layout change cannot shift a value)."""
    now = time.time_ns()
    fields = {"order_id": i, "strategy_id": 1, "venue": venue, "side": 1 if i & 1 else -1, "tif": wire.Tif.IOC,
              "reason": wire.OrderReason.BENCH, "trigger_venue": venue, "px": 97_000.0 + (i % 200) * 0.5,
              "qty": 0.001 + (i % 7) * 0.001, "trigger_seq": i, "trigger_t_recv": now, "trigger_t_publish": now,
              "t_seen": now, "t_decision": now, "seq": i, "symbol": 0}
    unknown = set(fields) - set(wire.ORDER.names)
    if unknown:
        raise SystemExit(f"signing: ORDER has no field(s) {sorted(unknown)}")
    return tuple(fields.get(name, 0.0 if code == "d" else 0) for name, code in wire.ORDER.fields)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.signing", description=__doc__.splitlines()[0])
    add_common_args(parser)
    args = parser.parse_args(argv)
    n = 3_000 if args.quick else 30_000
    n_ref = 200 if args.quick else 2_000
    warmup = 300

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from eth_account import Account

    with tempfile.TemporaryDirectory(prefix="caerus-bench-signing-") as tmp:
        ed_file = Path(tmp) / "ed25519.pem"
        ed_file.write_bytes(Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        os.chmod(ed_file, 0o600)
        api_key = Secret(secrets.token_hex(32))
        hl_key = Account.create().key.hex()
        common = {"network": "testnet", "enable_live": True, "url": "wss://127.0.0.1:9/unused"}  # never started
        b_hmac = make_live_transport(BINANCE, credentials=BinanceCredentials(
            api_key=api_key, hmac_secret=Secret(secrets.token_hex(32))), **common)
        b_ed = make_live_transport(BINANCE, credentials=BinanceCredentials(
            api_key=api_key, ed25519_key_file=ed_file), **common)
        hl = make_live_transport(HYPERLIQUID, credentials=HyperliquidCredentials(private_key=Secret(hl_key)),
                                 **common)

        b_orders = [_order(i, wire.Venue.BINANCE) for i in range(256)]
        h_orders = [_order(i, wire.Venue.HYPERLIQUID) for i in range(256)]
        encode = msgspec.json.Encoder().encode
        sample = b_hmac.build_request(b_orders[0], 1, 1_764_000_000_000)["params"]
        unsigned = {k: v for k, v in sample.items() if k != "signature"}
        payload = query_string(unsigned).encode()
        now_ms = time.time_ns() // 1_000_000

        runs: dict[str, tuple[Callable[[int], object], int]] = {
            "ref.sha256": (lambda i: hashlib.sha256(payload).hexdigest(), n),
            "ref.json_encode": (lambda i: encode(unsigned), n),
            "binance.hmac": (lambda i: b_hmac.build_request(b_orders[i & 255], i, now_ms), n),
            "binance.hmac.frame": (lambda i: encode(b_hmac.build_request(b_orders[i & 255], i, now_ms)), n),
            "binance.ed25519": (lambda i: b_ed.build_request(b_orders[i & 255], i, now_ms), n),
            "hyperliquid.eip712": (lambda i: hl.build_request(h_orders[i & 255], i, now_ms), n),
            "hyperliquid.eip712.frame": (lambda i: encode(hl.build_request(h_orders[i & 255], i, now_ms)), n),
        }
        ref_action = hl.build_request(h_orders[0], 1, now_ms)["request"]["payload"]["action"]
        runs["hyperliquid.eip712.eth_account"] = (
            lambda i: sign_l1_action_reference(hl_key, ref_action, None, now_ms + i, False), n_ref)

        metrics: dict[str, dict[str, float]] = {}
        for name, (fn, count) in runs.items():
            metrics[name] = summarize(_measure(fn, count, min(warmup, count)))

    ref = metrics["ref.sha256"]["p50"]
    ratios = {f"{k} / ref.sha256 (p50)": metrics[k]["p50"] / ref for k in metrics if not k.startswith("ref.")}
    ratios["hyperliquid.eip712.eth_account / hyperliquid.eip712 (p50)"] = (
        metrics["hyperliquid.eip712.eth_account"]["p50"] / metrics["hyperliquid.eip712"]["p50"])
    goals = [at_most("hyperliquid.eip712 p50", metrics["hyperliquid.eip712"]["p50"], HL_GOAL_NS)]
    emit("signing", metrics, ratios=ratios, goals=goals, quick=args.quick, json_path=args.json,
         extra={"ecdsa_backend": ecdsa_backend(), "rust_reference_hl_sign_ns": 42_000})
    print(f"secp256k1 signing backend: {ecdsa_backend()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
