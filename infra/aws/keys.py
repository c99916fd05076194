"""The SSH key pair: generated locally (the private key never crosses the network), public half imported to EC2.

The private key is written 0600 in the state folder. A key pair that exists in EC2 while the local private key
is gone cannot be recovered: that is reported with what to do, never papered over. A key pair that exists with
the local key present is reused only when EC2's ``KeyFingerprint`` is the local public key's; another key under
that name (someone imported theirs, or the local key was replaced) is refused, naming both fingerprints.

EC2's fingerprint of an imported key: ed25519 -> the base64 SHA-256 of the OpenSSH key blob (what ``ssh-keygen
-l`` prints after ``SHA256:``); RSA -> the MD5 of the DER public key, colon-separated hex (RFC 4716). moto writes
the SHA-256 of the DER public key as colon-separated hex for ed25519; :func:`local_fingerprints` computes every
form so either side compares.
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from infra.aws import tags as T
from infra.aws.clients import AwsError, describe_one
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


def _hex(digest: bytes) -> str:
    return ":".join(f"{b:02x}" for b in digest)


def local_fingerprints(private_path: Path) -> dict[str, str]:
    """The forms EC2 (or moto) may report for the local key's public half, by name."""
    key = serialization.load_ssh_private_key(private_path.read_bytes(), password=None).public_key()
    der = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    blob = base64.b64decode(key.public_bytes(serialization.Encoding.OpenSSH,
                                             serialization.PublicFormat.OpenSSH).split()[1])
    return {
        "sha256-base64": base64.b64encode(hashlib.sha256(blob).digest()).decode(),  # AWS, ed25519
        "md5-der": _hex(hashlib.md5(der, usedforsecurity=False).digest()),  # AWS, imported RSA
        "sha256-der": _hex(hashlib.sha256(der).digest()),  # moto, ed25519
    }


def _normal(fingerprint: str) -> str:
    fp = fingerprint.strip().removeprefix("SHA256:").rstrip("=")
    return fp.lower() if ":" in fp else fp


def check_key_pair_matches(key_name: str, remote_fingerprint: str, private_path: Path) -> None:
    """AwsError unless EC2's fingerprint of ``key_name`` is the local private key's public half."""
    local = local_fingerprints(private_path)
    if _normal(remote_fingerprint) in {_normal(v) for v in local.values()}:
        return
    shown = local["sha256-der"] if ":" in remote_fingerprint and len(remote_fingerprint) > 60 else (
        local["md5-der"] if ":" in remote_fingerprint else local["sha256-base64"])
    raise AwsError(f"key pair {key_name!r} in EC2 has fingerprint {remote_fingerprint.strip()!r}, but the local key "
                   f"{private_path} has {shown!r}: a different key holds that name; refusing to launch with it "
                   f"(delete the key pair or `invoke teardown` that host, then provision again)")


def find_key_pair(ec2: Any, key_name: str) -> dict | None:
    return describe_one(ec2.describe_key_pairs, "InvalidKeyPair.NotFound", "KeyPairs", KeyNames=[key_name])


def ensure_key_pair(ec2: Any, key_name: str, private_path: Path, tags: dict[str, str]) -> tuple[str, bool]:
    """Return (key name, created). Reuses an existing pair when the local private key is present."""
    existing = find_key_pair(ec2, key_name)
    if existing is not None:
        if not private_path.exists():
            raise AwsError(
                f"key pair {key_name!r} exists in EC2 but its private key {private_path} is missing; "
                f"run `invoke teardown --name ...` for that host (or delete the key pair) and provision again"
            )
        check_key_pair_matches(key_name, str(existing.get("KeyFingerprint") or ""), private_path)
        return key_name, False
    public = public_key_of(private_path) if private_path.exists() else generate_keypair(private_path)
    try:
        ec2.import_key_pair(
            KeyName=key_name, PublicKeyMaterial=public, TagSpecifications=[T.tag_spec("key-pair", tags)]
        )
    except ClientError as exc:
        raise AwsError(f"importing key pair {key_name!r} failed: {exc}") from exc
    return key_name, True
