"""Hyperliquid L1 action signing, byte-for-byte as the public Python SDK's ``sign_l1_action``.

action_hash = keccak(msgpack(action) + nonce as 8-byte big-endian + vault flag (0x00, or 0x01 + 20-byte address)
[+ 0x00 + expiresAfter as 8-byte big-endian when given]); the "phantom agent" ``{source: "a" (mainnet) | "b"
(testnet), connectionId: action_hash}`` is signed as EIP-712 typed data (domain Exchange / version 1 / chainId 1337
/ verifyingContract 0x0, primary type ``Agent(string source, bytes32 connectionId)``). The signature goes on the
wire as ``{"r": hex, "s": hex, "v": 27|28}`` (``r``/``s`` as minimal hex integers, like the SDK's ``to_hex``).

Two paths, one answer:
- :func:`sign_l1_action_reference` builds the full typed-data document and signs it with eth-account (the
  well-kept library, slow: ~0.5 ms). Tests pin it to the SDK's published vectors.
- :class:`HyperliquidSigner` is the per-order path. At construction it takes the EIP-712 domain separator from
  eth-account's own encoding and checks its struct hash against eth-account's for a probe; per order it only
  hashes (keccak) and signs the 32-byte digest with libsecp256k1 (coincurve) when installed, else eth-keys.
  Tests check both paths give identical signatures (RFC 6979 makes ECDSA deterministic).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import msgpack
from eth_account import Account
from eth_account.messages import encode_typed_data
from eth_hash.auto import keccak
from eth_keys import keys as eth_keys_keys

_coincurve: Any
try:  # libsecp256k1 binding: ~30 us per signature instead of ~90 us (eth-keys+coincurve) or ~5 ms (pure Python)
    import coincurve as _coincurve
except ImportError:  # pragma: no cover - depends on the environment
    _coincurve = None

ZERO_ADDRESS = "0x0000000000000000000000000000000000000000"
EIP712_DOMAIN = {"chainId": 1337, "name": "Exchange", "verifyingContract": ZERO_ADDRESS, "version": "1"}
EIP712_TYPES = {
    "Agent": [{"name": "source", "type": "string"}, {"name": "connectionId", "type": "bytes32"}],
    "EIP712Domain": [
        {"name": "name", "type": "string"},
        {"name": "version", "type": "string"},
        {"name": "chainId", "type": "uint256"},
        {"name": "verifyingContract", "type": "address"},
    ],
}
AGENT_TYPEHASH = keccak(b"Agent(string source,bytes32 connectionId)")

TIF_WIRE = {"IOC": "Ioc", "GTC": "Gtc", "ALO": "Alo"}


def ecdsa_backend() -> str:
    """Which library signs digests in :class:`HyperliquidSigner` (reported by the benchmark)."""
    return "coincurve" if _coincurve is not None else f"eth-keys ({type(eth_keys_keys.KeyAPI().backend).__name__})"  # type: ignore[attr-defined]  # stubs: keys is a module


# --- wire formatting ----------------------------------------------------------------------------------------

def float_to_wire(x: float) -> str:
    """Price/size as the venue wants it: at most 8 decimals, normalized ("100", "0.001"), exact or refused."""
    rounded = f"{x:.8f}"
    if abs(float(rounded) - x) >= 1e-12:
        raise ValueError(f"float_to_wire would round {x!r} (more than 8 decimals)")
    if rounded == "-0.00000000":
        rounded = "0"
    return f"{Decimal(rounded).normalize():f}"


def order_wire(asset: int, is_buy: bool, px: float, sz: float, *, reduce_only: bool = False, tif: str = "Ioc",
               cloid: str | None = None) -> dict[str, Any]:
    """One order in the action's ``orders`` list. Key order matters: msgpack hashes the dict as inserted."""
    w: dict[str, Any] = {"a": asset, "b": is_buy, "p": float_to_wire(px), "s": float_to_wire(sz),
                         "r": reduce_only, "t": {"limit": {"tif": tif}}}
    if cloid is not None:
        w["c"] = cloid
    return w


def order_action(orders: list[dict[str, Any]], grouping: str = "na") -> dict[str, Any]:
    return {"type": "order", "orders": orders, "grouping": grouping}


# --- hashing --------------------------------------------------------------------------------------------------

def _address_bytes(address: str) -> bytes:
    raw = bytes.fromhex(address[2:] if address.startswith("0x") else address)
    if len(raw) != 20:
        raise ValueError(f"vault address must be 20 bytes, got {len(raw)}")
    return raw


def action_hash(action: dict[str, Any], vault_address: str | None, nonce: int,
                expires_after: int | None = None) -> bytes:
    data = msgpack.packb(action) + nonce.to_bytes(8, "big")
    data += b"\x00" if vault_address is None else b"\x01" + _address_bytes(vault_address)
    if expires_after is not None:
        data += b"\x00" + expires_after.to_bytes(8, "big")
    return keccak(data)


def phantom_agent(connection_id: bytes, is_mainnet: bool) -> dict[str, Any]:
    return {"source": "a" if is_mainnet else "b", "connectionId": connection_id}


def agent_typed_data(connection_id: bytes, is_mainnet: bool) -> dict[str, Any]:
    """The full EIP-712 document eth-account signs (SDK ``l1_payload``)."""
    return {"domain": EIP712_DOMAIN, "types": EIP712_TYPES, "primaryType": "Agent",
            "message": phantom_agent(connection_id, is_mainnet)}


def _wire_signature(r: int, s: int, v: int) -> dict[str, Any]:
    return {"r": hex(r), "s": hex(s), "v": v}


def sign_l1_action_reference(private_key: str | bytes, action: dict[str, Any], vault_address: str | None,
                             nonce: int, is_mainnet: bool, expires_after: int | None = None) -> dict[str, Any]:
    """Slow, obviously-correct path: the whole typed-data document through eth-account."""
    conn = action_hash(action, vault_address, nonce, expires_after)
    signed = Account.sign_message(encode_typed_data(full_message=agent_typed_data(conn, is_mainnet)), private_key)
    return _wire_signature(signed.r, signed.s, signed.v)


def recover_l1_signer(action: dict[str, Any], nonce: int, signature: dict[str, Any], is_mainnet: bool,
                      vault_address: str | None = None, expires_after: int | None = None) -> str:
    """Checksummed address that signed ``action`` (independent path: eth-account's typed data + recovery)."""
    conn = action_hash(action, vault_address, nonce, expires_after)
    msg = encode_typed_data(full_message=agent_typed_data(conn, is_mainnet))
    r, s, v = int(signature["r"], 16), int(signature["s"], 16), int(signature["v"])
    return Account.recover_message(msg, vrs=(v, r, s))


# --- per-order signer -------------------------------------------------------------------------------------------

class HyperliquidSigner:
    """Signs order actions for one key and network. Holds the key privately; ``repr`` shows only the address."""

    __slots__ = ("_cc", "_domain", "_ek", "_last_nonce", "_source_hash", "address", "is_mainnet", "vault_address")

    def __init__(self, private_key: str | bytes, *, is_mainnet: bool, vault_address: str | None = None) -> None:
        raw = bytes.fromhex(private_key[2:] if private_key.startswith("0x") else private_key) \
            if isinstance(private_key, str) else bytes(private_key)
        if len(raw) != 32:
            raise ValueError("Hyperliquid private key must be 32 bytes (64 hex digits)")
        self._ek = eth_keys_keys.PrivateKey(raw)
        self._cc = _coincurve.PrivateKey(raw) if _coincurve is not None else None
        self.address: str = self._ek.public_key.to_checksum_address()
        self.is_mainnet = is_mainnet
        self.vault_address = vault_address
        self._last_nonce = 0
        source = "a" if is_mainnet else "b"
        self._source_hash = keccak(source.encode())
        # Domain separator from eth-account's own encoding of the document (version byte 0x01, header = domain
        # separator, body = struct hash); check our struct hash against its body once, here, not per order.
        probe = keccak(b"caerus-probe")
        signable = encode_typed_data(full_message=agent_typed_data(probe, is_mainnet))
        self._domain: bytes = bytes(signable.header)
        if self._struct_hash(probe) != bytes(signable.body):
            raise RuntimeError("EIP-712 Agent struct hash disagrees with eth-account; refusing to sign")

    def _struct_hash(self, connection_id: bytes) -> bytes:
        return keccak(AGENT_TYPEHASH + self._source_hash + connection_id)

    def digest(self, action: dict[str, Any], nonce: int, expires_after: int | None = None) -> bytes:
        conn = action_hash(action, self.vault_address, nonce, expires_after)
        return keccak(b"\x19\x01" + self._domain + self._struct_hash(conn))

    def sign_action(self, action: dict[str, Any], nonce: int, expires_after: int | None = None) -> dict[str, Any]:
        d = self.digest(action, nonce, expires_after)
        if self._cc is not None:
            sig = self._cc.sign_recoverable(d, hasher=None)  # r(32) || s(32) || recovery id; low-s normalised
            return _wire_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:64], "big"), sig[64] + 27)
        s = self._ek.sign_msg_hash(d)
        return _wire_signature(s.r, s.s, s.v + 27)

    @property
    def last_nonce(self) -> int:
        return self._last_nonce

    def next_nonce(self, now_ms: int) -> int:
        """A strictly increasing millisecond nonce (the venue refuses reused nonces)."""
        n = now_ms if now_ms > self._last_nonce else self._last_nonce + 1
        self._last_nonce = n
        return n

    def __repr__(self) -> str:
        net = "mainnet" if self.is_mainnet else "testnet"
        return f"HyperliquidSigner(address={self.address}, network={net}, private_key=<redacted>)"
