"""Binance signing known-answer tests: the documented USD-M HMAC example and an Ed25519 round trip."""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from caerus.venues.binance.signing import (
    BinanceEd25519Signer,
    BinanceHmacSigner,
    query_string,
    sign_params,
    verify_params,
)

# Binance USD-M futures "General Info", SIGNED endpoint example (POST /fapi/v1/order, HMAC keys): these key
# values are Binance's published documentation examples, not credentials.
DOC_SECRET = "2b5eb11e18796d12d88f13dc27dbbd02c2cc51ff7059765ed9821957d82bb4d9"
DOC_PAYLOAD = ("symbol=BTCUSDT&side=BUY&type=LIMIT&quantity=1&price=9000&timeInForce=GTC&recvWindow=5000"
               "&timestamp=1591702613943")
DOC_SIGNATURE = "3c661234138461fcc7a7d8746c6558c9842d4e10870d2ecbedf7777cad694af9"
DOC_PARAMS = {"symbol": "BTCUSDT", "side": "BUY", "type": "LIMIT", "timeInForce": "GTC", "quantity": "1",
              "price": "9000", "recvWindow": 5000, "timestamp": 1591702613943}


def test_hmac_matches_documented_example() -> None:
    assert BinanceHmacSigner(DOC_SECRET).sign(DOC_PAYLOAD) == DOC_SIGNATURE


def test_query_string_sorts_by_name_and_skips_signature() -> None:
    qs = query_string({**DOC_PARAMS, "signature": "zzz", "apiKey": "k"})
    assert qs == ("apiKey=k&price=9000&quantity=1&recvWindow=5000&side=BUY&symbol=BTCUSDT&timeInForce=GTC"
                  "&timestamp=1591702613943&type=LIMIT")
    assert "signature" not in qs


def test_ws_api_signature_is_over_sorted_params() -> None:
    params = sign_params(dict(DOC_PARAMS), BinanceHmacSigner(DOC_SECRET))
    # Same key, same params, but sorted: a different (and checkable) HMAC than the REST example's order.
    assert params["signature"] == BinanceHmacSigner(DOC_SECRET).sign(query_string(DOC_PARAMS))
    assert params["signature"] != DOC_SIGNATURE
    assert verify_params(params, hmac_secret=DOC_SECRET)
    assert verify_params({**params, "signature": params["signature"].upper()}, hmac_secret=DOC_SECRET)


def test_hmac_rejects_tampered_params_and_wrong_secret() -> None:
    params = sign_params(dict(DOC_PARAMS), BinanceHmacSigner(DOC_SECRET))
    assert not verify_params({**params, "quantity": "2"}, hmac_secret=DOC_SECRET)
    assert not verify_params(params, hmac_secret="0" * 64)
    assert not verify_params({k: v for k, v in params.items() if k != "signature"}, hmac_secret=DOC_SECRET)


def test_booleans_are_signed_as_json_literals() -> None:
    assert query_string({"reduceOnly": True, "a": False}) == "a=false&reduceOnly=true"


def test_ed25519_round_trip() -> None:
    key = Ed25519PrivateKey.generate()
    signer = BinanceEd25519Signer(key)
    params = sign_params(dict(DOC_PARAMS), signer)
    sig = base64.b64decode(params["signature"], validate=True)
    assert len(sig) == 64
    key.public_key().verify(sig, query_string(DOC_PARAMS).encode())  # raises if wrong
    assert verify_params(params, ed25519_public_key=key.public_key())
    assert not verify_params({**params, "price": "9001"}, ed25519_public_key=key.public_key())
    other = Ed25519PrivateKey.generate().public_key()
    assert not verify_params(params, ed25519_public_key=other)


def test_ed25519_is_deterministic() -> None:
    signer = BinanceEd25519Signer(Ed25519PrivateKey.generate())
    assert signer.sign(DOC_PAYLOAD) == signer.sign(DOC_PAYLOAD)


def test_signers_never_show_keys() -> None:
    assert DOC_SECRET not in repr(BinanceHmacSigner(DOC_SECRET))
    assert "redacted" in repr(BinanceEd25519Signer(Ed25519PrivateKey.generate()))
    with pytest.raises(ValueError, match="empty"):
        BinanceHmacSigner("")
