"""The emulator's own signature checks agree with the production signers, and refuse what they should.

Two independent implementations of each venue's published algorithm (caerus.sim.core.verify vs caerus.venues.*.signing)
must agree; a tampered param, a wrong key or the other network must fail.
"""

from __future__ import annotations

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from eth_account import Account

from caerus.sim.core import verify
from caerus.venues.binance.signing import BinanceEd25519Signer, BinanceHmacSigner, sign_params
from caerus.venues.hyperliquid.signing import HyperliquidSigner, order_action, order_wire

PARAMS = {"symbol": "BTCUSDT", "side": "BUY", "quantity": "0.001", "price": "100000.1", "reduceOnly": False,
          "timestamp": 1_796_000_000_000, "recvWindow": 5000, "apiKey": "k"}


def test_binance_hmac_and_ed25519() -> None:
    signed = sign_params(dict(PARAMS), BinanceHmacSigner("s3cret"))
    assert verify.binance_signature_ok(signed, hmac_secret="s3cret", ed25519_public_key=None)
    assert not verify.binance_signature_ok(signed, hmac_secret="other", ed25519_public_key=None)
    assert not verify.binance_signature_ok({**signed, "price": "100000.2"}, hmac_secret="s3cret",
                                           ed25519_public_key=None)
    key = Ed25519PrivateKey.generate()
    signed = sign_params(dict(PARAMS), BinanceEd25519Signer(key))
    assert verify.binance_signature_ok(signed, hmac_secret=None, ed25519_public_key=key.public_key())
    stranger = Ed25519PrivateKey.generate().public_key()
    assert not verify.binance_signature_ok(signed, hmac_secret=None, ed25519_public_key=stranger)
    assert verify.binance_payload({"b": True, "a": 1, "signature": "x"}) == "a=1&b=true"


def test_hyperliquid_recovers_the_signing_wallet() -> None:
    acct = Account.create()
    vault = "0x" + "ab" * 20
    action = order_action([order_wire(0, True, 100_000.0, 0.001)])
    for is_mainnet in (True, False):
        for v in (None, vault):
            signer = HyperliquidSigner(acct.key.hex(), is_mainnet=is_mainnet, vault_address=v)
            sig = signer.sign_action(action, 1_796_000_000_000)
            got = verify.hyperliquid_signer(action, 1_796_000_000_000, sig, is_mainnet=is_mainnet, vault_address=v)
            assert got == acct.address
            other_net = verify.hyperliquid_signer(action, 1_796_000_000_000, sig, is_mainnet=not is_mainnet,
                                                  vault_address=v)
            assert other_net != acct.address
    sig = HyperliquidSigner(acct.key.hex(), is_mainnet=True).sign_action(action, 5)
    assert verify.hyperliquid_signer(action, 6, sig, is_mainnet=True) != acct.address
