"""The emulated Hyperliquid is one network (issue 51 item 6): an L1 action whose phantom agent carries the other
network's source, or a user-signed action whose ``hyperliquidChain`` names the other network, is refused as the
venue refuses it. Signed here with the official SDK's own signers (hyperliquid-python-sdk)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from eth_account import Account
from hyperliquid.utils.signing import (
    order_request_to_order_wire,
    order_wires_to_order_action,
    sign_l1_action,
    sign_usd_transfer_action,
    sign_withdraw_from_bridge_action,
)

from caerus.sim import orders

WALLET = Account.from_key("0x" + "33" * 32)
DEST = "0x" + "ab" * 20
_nonces = iter(range(1, 10**9))


@pytest.fixture(autouse=True)
def desk() -> Iterator[None]:
    orders.reset()
    orders.configure_test_credentials(hyperliquid_address=WALLET.address)  # plays testnet, the default
    orders.update_book("hyperliquid", 99_990.0, 5.0, 100_000.0, 5.0)
    yield
    orders.reset()


def _nonce() -> int:
    return time.time_ns() // 1_000_000 + next(_nonces)


def _order(is_mainnet: bool) -> dict[str, Any] | str:
    wire = order_request_to_order_wire({"coin": "BTC", "is_buy": True, "sz": 0.001, "limit_px": 90_000.0,
                                        "order_type": {"limit": {"tif": "Gtc"}}, "reduce_only": False}, 0)
    action, nonce = order_wires_to_order_action([wire], None), _nonce()
    sig = sign_l1_action(WALLET, action, None, nonce, None, is_mainnet)
    return orders.hyperliquid_action({"action": action, "nonce": nonce, "signature": sig})


def _send(kind: str, amount: str, is_mainnet: bool = False, signer: Any = WALLET, chain_id: str | None = None,
          nonce: int | None = None) -> dict[str, Any] | str:
    t = _nonce()
    action = {"type": kind, "destination": DEST, "amount": amount, "time": t}
    signing = sign_usd_transfer_action if kind == "usdSend" else sign_withdraw_from_bridge_action
    if chain_id is None:
        sig = signing(signer, action, is_mainnet)
    else:  # signatureChainId is whatever chain the wallet signed on (the SDK pins 0x66eee; Arbitrum One here)
        from hyperliquid.utils.signing import USD_SEND_SIGN_TYPES, sign_inner, user_signed_payload

        action |= {"signatureChainId": chain_id, "hyperliquidChain": "Mainnet" if is_mainnet else "Testnet"}
        sig = sign_inner(signer, user_signed_payload("HyperliquidTransaction:UsdSend", USD_SEND_SIGN_TYPES, action))
    return orders.hyperliquid_action({"action": action, "nonce": t if nonce is None else nonce, "signature": sig})


def _value() -> float:
    return float(orders.hyperliquid_clearinghouse_state(0)["marginSummary"]["accountValue"])


def test_an_l1_action_signed_for_the_network_played_is_accepted_and_the_other_refused() -> None:
    ok = _order(is_mainnet=False)
    assert isinstance(ok, dict) and ok["status"] == "ok", ok
    wrong = _order(is_mainnet=True)  # phantom agent source "a" (mainnet) on a testnet venue
    assert isinstance(wrong, dict) and wrong["status"] == "err"
    assert wrong["response"].startswith("User or API Wallet 0x") and WALLET.address.lower() not in wrong["response"]
    orders.configure_test_credentials(hyperliquid_address=WALLET.address, hyperliquid_network="mainnet")
    assert _order(is_mainnet=True)["status"] == "ok"  # type: ignore[index]
    assert _order(is_mainnet=False)["status"] == "err"  # type: ignore[index]


def test_usd_send_and_withdraw_take_usdc_out_of_the_account() -> None:
    before = _value()
    assert _send("usdSend", "25.5") == {"status": "ok", "response": {"type": "default"}}
    assert _send("withdraw3", "100") == {"status": "ok", "response": {"type": "default"}}
    assert _value() == pytest.approx(before - 125.5)
    too_much = _send("withdraw3", str(int(before)))
    assert too_much == {"status": "err", "response": "Insufficient balance for withdrawal."}


def test_a_user_signed_action_for_the_other_network_is_refused_naming_the_chain() -> None:
    before = _value()
    wrong = _send("usdSend", "10", is_mainnet=True)  # hyperliquidChain "Mainnet" on a testnet venue
    assert isinstance(wrong, dict) and wrong["status"] == "err"
    assert "hyperliquidChain 'Mainnet'" in wrong["response"] and "this is Testnet" in wrong["response"]
    assert _value() == before
    orders.configure_test_credentials(hyperliquid_address=WALLET.address, hyperliquid_network="mainnet")
    assert _send("withdraw3", "10", is_mainnet=True)["status"] == "ok"  # type: ignore[index]
    assert "this is Mainnet" in _send("withdraw3", "10", is_mainnet=False)["response"]  # type: ignore[index]


def test_user_signed_actions_check_the_signer_the_nonce_and_any_signing_chain() -> None:
    stranger = Account.create()
    assert "does not exist" in _send("usdSend", "1", signer=stranger)["response"]  # type: ignore[index]
    assert "is not the nonce" in _send("usdSend", "1", nonce=_nonce() + 5)["response"]  # type: ignore[index]
    assert _send("usdSend", "1", chain_id="0xa4b1")["status"] == "ok"  # type: ignore[index]
    assert isinstance(_send("usdSend", "-1"), str)  # not a decimal amount: does not deserialize (HTTP 422)


def test_the_network_is_one_of_the_two_and_any_is_refused_at_start_up() -> None:
    env = {"CAERUS_SIM_HL_ADDRESS": WALLET.address}
    assert orders.configure_from_env(env) and orders.DESK.hyperliquid_network == "testnet"
    assert orders.configure_from_env({**env, "CAERUS_SIM_HL_NETWORK": "mainnet"})
    assert orders.DESK.hyperliquid_network == "mainnet"
    with pytest.raises(ValueError, match=r"CAERUS_SIM_HL_NETWORK\) must be mainnet or testnet .* got 'any'"):
        orders.configure_from_env({**env, "CAERUS_SIM_HL_NETWORK": "any"})
