"""Hyperliquid signing known-answer tests: vectors from the public hyperliquid-python-sdk tests/signing_test.py
(fixed key 0x0123...0123, fixed nonces), checked on both the eth-account reference path and the per-order signer,
plus an independent cross-check by recovering the signer's address."""

from __future__ import annotations

import pytest
from eth_account import Account

from caerus.venues.hyperliquid.signing import (
    HyperliquidSigner,
    action_hash,
    float_to_wire,
    order_action,
    order_wire,
    recover_l1_signer,
    sign_l1_action_reference,
)

KEY = "0x0123456789012345678901234567890123456789012345678901234567890123"  # the SDK tests' public test key
VAULT = "0x1719884eb866cb12b2287399b15f7db5e7d775ea"
DUMMY = {"type": "dummy", "num": 1000 * 10**8}  # SDK: float_to_int_for_hashing(1000)
ETH_GTC_100 = order_action([order_wire(1, True, 100, 100, tif="Gtc")])

# (action, vault, is_mainnet) -> (r, s, v) as published in the SDK's tests
VECTORS = [
    (DUMMY, None, True, ("0x53749d5b30552aeb2fca34b530185976545bb22d0b3ce6f62e31be961a59298",
                         "0x755c40ba9bf05223521753995abb2f73ab3229be8ec921f350cb447e384d8ed8", 27)),
    (DUMMY, None, False, ("0x542af61ef1f429707e3c76c5293c80d01f74ef853e34b76efffcb57e574f9510",
                          "0x17b8b32f086e8cdede991f1e2c529f5dd5297cbe8128500e00cbaf766204a613", 28)),
    (ETH_GTC_100, None, True, ("0xd65369825a9df5d80099e513cce430311d7d26ddf477f5b3a33d2806b100d78e",
                               "0x2b54116ff64054968aa237c20ca9ff68000f977c93289157748a3162b6ea940e", 28)),
    (ETH_GTC_100, None, False, ("0x82b2ba28e76b3d761093aaded1b1cdad4960b3af30212b343fb2e6cdfa4e3d54",
                                "0x6b53878fc99d26047f4d7e8c90eb98955a109f44209163f52d8dc4278cbbd9f5", 27)),
    (DUMMY, VAULT, True, ("0x3c548db75e479f8012acf3000ca3a6b05606bc2ec0c29c50c515066a326239",
                          "0x4d402be7396ce74fbba3795769cda45aec00dc3125a984f2a9f23177b190da2c", 28)),
    (DUMMY, VAULT, False, ("0xe281d2fb5c6e25ca01601f878e4d69c965bb598b88fac58e475dd1f5e56c362b",
                           "0x7ddad27e9a238d045c035bc606349d075d5c5cd00a6cd1da23ab5c39d4ef0f60", 27)),
]


@pytest.mark.parametrize(("action", "vault", "mainnet", "expected"), VECTORS)
def test_reference_path_matches_sdk_vectors(action, vault, mainnet, expected) -> None:
    sig = sign_l1_action_reference(KEY, action, vault, 0, mainnet)
    assert (sig["r"], sig["s"], sig["v"]) == expected


@pytest.mark.parametrize(("action", "vault", "mainnet", "expected"), VECTORS)
def test_fast_signer_matches_sdk_vectors(action, vault, mainnet, expected) -> None:
    sig = HyperliquidSigner(KEY, is_mainnet=mainnet, vault_address=vault).sign_action(action, 0)
    assert (sig["r"], sig["s"], sig["v"]) == expected


def test_phantom_agent_connection_id_matches_production() -> None:
    # SDK test_phantom_agent_creation_matches_production: ETH (asset 4) IOC buy 0.0147 @ 1670.1
    action = order_action([order_wire(4, True, 1670.1, 0.0147, tif="Ioc")])
    assert action["orders"][0] == {"a": 4, "b": True, "p": "1670.1", "s": "0.0147", "r": False,
                                   "t": {"limit": {"tif": "Ioc"}}}
    assert "0x" + action_hash(action, None, 1677777606040).hex() == \
        "0x0fcbeda5ae3c4950a548021552a4fea2226858c4453571bf3f24ba017eac2908"


def test_action_hash_depends_on_nonce_vault_and_expiry() -> None:
    base = action_hash(ETH_GTC_100, None, 1)
    assert base != action_hash(ETH_GTC_100, None, 2)
    assert base != action_hash(ETH_GTC_100, VAULT, 1)
    assert base != action_hash(ETH_GTC_100, None, 1, expires_after=5)


@pytest.mark.parametrize("mainnet", [True, False])
def test_recovered_signer_is_the_key_address(mainnet: bool) -> None:
    """Independent cross-check: eth-account recovers the address of the key from our fast signature."""
    signer = HyperliquidSigner(KEY, is_mainnet=mainnet)
    action = order_action([order_wire(0, False, 97123.5, 0.00123, tif="Ioc")])
    sig = signer.sign_action(action, 1_764_000_000_123)
    assert recover_l1_signer(action, 1_764_000_000_123, sig, mainnet) == Account.from_key(KEY).address
    # the other network's phantom agent ("a" vs "b") recovers to somebody else
    assert recover_l1_signer(action, 1_764_000_000_123, sig, not mainnet) != Account.from_key(KEY).address
    assert sig == sign_l1_action_reference(KEY, action, None, 1_764_000_000_123, mainnet)


def test_random_keys_agree_between_paths() -> None:
    for _ in range(5):
        acct = Account.create()
        key = acct.key.hex()
        action = order_action([order_wire(0, True, 100000, 0.001, tif="Ioc")])
        fast = HyperliquidSigner(key, is_mainnet=False).sign_action(action, 42)
        assert fast == sign_l1_action_reference(key, action, None, 42, False)
        assert recover_l1_signer(action, 42, fast, False) == acct.address


@pytest.mark.parametrize(("x", "wire"), [(100, "100"), (100.0, "100"), (0.0147, "0.0147"), (1670.1, "1670.1"),
                                         (0.00000001, "0.00000001"), (-0.0, "0"), (97123.5, "97123.5"),
                                         (123456789.12345678, "123456789.12345678")])
def test_float_to_wire(x: float, wire: str) -> None:
    assert float_to_wire(x) == wire


def test_float_to_wire_refuses_rounding() -> None:
    with pytest.raises(ValueError, match="round"):
        float_to_wire(0.000000001)
    with pytest.raises(ValueError, match="round"):
        float_to_wire(1.123456789)


def test_nonces_strictly_increase() -> None:
    s = HyperliquidSigner(KEY, is_mainnet=False)
    assert [s.next_nonce(1000), s.next_nonce(1000), s.next_nonce(999), s.next_nonce(2000)] == [1000, 1001, 1002,
                                                                                              2000]


def test_signer_repr_shows_address_not_key() -> None:
    s = HyperliquidSigner(KEY, is_mainnet=True)
    assert KEY[2:] not in repr(s) and Account.from_key(KEY).address in repr(s)
    with pytest.raises(ValueError, match="32 bytes"):
        HyperliquidSigner("0x1234", is_mainnet=True)


def test_eth_keys_fallback_gives_the_same_signature() -> None:
    """Without coincurve the signer falls back to eth-keys; both must produce the SDK's bytes."""
    signer = HyperliquidSigner(KEY, is_mainnet=True)
    signer._cc = None  # force the fallback path
    sig = signer.sign_action(ETH_GTC_100, 0)
    assert (sig["r"], sig["s"], sig["v"]) == VECTORS[2][3]
