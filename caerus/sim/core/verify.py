"""The emulator's own signature checks, written from the venues' published algorithms, not from caerus' signers.

The emulator exists to test the production order-entry code; if it verified with that same code, a bug shared by
signer and verifier (a wrong sort order, a wrong hash input) would pass every test. So this module re-derives
each check from the documentation, with different building blocks where it can:

- Binance (WebSocket API, "SIGNED" requests): the payload is every param except ``signature``, sorted by name,
  as ``k=v`` joined by ``&`` (booleans as ``true``/``false``). HMAC-SHA256 with the secret (hex, case-insensitive,
  via :mod:`hmac`), or an Ed25519 signature (base64) checked with ``cryptography``'s public key.
- Hyperliquid L1 actions: the connection id is keccak256 over msgpack(action) + the nonce as 8 big-endian bytes
  + a vault byte (0x00, or 0x01 and the 20-byte vault address); the phantom agent ``{source: "a" mainnet | "b"
  testnet, connectionId}`` is EIP-712 typed data (domain ``Exchange``/``1``/chainId 1337/zero address). The signer
  is recovered with eth-account's documented path: ``encode_typed_data`` + ``Account.recover_message``.
- Hyperliquid user-signed actions (``usdSend``, ``withdraw3``): EIP-712 typed data straight over the action's
  fields, domain ``HyperliquidSignTransaction``/``1``/chainId = the action's ``signatureChainId`` (any chain the
  wallet signed on)/zero address, primary type ``HyperliquidTransaction:<Name>``; the network is the signed
  ``hyperliquidChain`` field ("Mainnet" | "Testnet"), which the caller checks.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from typing import Any

import msgpack
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from eth_account import Account
from eth_account.messages import encode_typed_data
from eth_utils import keccak

_HL_DOMAIN = {"name": "Exchange", "version": "1", "chainId": 1337,
              "verifyingContract": "0x0000000000000000000000000000000000000000"}
_HL_TYPES = {"Agent": [{"name": "source", "type": "string"}, {"name": "connectionId", "type": "bytes32"}]}


# -- Binance ---------------------------------------------------------------------------------------------------
def binance_payload(params: dict[str, object]) -> str:
    """The text Binance signs: params except ``signature``, sorted by name, ``k=v`` joined with ``&``."""
    parts = []
    for name in sorted(params):
        if name == "signature":
            continue
        value = params[name]
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        parts.append(name + "=" + text)
    return "&".join(parts)


def binance_signature_ok(params: dict[str, object], *, hmac_secret: str | None,
                         ed25519_public_key: Ed25519PublicKey | None) -> bool:
    """True when ``params['signature']`` is valid for the configured HMAC secret or Ed25519 public key."""
    sig = params.get("signature")
    if not isinstance(sig, str) or not sig:
        return False
    return binance_text_signature_ok(binance_payload(params), sig, hmac_secret=hmac_secret,
                                     ed25519_public_key=ed25519_public_key)


def binance_text_signature_ok(text: str, sig: str, *, hmac_secret: str | None,
                              ed25519_public_key: Ed25519PublicKey | None) -> bool:
    """True when ``sig`` signs ``text`` (REST: the query string and body as sent, less the signature)."""
    payload = text.encode()
    if hmac_secret is not None:
        expected = hmac.new(hmac_secret.encode(), payload, hashlib.sha256).hexdigest()
        if hmac.compare_digest(expected, sig.lower()):
            return True
    if ed25519_public_key is not None:
        try:
            ed25519_public_key.verify(base64.b64decode(sig, validate=True), payload)
        except (InvalidSignature, ValueError, binascii.Error):
            return False
        return True
    return False


# -- Hyperliquid -----------------------------------------------------------------------------------------------
def hyperliquid_connection_id(action: dict[str, Any], nonce: int, vault_address: str | None,
                              expires_after: int | None = None) -> bytes:
    """The published action hash: keccak(msgpack(action) || nonce u64 BE || 0x00 | 0x01 vault[20]
    [|| 0x00 || expiresAfter u64 BE, when the request sets it])."""
    data = bytearray(msgpack.packb(action))
    data += nonce.to_bytes(8, "big")
    if vault_address is None:
        data.append(0)
    else:
        data.append(1)
        data += bytes.fromhex(vault_address.removeprefix("0x"))
    if expires_after is not None:
        data.append(0)
        data += expires_after.to_bytes(8, "big")
    return keccak(bytes(data))


#: user-signed action type -> (EIP-712 primary type, its fields after the chain), as the exchange endpoint documents
HL_USER_SIGNED: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    "usdSend": ("HyperliquidTransaction:UsdSend", (("destination", "string"), ("amount", "string"),
                                                  ("time", "uint64"))),
    "withdraw3": ("HyperliquidTransaction:Withdraw", (("destination", "string"), ("amount", "string"),
                                                     ("time", "uint64"))),
}


def hyperliquid_user_signer(action: dict[str, Any], signature: dict[str, Any]) -> str:
    """The (checksummed) address that signed a user-signed action (its type one of :data:`HL_USER_SIGNED`), over
    the action's own fields and ``signatureChainId``."""
    primary, fields = HL_USER_SIGNED[action["type"]]
    domain = {"name": "HyperliquidSignTransaction", "version": "1", "chainId": int(action["signatureChainId"], 16),
              "verifyingContract": "0x0000000000000000000000000000000000000000"}
    names = (("hyperliquidChain", "string"), *fields)
    types = {primary: [{"name": n, "type": t} for n, t in names]}
    message = {n: action[n] for n, _ in names}
    signable = encode_typed_data(domain, types, message)
    vrs = (int(signature["v"]), int(signature["r"], 16), int(signature["s"], 16))
    return Account.recover_message(signable, vrs=vrs)


def hyperliquid_signer(action: dict[str, Any], nonce: int, signature: dict[str, Any], *, is_mainnet: bool,
                       vault_address: str | None = None, expires_after: int | None = None) -> str:
    """The (checksummed) address whose key signed ``action`` for the given network."""
    message = {"source": "a" if is_mainnet else "b",
               "connectionId": hyperliquid_connection_id(action, nonce, vault_address, expires_after)}
    signable = encode_typed_data(_HL_DOMAIN, _HL_TYPES, message)
    vrs = (int(signature["v"]), int(signature["r"], 16), int(signature["s"], 16))
    return Account.recover_message(signable, vrs=vrs)
