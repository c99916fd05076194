"""Binance USD-M WebSocket API request signing.

The signature payload is every request param except ``signature``, sorted by name, joined as ``k=v`` with ``&``
(the docs: "taking all request params except for the signature and sorting them by name"). HMAC keys sign it with
HMAC-SHA256 (lower-case hex); Ed25519 keys sign its ASCII bytes (base64). Values are used as they will appear in
the JSON frame: strings as-is, integers in decimal, booleans as ``true``/``false``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from typing import Protocol

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey


def _value(v: object) -> str:
    if v is True:
        return "true"
    if v is False:
        return "false"
    return str(v)


def query_string(params: dict[str, object]) -> str:
    """The signature payload: params except ``signature``, sorted by name, as ``k=v&k=v``."""
    return "&".join(f"{k}={_value(params[k])}" for k in sorted(params) if k != "signature")


class BinanceSigner(Protocol):
    kind: str  # "hmac" | "ed25519"

    def sign(self, payload: str) -> str: ...


class BinanceHmacSigner:
    """HMAC-SHA256 over the payload with the API secret; lower-case hex."""

    kind = "hmac"
    __slots__ = ("_key",)

    def __init__(self, secret: str | bytes) -> None:
        if not secret:
            raise ValueError("Binance HMAC secret is empty")
        self._key = secret.encode() if isinstance(secret, str) else bytes(secret)

    def sign(self, payload: str) -> str:
        return hmac.new(self._key, payload.encode(), hashlib.sha256).hexdigest()

    def verify(self, payload: str, signature: str) -> bool:
        # HMAC signatures are not case-sensitive (Binance docs); compare in constant time.
        return hmac.compare_digest(self.sign(payload), signature.lower())

    def __repr__(self) -> str:
        return "BinanceHmacSigner(secret=<redacted>)"


class BinanceEd25519Signer:
    """Ed25519 over the payload's ASCII bytes with the private key; base64 (standard alphabet, padded)."""

    kind = "ed25519"
    __slots__ = ("_key",)

    def __init__(self, private_key: Ed25519PrivateKey) -> None:
        self._key = private_key

    def sign(self, payload: str) -> str:
        return base64.b64encode(self._key.sign(payload.encode("ascii"))).decode("ascii")

    def public_key(self) -> Ed25519PublicKey:
        return self._key.public_key()

    def __repr__(self) -> str:
        return "BinanceEd25519Signer(private_key=<redacted>)"


def verify_ed25519(public_key: Ed25519PublicKey, payload: str, signature_b64: str) -> bool:
    try:
        public_key.verify(base64.b64decode(signature_b64, validate=True), payload.encode("ascii"))
    except (InvalidSignature, ValueError):
        return False
    return True


def sign_params(params: dict[str, object], signer: BinanceSigner) -> dict[str, object]:
    """Add ``signature`` to ``params`` (in place) and return them."""
    params["signature"] = signer.sign(query_string(params))
    return params


def verify_params(params: dict[str, object], *, hmac_secret: str | bytes | None = None,
                  ed25519_public_key: Ed25519PublicKey | None = None) -> bool:
    """True when ``params['signature']`` is a valid signature by the given HMAC secret or Ed25519 key."""
    sig = params.get("signature")
    if not isinstance(sig, str) or not sig:
        return False
    payload = query_string(params)
    if hmac_secret is not None and BinanceHmacSigner(hmac_secret).verify(payload, sig):
        return True
    return ed25519_public_key is not None and verify_ed25519(ed25519_public_key, payload, sig)
