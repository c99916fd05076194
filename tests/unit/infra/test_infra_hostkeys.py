"""Host keys in an instance's console output: cloud-init's two blocks parsed, the bounded wait for them, and the
first-contact verdict under each --host-key policy."""

from __future__ import annotations

import base64

import paramiko
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from infra.hostkeys import (
    ConsoleKeys,
    HostKeyNotOnConsole,
    HostKeyUnverified,
    check_first_contact,
    fingerprint_sha256,
    keys_from_dict,
    keys_to_dict,
    parse_console,
    read_console,
)


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


def _keys(text: str) -> ConsoleKeys:
    return parse_console(text)


def test_first_contact_verified_when_the_console_lists_the_key() -> None:
    for policy in ("verified", "tofu"):  # a match is a match under either policy
        check = check_first_contact("203.0.113.7", ED_TYPE, ED_BLOB, _keys(_al2023_console()), policy=policy)
        assert check.status == "verified" and check.console_fingerprints == 2
        assert check.fingerprint == fingerprint_sha256(ED_BLOB) and "ED25519" in check.detail


def test_first_contact_refused_when_the_console_lists_other_keys() -> None:
    for policy in ("verified", "tofu"):  # tofu never accepts a key the console contradicts
        with pytest.raises(HostKeyNotOnConsole,
                           match=r"203\.0\.113\.7 is ssh-ed25519 SHA256:.*does not list.*ED25519"):
            check_first_contact("203.0.113.7", OTHER_TYPE, OTHER_BLOB, _keys(_al2023_console()), policy=policy)


def test_first_contact_refused_when_the_console_lacks_the_key_type() -> None:
    console = _al2023_console().replace(f"{ED_TYPE} ", "x ").replace("(ED25519)", "(X)")
    with pytest.raises(HostKeyNotOnConsole):
        check_first_contact("203.0.113.7", ED_TYPE, ED_BLOB, _keys(console))


PROBLEMS = ["console output unreadable (AccessDenied)", "no host key fingerprints in the console output",
            "not an EC2 instance: no console to check"]


@pytest.mark.parametrize("problem", PROBLEMS)
def test_verified_policy_refuses_without_fingerprints_naming_why(problem: str) -> None:
    for expected in (None, ConsoleKeys()):
        with pytest.raises(HostKeyUnverified) as exc:
            check_first_contact("198.51.100.2", ED_TYPE, ED_BLOB, expected, problem, policy="verified")
        msg = str(exc.value)
        assert msg == f"host key of 198.51.100.2 not verified: {problem} — use --host-key tofu to trust on first use"
        assert "\n" not in msg


@pytest.mark.parametrize("problem", PROBLEMS)
def test_tofu_policy_trusts_on_first_use_and_says_why(problem: str) -> None:
    check = check_first_contact("198.51.100.2", ED_TYPE, ED_BLOB, None, problem, policy="tofu")
    assert check.status == "trusted-on-first-use" and check.detail == f"--host-key tofu: {problem}"


def test_an_unknown_policy_is_refused() -> None:
    with pytest.raises(ValueError, match=r"--host-key 'trust' is not one of verified \| tofu"):
        check_first_contact("h", ED_TYPE, ED_BLOB, None, policy="trust")


class Clock:
    """A clock that moves only when slept on: the wait is checked by what was read, never by elapsed time."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.now += s


def test_read_console_waits_for_the_fingerprint_block_of_a_young_instance() -> None:
    outputs = iter(["", _al2023_console(True, False).split("ec2: -----END")[0], _al2023_console()])
    clock = Clock()
    read = read_console(lambda: next(outputs), wait_s=300, poll_s=10, sleep=clock.sleep, clock=lambda: clock.now)
    assert read.keys.count == 2 and read.problem == "" and read.polls == 3 and clock.slept == [10, 10]


def test_read_console_stops_at_its_deadline() -> None:
    clock = Clock()
    read = read_console(lambda: "booting", wait_s=35, poll_s=10, sleep=clock.sleep, clock=lambda: clock.now)
    assert read.keys.count == 0 and clock.now == 35 and read.polls == 5  # reads at 0, 10, 20, 30, 35
    assert read.problem.startswith("no host key fingerprints in the console output") and "35 s" in read.problem


def test_read_console_does_not_wait_on_an_unreadable_console() -> None:
    from botocore.exceptions import ClientError

    def denied() -> str:
        raise ClientError({"Error": {"Code": "UnauthorizedOperation", "Message": "not authorized"}},
                          "GetConsoleOutput")

    def unreachable() -> str:
        raise ConnectionError("endpoint not reachable")

    clock = Clock()
    read = read_console(denied, wait_s=300, sleep=clock.sleep, clock=lambda: clock.now)
    assert read.problem == "console output unreadable (UnauthorizedOperation)" and clock.slept == []
    assert read_console(unreachable).problem == "console output unreadable (ConnectionError)"


def test_kept_fingerprints_round_trip_and_malformed_ones_count_as_none() -> None:
    keys = parse_console(_al2023_console())
    assert keys_from_dict(keys_to_dict(keys)) == keys
    for bad in (None, "SHA256:x", {"ED25519": "SHA256:x"}, {"ED25519": ["md5:aa"]}, [1, 2]):
        assert keys_from_dict(bad).count == 0
