"""Order signing for the live venues: Binance WebSocket API params (HMAC-SHA256 / Ed25519) and Hyperliquid L1
actions (msgpack + keccak + EIP-712 phantom agent, as the public SDK's ``sign_l1_action``).

Pure functions and small signer objects: no sockets, no logging. Signers hold key material privately and their
``repr`` never shows it.
"""

from caerus.execution.signing.binance import (
    BinanceEd25519Signer,
    BinanceHmacSigner,
    BinanceSigner,
    query_string,
    sign_params,
    verify_params,
)
from caerus.execution.signing.hyperliquid import (
    HyperliquidSigner,
    action_hash,
    agent_typed_data,
    float_to_wire,
    order_action,
    order_wire,
    recover_l1_signer,
    sign_l1_action_reference,
)

__all__ = [
    "BinanceEd25519Signer",
    "BinanceHmacSigner",
    "BinanceSigner",
    "HyperliquidSigner",
    "action_hash",
    "agent_typed_data",
    "float_to_wire",
    "order_action",
    "order_wire",
    "query_string",
    "recover_l1_signer",
    "sign_l1_action_reference",
    "sign_params",
    "verify_params",
]
