"""caerus.metrics.env probes: parsing sysfs-style files, chronyc against a real chronyd, IMDSv2 gating."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from caerus.metrics import env
from tests.fixtures.common import require_binary
from tests.kit.http_stub import QuietHandler, serving


def test_collect_env_has_every_section_and_is_json() -> None:
    doc = env.collect_env(plan={"hot": [1]})
    for key in ("cpu_model", "topology", "kernel", "isolation", "governor", "thp", "clocksource", "chrony",
                "python", "git", "ec2", "plan"):
        assert key in doc, key
    assert doc["topology"]["logical_cpus"] >= 1
    assert doc["python"]["packages"]["hdrhistogram"] != "not installed"
    json.dumps(doc)


def test_thp_and_missing_files(tmp_path: Path) -> None:
    f = tmp_path / "enabled"
    f.write_text("always [madvise] never\n")
    assert env.thp(str(f)) == "madvise"
    missing = env.thp(str(tmp_path / "nope"))
    assert isinstance(missing, dict) and "unavailable" in missing


def test_cpu_model_from_cpuinfo(tmp_path: Path) -> None:
    f = tmp_path / "cpuinfo"
    f.write_text("processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum 8488C\n")
    assert env.cpu_model(str(f)) == "Intel(R) Xeon(R) Platinum 8488C"


def test_parse_chrony_tracking_fields() -> None:
    line = ("A9FEA97B,169.254.169.123,4,1733900000.1,0.000001,-0.000002,0.000003,-1.5,0.001,0.02,0.0005,"
            "0.0001,16.2,Normal")
    out = env.parse_chrony_tracking(line)
    assert out["refname"] == "169.254.169.123" and out["stratum"] == 4.0 and out["leap"] == "Normal"
    assert out["last_offset_s"] == -0.000002


def test_chrony_tracking_against_real_chronyd(tmp_path: Path) -> None:
    chronyd = require_binary("chronyd", "chrony")
    require_binary("chronyc", "chrony")
    sock_dir = tmp_path / "run"
    sock_dir.mkdir(mode=0o700)
    sock = sock_dir / "chronyd.sock"
    conf = tmp_path / "chrony.conf"
    conf.write_text(f"bindcmdaddress {sock}\ncmdport 0\nport 0\npidfile {tmp_path / 'chronyd.pid'}\n"
                    f"driftfile {tmp_path / 'drift'}\n")
    proc = subprocess.Popen([chronyd, "-x", "-u", "root", "-d", "-f", str(conf)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 15
        while not sock.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert sock.exists(), f"chronyd did not create its command socket (exit {proc.poll()})"
        out = env.chrony_tracking(str(sock))
        assert "unavailable" not in out, out
        assert set(env.CHRONY_FIELDS) <= set(out)
        assert isinstance(out["stratum"], float)
    finally:
        proc.terminate()
        proc.wait(10)
    gone = env.chrony_tracking(str(sock))
    assert "unavailable" in gone


class _Imds(QuietHandler):
    def do_PUT(self) -> None:
        self._reply("TOKEN")

    def do_GET(self) -> None:
        if self.headers.get("X-aws-ec2-metadata-token") != "TOKEN":
            self.send_response(401)
            self.end_headers()
            return
        values = {"/latest/meta-data/instance-id": "i-0abc", "/latest/meta-data/instance-type": "c7i.2xlarge",
                  "/latest/meta-data/placement/availability-zone": "ap-northeast-1a"}
        self._reply(values[self.path])

    def _reply(self, body: str) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(body.encode())


def test_imds_only_queried_on_ec2(tmp_path: Path) -> None:
    with serving(_Imds) as base:
        not_ec2 = tmp_path / "dmi-plain"
        not_ec2.mkdir()
        (not_ec2 / "sys_vendor").write_text("QEMU\n")
        out = env.ec2_identity(dmi=str(not_ec2), base=base)
        assert "unavailable" in out and "not an EC2" in out["unavailable"]
        ec2 = tmp_path / "dmi-ec2"
        ec2.mkdir()
        (ec2 / "sys_vendor").write_text("Amazon EC2\n")
        out = env.ec2_identity(dmi=str(ec2), base=base, timeout=5)
        assert out == {"instance_id": "i-0abc", "instance_type": "c7i.2xlarge",
                       "availability_zone": "ap-northeast-1a"}
