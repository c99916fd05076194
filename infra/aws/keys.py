"""The SSH key pair: generated locally (the private key never crosses the network), public half imported to EC2.

The private key is written 0600 in the state folder. A key pair that exists in EC2 while the local private key
is gone cannot be recovered: that is reported with what to do, never papered over.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from infra.aws import tags as T
from infra.aws.clients import AwsError
from infra.hosts import write_private


def generate_keypair(private_path: Path) -> bytes:
    """Create an ed25519 key, write the private half 0600 (OpenSSH format), return the public half."""
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    write_private(private_path, private)
    write_private(private_path.with_suffix(".pub"), public + b" caerus\n")
    return public


def public_key_of(private_path: Path) -> bytes:
    key = serialization.load_ssh_private_key(private_path.read_bytes(), password=None)
    return key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)


def find_key_pair(ec2: Any, key_name: str) -> dict | None:
    try:
        pairs = ec2.describe_key_pairs(KeyNames=[key_name]).get("KeyPairs", [])
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "InvalidKeyPair.NotFound":
            return None
        raise
    return pairs[0] if pairs else None


def ensure_key_pair(ec2: Any, key_name: str, private_path: Path, tags: dict[str, str]) -> tuple[str, bool]:
    """Return (key name, created). Reuses an existing pair when the local private key is present."""
    existing = find_key_pair(ec2, key_name)
    if existing is not None:
        if not private_path.exists():
            raise AwsError(
                f"key pair {key_name!r} exists in EC2 but its private key {private_path} is missing; "
                f"run `invoke teardown --name ...` for that host (or delete the key pair) and provision again"
            )
        return key_name, False
    public = public_key_of(private_path) if private_path.exists() else generate_keypair(private_path)
    try:
        ec2.import_key_pair(
            KeyName=key_name, PublicKeyMaterial=public, TagSpecifications=[T.tag_spec("key-pair", tags)]
        )
    except ClientError as exc:
        raise AwsError(f"importing key pair {key_name!r} failed: {exc}") from exc
    return key_name, True
