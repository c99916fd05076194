"""The emulator's order desk, shared by both venues' order handling: credentials, the books and marks the
market driver feeds, order ids and records, the account ledger, and the account events queued for the user
streams. Pure state and small helpers: no sockets, no logging.

Test credentials: :func:`configure_test_credentials` (in process), :func:`configure_from_env` (``CAERUS_SIM_*``
variables, for the emulator as a separate process), or :func:`configure_from_credentials_file` (the same 0600
TOML file the live transports read; only what is needed to verify is kept). Each venue's order handling
(caerus.sim.binance.orders, caerus.sim.hyperliquid.orders) reads and changes the one :data:`DESK`;
caerus.sim.orders is the entry point over both.
"""

from __future__ import annotations

import collections
import itertools
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key, load_pem_public_key
from eth_account import Account

from caerus import fees
from caerus.sim.core.ledger import Fill, Ledger, start_balance_from_env

ENV_API_KEY = "CAERUS_SIM_BINANCE_API_KEY"
ENV_SECRET = "CAERUS_SIM_BINANCE_SECRET"
ENV_ED25519_PUBLIC_KEY_FILE = "CAERUS_SIM_BINANCE_ED25519_PUBLIC_KEY_FILE"
ENV_HL_ADDRESS = "CAERUS_SIM_HL_ADDRESS"
ENV_HL_NETWORK = "CAERUS_SIM_HL_NETWORK"
ENV_HL_VAULTS = "CAERUS_SIM_HL_VAULTS"  # comma-separated vault addresses the wallet may trade for
HL_NETWORKS = ("testnet", "mainnet")
#: the most requests the Binance rate-limit log keeps: 10x the largest limit (2400 weight a minute), so a reported
#: count saturates only far past the point where the venue would have refused the client (bounds memory whatever
#: the request rate)
REQUEST_LOG_MAX = 24_000


@dataclass
class Book:
    bid_px: float
    bid_qty: float
    ask_px: float
    ask_qty: float
    mark: float | None = None  # the market's mark (caerus.sim.core.marks); None: the mid stands in
    # the last trade price (what a conditional order's CONTRACT_PRICE watches): where the market last moved through,
    # by the trade tape's rule (caerus.sim.core.tape: a falling bid traded at the old bid, a rising ask at the old ask);
    # None before the first such move (the mid stands in)
    last: float | None = None

    @property
    def last_price(self) -> float:
        return self.last if self.last is not None else (self.bid_px + self.ask_px) / 2


@dataclass
class OrderDesk:
    """The emulator's order-entry state. One module-level instance backs the module functions."""

    binance_api_key: str | None = None
    binance_hmac_secret: str | None = None
    binance_ed25519_public_key: Ed25519PublicKey | None = None
    hyperliquid_address: str | None = None
    # the network the emulated Hyperliquid is: "testnet" (what the official SDK signs for any URL but mainnet's)
    # or "mainnet"; an L1 action's phantom agent must carry its source ("a" / "b") and a user-signed action its
    # hyperliquidChain ("Mainnet" / "Testnet"), as on the venue
    hyperliquid_network: str = "testnet"
    hyperliquid_vaults: set[str] = field(default_factory=set)  # vault addresses the wallet may trade for
    # each venue's fee tier (caerus.fees; EmulatorConfig.binance_fee_tier / hl_fee_tier): what every fill pays
    fee_tiers: dict[str, int] = field(default_factory=lambda: dict.fromkeys(fees.VENUES, 0))
    binance_gtd_min_lead_ms: int = 600_000  # a GTD goodTillDate must be later than now + this (EmulatorConfig)
    hl_orders: dict[int, dict[str, Any]] = field(default_factory=dict)  # oid -> order record (POST /info queries)
    hl_cloids: dict[str, int] = field(default_factory=dict)  # client order id (0x + 32 hex) -> oid
    binance_orders: dict[int, dict[str, Any]] = field(default_factory=dict)  # orderId -> the order as last answered
    binance_client_ids: dict[str, int] = field(default_factory=dict)  # clientOrderId -> orderId
    # conditional (Algo Service) orders: algoId -> the order as last answered, clientAlgoId -> algoId, the ones
    # waiting for their trigger per book key, and the triggered ones waiting for their order to end (FINISHED)
    binance_algos: dict[int, dict[str, Any]] = field(default_factory=dict)
    binance_algo_client_ids: dict[str, int] = field(default_factory=dict)
    binance_algo_open: dict[str, set[int]] = field(default_factory=lambda: collections.defaultdict(set))
    binance_algo_triggered: set[int] = field(default_factory=set)
    # positions, balances, realised PnL, leverage and fills history of both venues' accounts (caerus.sim.core.ledger)
    ledger: Ledger = field(default_factory=lambda: Ledger(start_balance_from_env()))
    # resting orders per book key: Hyperliquid oids and Binance orderIds the market's moves may fill
    hl_open: dict[str, set[int]] = field(default_factory=lambda: collections.defaultdict(set))
    binance_open: dict[str, set[int]] = field(default_factory=lambda: collections.defaultdict(set))
    hl_dead_man_ms: int | None = None  # scheduleCancel: every open order is canceled at this time
    # account events (user-data stream payloads) per venue, queued by the order functions and drained by the
    # servers after each answer (drain_events): this module stays free of sockets
    events: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {"binance": [], "hyperliquid": []})
    trade_ids: itertools.count = field(default_factory=lambda: itertools.count(7_000_001))
    listen_keys: set[str] = field(default_factory=set)  # Binance user-data stream keys (REST or WS-API issued)
    binance_clock_offset_ms: int = 0  # the venue's clock ahead of this host's by this much (tests of skew)
    books: dict[str, Book] = field(default_factory=dict)  # book key (see book_key) -> top of book
    seen_nonces: set[int] = field(default_factory=set)
    ids: itertools.count = field(default_factory=lambda: itertools.count(1_000_001))
    # (ms, is order) of the WebSocket API's requests in the widest rate-limit window (caerus.sim.binance.orders)
    requests_ms: collections.deque[tuple[int, bool]] = field(
        default_factory=lambda: collections.deque(maxlen=REQUEST_LOG_MAX))


DESK = OrderDesk()


# --- configuration -----------------------------------------------------------------------------------------


def configure_test_credentials(*, binance_api_key: str | None = None, binance_hmac_secret: str | None = None,
                               binance_ed25519_public_key: Ed25519PublicKey | bytes | None = None,
                               hyperliquid_address: str | None = None, hyperliquid_network: str = "testnet",
                               hyperliquid_vaults: tuple[str, ...] = ()) -> None:
    """Which credentials the emulator accepts. ``binance_ed25519_public_key`` may be PEM bytes."""
    if isinstance(binance_ed25519_public_key, bytes):
        key = load_pem_public_key(binance_ed25519_public_key)
        if not isinstance(key, Ed25519PublicKey):
            raise ValueError("binance_ed25519_public_key is not an Ed25519 public key")
        binance_ed25519_public_key = key
    if hyperliquid_network not in HL_NETWORKS:
        raise ValueError(f"hyperliquid_network ({ENV_HL_NETWORK}) must be mainnet or testnet (the emulator plays one "
                         f"network, as each venue is one), got {hyperliquid_network!r}")
    DESK.binance_api_key = binance_api_key
    DESK.binance_hmac_secret = binance_hmac_secret
    DESK.binance_ed25519_public_key = binance_ed25519_public_key
    DESK.hyperliquid_address = hyperliquid_address.lower() if hyperliquid_address else None
    DESK.hyperliquid_network = hyperliquid_network
    DESK.hyperliquid_vaults = {v.lower() for v in hyperliquid_vaults}


def configure_from_env(env: Mapping[str, str] | None = None) -> bool:
    """Configure from ``CAERUS_SIM_*`` variables; returns False when none is set (nothing configured)."""
    env = os.environ if env is None else env
    if not any(env.get(k) for k in (ENV_API_KEY, ENV_HL_ADDRESS)):
        return False
    pub = None
    if env.get(ENV_ED25519_PUBLIC_KEY_FILE):
        with open(env[ENV_ED25519_PUBLIC_KEY_FILE], "rb") as f:
            pub = f.read()
    configure_test_credentials(binance_api_key=env.get(ENV_API_KEY) or None,
                               binance_hmac_secret=env.get(ENV_SECRET) or None, binance_ed25519_public_key=pub,
                               hyperliquid_address=env.get(ENV_HL_ADDRESS) or None,
                               hyperliquid_network=env.get(ENV_HL_NETWORK) or "testnet",
                               hyperliquid_vaults=tuple(v.strip() for v in env.get(ENV_HL_VAULTS, "").split(",")
                                                        if v.strip()))
    return True


def configure_from_credentials_file(path: str | os.PathLike[str]) -> None:
    """Accept the credentials in the live transports' TOML file (either venue table may be absent).

    Read here with the emulator's own code (not caerus.execution.credentials): only what verification needs is
    kept, the Binance HMAC secret or the Ed25519 *public* key and the Hyperliquid wallet *address*.
    """
    path = Path(path)
    try:
        doc = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"emulator credentials file {path}: cannot read it as TOML ({type(exc).__name__})") \
            from None
    kwargs: dict[str, Any] = {}
    b = doc.get("binance")
    if isinstance(b, dict):
        kwargs["binance_api_key"] = _text(b, "binance", "api_key", path)
        if b.get("secret"):
            kwargs["binance_hmac_secret"] = _text(b, "binance", "secret", path)
        else:
            key_file = Path(_text(b, "binance", "ed25519_private_key_file", path))
            key = load_pem_private_key((path.parent / key_file).read_bytes(), password=None)
            if not isinstance(key, Ed25519PrivateKey):
                raise ValueError(f"emulator credentials file {path}: binance key is not an Ed25519 key")
            kwargs["binance_ed25519_public_key"] = key.public_key()
    h = doc.get("hyperliquid")
    if isinstance(h, dict):
        kwargs["hyperliquid_address"] = Account.from_key(_text(h, "hyperliquid", "private_key", path)).address
    configure_test_credentials(**kwargs)


def _text(table: dict[str, Any], venue: str, name: str, path: Path) -> str:
    value = table.get(name)
    if not isinstance(value, str) or not value:
        raise ValueError(f"emulator credentials file {path}: {venue}.{name} must be a non-empty string")
    return value


# --- books, marks, positions -------------------------------------------------------------------------------


def book_key(venue: str, name: str = "BTC") -> str:
    """Where the desk keeps an instrument's book and position: the venue for BTC (as the BTC-only desk always
    did), ``venue:NAME`` for every other catalogue instrument."""
    return venue if name == "BTC" else f"{venue}:{name}"


def reset() -> None:
    """Forget credentials, books, nonces and ids (tests). In place: every module holding ``DESK`` sees the fresh
    state."""
    DESK.__dict__.update(OrderDesk().__dict__)


def configure_fees(binance_tier: int = 0, hyperliquid_tier: int = 0) -> None:
    """The fee tier each venue's account trades at (caerus.fees); ValueError naming a tier the venue lacks."""
    fees.tier("binance", binance_tier)  # raises naming the venue and its tiers
    fees.tier("hyperliquid", hyperliquid_tier)
    DESK.fee_tiers = {"binance": binance_tier, "hyperliquid": hyperliquid_tier}


def configure_venue(*, binance_fee_tier: int = 0, hl_fee_tier: int = 0,
                    binance_gtd_min_lead_s: float = 600.0) -> None:
    """The emulator's venue settings (EmulatorConfig): each account's fee tier and Binance's GTD minimum lead."""
    configure_fees(binance_fee_tier, hl_fee_tier)
    DESK.binance_gtd_min_lead_ms = int(binance_gtd_min_lead_s * 1000)


def fee_tier(venue: str) -> fees.FeeTier:
    """The venue's fee tier this emulator charges."""
    return fees.tier(venue, DESK.fee_tiers[venue])


def book_fill(venue: str, is_buy: bool, px: float, qty: float, name: str = "BTC", *, maker: bool = False) -> Fill:
    """Book a fill into the venue's account (position in ``name``, realised PnL, and the fee of the venue's tier:
    maker when the order rested, taker when it took liquidity): the one ledger both venues' views read."""
    fee = fee_tier(venue).rate(maker) * px * qty
    return DESK.ledger.book_fill(venue, book_key(venue, name), is_buy, px, qty, fee)



def mark(venue: str, name: str = "BTC") -> float | None:
    """The instrument's mark as the market driver computed it (caerus.sim.core.marks), the mid of the desk's top of book
    when it gave none (a test feeding books by hand); None before the first book."""
    book = DESK.books.get(book_key(venue, name))
    if book is None:
        return None
    return book.mark if book.mark is not None else (book.bid_px + book.ask_px) / 2


def position(venue: str, name: str = "BTC") -> tuple[float, float]:
    """(signed position in instrument ``name``, average entry price) the desk holds on ``venue``."""
    return DESK.ledger.position(book_key(venue, name))


def cross(venue: str, is_buy: bool, px: float, qty: float, name: str = "BTC") -> tuple[float, float] | None:
    """(fill price, fill qty) when a limit at ``px`` crosses instrument ``name``'s book; None when it does not
    (also when the instrument has no book: listed but not emulated in this session, or no market yet)."""
    book = DESK.books.get(book_key(venue, name))
    if book is None:  # no market: no liquidity to take
        return None
    if is_buy and px >= book.ask_px:
        return book.ask_px, min(qty, book.ask_qty)
    if not is_buy and px <= book.bid_px:
        return book.bid_px, min(qty, book.bid_qty)
    return None



MAX_ORDERS_KEPT = 100_000  # per venue: status queries reach this far back; older records are forgotten


def forget_oldest(records: dict[int, Any], ids: dict[str, int]) -> None:
    """Keep the order records bounded (insertion order is age): a long session's memory stays flat."""
    while len(records) > MAX_ORDERS_KEPT:
        del records[next(iter(records))]
    while len(ids) > MAX_ORDERS_KEPT:
        del ids[next(iter(ids))]



def drain_events(venue: str) -> list[dict[str, Any]]:
    """The account events queued since the last drain (oldest first)."""
    out = DESK.events[venue]
    DESK.events[venue] = []
    return out


def decimal_of(v: Any) -> Decimal | None:
    """A decimal from a JSON string or number (the venue accepts both for price and quantity)."""
    if isinstance(v, bool) or not isinstance(v, str | int | float):
        return None
    try:
        d = Decimal(str(v))
    except InvalidOperation:
        return None
    return d if d.is_finite() else None

