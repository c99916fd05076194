"""The --host-key policy end to end: the real sshd's key against an instance console served over HTTP by a small
EC2 endpoint on 127.0.0.1 that boto3 talks to as it would to EC2 (GetConsoleOutput answered with a console that
lists the sshd's key, another key, nothing yet, or an authorization error). moto's own console (no fingerprints,
unknown instance) is covered in test_infra_ssh_host.py."""

from __future__ import annotations

import base64
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest

from infra.configure import BOOT_ID, reboot_and_wait
from infra.hostkeys import fingerprint_sha256
from infra.remote import FINGERPRINTS_KEY, HostKeyMismatch, connect, forget_host, open_host
from tests.fixtures.infra_sshd import InfraHost, make_key
from tests.kit.http_stub import QuietHandler, serving

DENIED = (403, "<Response><Errors><Error><Code>UnauthorizedOperation</Code><Message>You are not authorized to "
               "perform this operation.</Message></Error></Errors><RequestID>r-1</RequestID></Response>")


def _ok(console: str) -> tuple[int, str]:
    b64 = base64.b64encode(console.encode()).decode()
    return 200, ('<GetConsoleOutputResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>r-1'
                 '</requestId><instanceId>i-0abc</instanceId><timestamp>2025-01-01T00:00:00.000Z</timestamp>'
                 f'<output>{b64}</output></GetConsoleOutputResponse>')


def _console(pub_line: str) -> str:
    b64 = pub_line.split()[1]
    fp = fingerprint_sha256(base64.b64decode(b64))
    return ("[    5.1] cloud-init[1520]: Cloud-init v. 22.2.2\r\n"
            "ec2: -----BEGIN SSH HOST KEY FINGERPRINTS-----\r\n"
            f"ec2: 256 {fp} root@ip-10-0-0-1 (ED25519)\r\n"
            "ec2: -----END SSH HOST KEY FINGERPRINTS-----\r\n")


@dataclass
class ConsoleEndpoint:
    """Answers GetConsoleOutput with ``answers`` in turn (the last one repeats); counts the calls."""

    url: str = ""
    answers: list[tuple[int, str]] = field(default_factory=list)
    calls: int = 0


@pytest.fixture
def console_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[ConsoleEndpoint]:
    state = ConsoleEndpoint()

    class Handler(QuietHandler):
        def do_POST(self) -> None:
            body = urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
            assert body["Action"] == ["GetConsoleOutput"]
            state.calls += 1
            status, text = state.answers[0] if len(state.answers) == 1 else state.answers.pop(0)
            self.reply(text.encode(), status, "text/xml")

    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("CAERUS_AWS_ENDPOINT", raising=False)
    with serving(Handler) as state.url:
        yield state


def _as_instance(h: InfraHost, endpoint: ConsoleEndpoint) -> None:
    h.record.instance_id, h.record.region, h.record.endpoint_url = "i-0abc", "ap-northeast-1", endpoint.url


def _pub(h: InfraHost) -> str:
    return (h.server.dir / "host_ed25519.pub").read_text()


def test_matching_console_verifies_and_the_fingerprints_are_kept(infra_test_host: InfraHost,
                                                                 console_endpoint: ConsoleEndpoint) -> None:
    h = infra_test_host
    _as_instance(h, console_endpoint)
    console_endpoint.answers = [_ok(_console(_pub(h)))]
    said: list[str] = []
    connect(h.record, h.store.known_hosts, said.append).close()
    check = h.store.load_json("loop", "host_key")
    assert check["status"] == "verified" and check["detail"] == "ED25519 key matches the instance's console output"
    kept = h.store.load("loop").extra[FINGERPRINTS_KEY]["keys"]
    assert kept == {"ED25519": [check["fingerprint"]]}
    # The pin is gone and the console no longer answers (a reboot scrolled it out; a permission changed): the
    # kept fingerprints verify the key, and the console is not asked.
    forget_host(h.store.known_hosts, h.record.host, h.record.port)
    console_endpoint.answers, calls = [DENIED], console_endpoint.calls
    connect(h.store.load("loop"), h.store.known_hosts, said.append).close()
    again = h.store.load_json("loop", "host_key")
    assert again["status"] == "verified" and "kept in the host record" in again["detail"]
    assert console_endpoint.calls == calls


def test_unreadable_console_is_refused_under_verified_and_trusted_under_tofu(infra_test_host: InfraHost,
                                                                           console_endpoint: ConsoleEndpoint) -> None:
    h = infra_test_host
    _as_instance(h, console_endpoint)
    console_endpoint.answers = [DENIED]
    with pytest.raises(HostKeyMismatch) as exc:
        connect(h.record, h.store.known_hosts, lambda s: None)
    assert str(exc.value) == (f"host key of 127.0.0.1:{h.record.port} not verified: console output unreadable "
                              "(UnauthorizedOperation) — use --host-key tofu to trust on first use")
    assert not h.store.known_hosts.exists()
    said: list[str] = []
    connect(h.record, h.store.known_hosts, said.append, host_key="tofu").close()
    assert h.store.load_json("loop", "host_key")["detail"] == \
        "--host-key tofu: console output unreadable (UnauthorizedOperation)"
    assert any("trusted-on-first-use" in s for s in said)


def test_a_console_listing_another_key_is_refused(infra_test_host: InfraHost,
                                                  console_endpoint: ConsoleEndpoint) -> None:
    h = infra_test_host
    _as_instance(h, console_endpoint)
    impostor = make_key(h.server.dir / "impostor_ed25519").with_suffix(".pub").read_text()
    console_endpoint.answers = [_ok(_console(impostor))]
    with pytest.raises(HostKeyMismatch, match="which the instance's console output does not list"):
        connect(h.record, h.store.known_hosts, lambda s: None)
    assert not h.store.known_hosts.exists() or h.store.known_hosts.read_text() == ""
    # what the console said was kept: a later first contact, under tofu too, is refused against it
    assert FINGERPRINTS_KEY in h.record.extra
    console_endpoint.answers = [_ok(_console(_pub(h)))]
    with pytest.raises(HostKeyMismatch, match=r"which the fingerprints kept in the host record .* does not list"):
        connect(h.record, h.store.known_hosts, lambda s: None, host_key="tofu")
    assert not h.store.known_hosts.exists() or h.store.known_hosts.read_text() == ""


def test_a_young_instance_is_polled_until_its_keys_are_printed(infra_test_host: InfraHost,
                                                               console_endpoint: ConsoleEndpoint,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import infra.remote

    monkeypatch.setattr(infra.remote, "CONSOLE_POLL_S", 0.05)
    h = infra_test_host
    _as_instance(h, console_endpoint)
    h.record.launched_at = datetime.now(UTC).isoformat()
    booting = _ok("[    0.000000] Linux version 6.1\r\n")
    console_endpoint.answers = [booting, booting, _ok(_console(_pub(h)))]
    said: list[str] = []
    connect(h.record, h.store.known_hosts, said.append).close()
    assert console_endpoint.calls == 3
    assert h.store.load_json("loop", "host_key")["status"] == "verified"
    assert any("a young instance may not have printed them yet" in s for s in said)


def test_an_old_instance_without_keys_on_its_console_is_not_waited_for(infra_test_host: InfraHost,
                                                                       console_endpoint: ConsoleEndpoint) -> None:
    h = infra_test_host
    _as_instance(h, console_endpoint)
    h.record.launched_at = "2020-01-01T00:00:00+00:00"  # long booted: the block scrolled out, waiting will not help
    console_endpoint.answers = [_ok("[ 9000.0] nothing here\r\n")]
    with pytest.raises(HostKeyMismatch, match="no host key fingerprints in the console output"):
        connect(h.record, h.store.known_hosts, lambda s: None)
    assert console_endpoint.calls == 1


def test_configure_keeps_the_console_fingerprints_before_its_reboot(infra_test_host: InfraHost,
                                                                    console_endpoint: ConsoleEndpoint) -> None:
    """First contact under tofu (no keys printed yet), then configure's reboot path: the console is read before
    the reboot and its fingerprints kept; a console contradicting the pinned key stops it."""
    h = infra_test_host
    _as_instance(h, console_endpoint)
    console_endpoint.answers = [_ok("booting\r\n")]
    host = open_host(h.record, h.store.known_hosts, lambda s: None, host_key="tofu")
    boot = h.prefix / BOOT_ID.lstrip("/")
    boot.parent.mkdir(parents=True)
    boot.write_text("boot-1\n")
    h.record.extra["reboot_command"] = f"sh -c 'echo boot-2 > {boot}'"
    impostor = make_key(h.server.dir / "impostor_ed25519").with_suffix(".pub").read_text()
    console_endpoint.answers = [_ok(_console(impostor))]
    with pytest.raises(HostKeyMismatch, match=r"pinned SSH host key of 127\.0\.0\.1 .* is not among the "
                                              r"instance's console fingerprints"):
        reboot_and_wait(host, h.record, h.store, lambda s: None, timeout_s=30, first_wait_s=0, poll_s=0.2)
    assert boot.read_text() == "boot-1\n" and FINGERPRINTS_KEY not in h.record.extra  # refused before rebooting
    console_endpoint.answers = [_ok(_console(_pub(h)))]
    said: list[str] = []
    new = reboot_and_wait(host, h.record, h.store, said.append, timeout_s=30, first_wait_s=0, poll_s=0.2)
    new.close()
    host.close()
    assert boot.read_text() == "boot-2\n" and said[-1] == "host is back"
    assert any("kept 1 host key fingerprint(s) from the console" in s for s in said)
    kept = h.store.load("loop").extra[FINGERPRINTS_KEY]["keys"]["ED25519"]
    assert kept == [h.store.load_json("loop", "host_key")["fingerprint"]]
