"""Host keys in an instance's console output: cloud-init's two blocks parsed, and the first-contact verdict."""

from __future__ import annotations

import base64

import paramiko
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from infra.hostkeys import HostKeyNotOnConsole, check_first_contact, fingerprint_sha256, parse_console


def _openssh(private: ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey) -> tuple[str, bytes]:
    line = private.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                             serialization.PublicFormat.OpenSSH).decode()
    kind, b64 = line.split()[:2]
    return kind, base64.b64decode(b64)


ED_TYPE, ED_BLOB = _openssh(ed25519.Ed25519PrivateKey.generate())
EC_TYPE, EC_BLOB = _openssh(ec.generate_private_key(ec.SECP256R1()))
OTHER_TYPE, OTHER_BLOB = _openssh(ed25519.Ed25519PrivateKey.generate())


def _al2023_console(fingerprints: bool = True, keys: bool = True) -> str:
    """What an Amazon Linux 2023 instance prints at first boot (the `ec2:` prefix, CRLF line ends), around
    cloud-init's blocks."""
    out = ["[    0.000000] Linux version 6.1.112-122.189.amzn2023.x86_64", "cloud-init[1520]: Cloud-init v. 22.2.2"]
    if fingerprints:
        out += ["ec2: #############################################################",
                "ec2: -----BEGIN SSH HOST KEY FINGERPRINTS-----",
                f"ec2: 256 {fingerprint_sha256(EC_BLOB)} no comment (ECDSA)",
                f"ec2: 256 {fingerprint_sha256(ED_BLOB)} no comment (ED25519)",
                "ec2: -----END SSH HOST KEY FINGERPRINTS-----",
                "ec2: #############################################################"]
    if keys:
        out += ["-----BEGIN SSH HOST KEY KEYS-----",
                f"{EC_TYPE} {base64.b64encode(EC_BLOB).decode()} ",
                f"{ED_TYPE} {base64.b64encode(ED_BLOB).decode()} ",
                "-----END SSH HOST KEY KEYS-----"]
    out.append("Amazon Linux 2023 Kernel 6.1 on an x86_64 (-)")
    return "\r\n".join(out) + "\r\n"


def test_fingerprint_is_openssh_sha256() -> None:
    key = paramiko.Ed25519Key(data=ED_BLOB)
    assert fingerprint_sha256(ED_BLOB) == key.fingerprint  # paramiko's own SHA256:... rendering


@pytest.mark.parametrize("fingerprints,keys", [(True, True), (True, False), (False, True)])
def test_parse_console_reads_either_block(fingerprints: bool, keys: bool) -> None:
    found = parse_console(_al2023_console(fingerprints, keys))
    assert found.fingerprints == {"ED25519": frozenset({fingerprint_sha256(ED_BLOB)}),
                                  "ECDSA": frozenset({fingerprint_sha256(EC_BLOB)})}
    assert found.count == 2


def test_parse_console_without_blocks_finds_nothing() -> None:
    assert parse_console(_al2023_console(False, False)).count == 0
    half = _al2023_console(True, False).split("ec2: -----END")[0]  # console read while cloud-init was printing
    assert parse_console(half).count == 0


def test_first_contact_verified_when_the_console_lists_the_key() -> None:
    check = check_first_contact("203.0.113.7", ED_TYPE, ED_BLOB, lambda: _al2023_console())
    assert check.status == "verified" and check.console_fingerprints == 2
    assert check.fingerprint == fingerprint_sha256(ED_BLOB) and "ED25519" in check.detail


def test_first_contact_refused_when_the_console_lists_other_keys() -> None:
    with pytest.raises(HostKeyNotOnConsole, match=r"203\.0\.113\.7 is ssh-ed25519 SHA256:.*does not list.*ED25519"):
        check_first_contact("203.0.113.7", OTHER_TYPE, OTHER_BLOB, lambda: _al2023_console())


def test_first_contact_refused_when_the_console_lacks_the_key_type() -> None:
    console = _al2023_console().replace(f"{ED_TYPE} ", "x ").replace("(ED25519)", "(X)")
    with pytest.raises(HostKeyNotOnConsole):
        check_first_contact("203.0.113.7", ED_TYPE, ED_BLOB, lambda: console)


def test_first_contact_without_fingerprints_is_trusted_and_says_why() -> None:
    def unreachable() -> str:
        raise ConnectionError("endpoint not reachable")

    cases = {None: "not an EC2 instance", (lambda: ""): "no host key fingerprints",
             (lambda: None): "no host key fingerprints", unreachable: "could not be read: ConnectionError"}
    for console, why in cases.items():
        check = check_first_contact("198.51.100.2", ED_TYPE, ED_BLOB, console)
        assert check.status == "trusted-on-first-use" and why in check.detail
