"""provision / teardown / status against moto's EC2 + SSM server on 127.0.0.1 (AWS itself is unreachable)."""

from __future__ import annotations

import base64
import stat
from pathlib import Path

import boto3
import pytest
from invoke import Context

from infra import invoke_tasks
from infra.aws.ami import UBUNTU_2404_PARAM
from infra.aws.clients import AwsError, AwsTarget
from infra.aws.network import detect_caller_cidr
from infra.aws.teardown import leftovers, teardown
from infra.hosts import HostStore
from infra.provision import ProvisionRequest, provision
from tests.fixtures.infra_moto import MotoServer
from tests.kit.http_stub import QuietHandler, serving

CIDR = "198.51.100.7/32"


def _ec2(moto: MotoServer):
    return AwsTarget.resolve("ap-northeast-1", moto.endpoint).client("ec2")


def _live_instances(ec2, session: str | None = None) -> list[dict]:
    filters = [{"Name": "instance-state-name", "Values": ["pending", "running"]}]
    if session:
        filters.append({"Name": "tag:session", "Values": [session]})
    res = ec2.describe_instances(Filters=filters)["Reservations"]
    return [i for r in res for i in r["Instances"]]


def _req(**kw) -> ProvisionRequest:
    base = {"name": "tokyo", "cidr": CIDR, "owner": "alice", "ttl_hours": 4.0}
    return ProvisionRequest(**{**base, **kw})


def test_infra_provision_creates_tagged_host_with_ttl(moto_server: MotoServer, tmp_path: Path) -> None:
    store = HostStore(tmp_path / "state")
    out: list[str] = []
    rec = provision(_req(one_thread_per_core=True), store, out.append)
    assert rec is not None
    ec2 = _ec2(moto_server)
    [inst] = _live_instances(ec2)
    assert inst["InstanceId"] == rec.instance_id and inst["InstanceType"] == "c7i.2xlarge"
    tags = {t["Key"]: t["Value"] for t in inst["Tags"]}
    assert tags["project"] == "caerus" and tags["owner"] == "alice" and tags["session"] == "tokyo"
    assert tags["expiry"] == rec.expires_at and tags["expiry"].endswith("Z")
    assert inst["MetadataOptions"]["HttpTokens"] == "required"
    attr = ec2.describe_instance_attribute(InstanceId=rec.instance_id, Attribute="instanceInitiatedShutdownBehavior")
    assert attr["InstanceInitiatedShutdownBehavior"]["Value"] == "terminate"
    ud = ec2.describe_instance_attribute(InstanceId=rec.instance_id, Attribute="userData")["UserData"]["Value"]
    user_data = base64.b64decode(ud).decode()
    assert "shutdown -h +240 " in user_data and "caerus-ttl.timer" in user_data
    assert f"OnCalendar={rec.expires_at[:10]} " in user_data
    vol_id = inst["BlockDeviceMappings"][0]["Ebs"]["VolumeId"]
    vol = ec2.describe_volumes(VolumeIds=[vol_id])["Volumes"][0]
    assert vol["VolumeType"] == "gp3"
    assert {t["Key"]: t["Value"] for t in vol.get("Tags", [])}.get("project") == "caerus"
    # security group: exactly one ingress rule, tcp/22 from the /32
    sg = ec2.describe_security_groups(GroupIds=[rec.security_group_id])["SecurityGroups"][0]
    assert [(p["IpProtocol"], p["FromPort"], p["ToPort"], [r["CidrIp"] for r in p["IpRanges"]])
            for p in sg["IpPermissions"]] == [("tcp", 22, 22, [CIDR])]
    assert {t["Key"]: t["Value"] for t in sg["Tags"]}["project"] == "caerus"
    kp = ec2.describe_key_pairs(KeyNames=[rec.key_name])["KeyPairs"][0]
    assert kp["KeyType"] == "ed25519" and {t["Key"] for t in kp["Tags"]} >= {"project", "session"}
    # private key + state record are 0600; the record holds no key material
    key = Path(rec.key_path)
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and key.read_text().startswith("-----BEGIN OPENSSH PRIVATE KEY")
    record_text = store.record_path("tokyo").read_text()
    assert stat.S_IMODE(store.record_path("tokyo").stat().st_mode) == 0o600
    assert "PRIVATE KEY" not in record_text and "PRIVATE KEY" not in "\n".join(out)
    # moto has no placement groups: the default policy says so and continues without one
    assert rec.placement_group == ""
    assert any("WITHOUT a placement group" in line and "placement group" in line for line in out)
    assert any("$0.448/h" in line for line in out)


def test_infra_provision_is_idempotent_and_reconciles_the_rule(moto_server: MotoServer, tmp_path: Path) -> None:
    store = HostStore(tmp_path / "state")
    first = provision(_req(), store, lambda s: None)
    ec2 = _ec2(moto_server)
    # someone widens the group by hand; the caller's address also changed
    ec2.authorize_security_group_ingress(GroupId=first.security_group_id, IpPermissions=[
        {"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22, "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}])
    out: list[str] = []
    second = provision(_req(cidr="203.0.113.9/32"), store, out.append)
    assert second.instance_id == first.instance_id
    assert len(_live_instances(ec2)) == 1
    assert any("found existing instance" in line for line in out)
    assert len(ec2.describe_key_pairs()["KeyPairs"]) == 1
    sg = ec2.describe_security_groups(GroupIds=[first.security_group_id])["SecurityGroups"][0]
    ranges = [r["CidrIp"] for p in sg["IpPermissions"] for r in p["IpRanges"]]
    assert ranges == ["203.0.113.9/32"]


def test_infra_placement_required_stops_before_launch(moto_server: MotoServer, tmp_path: Path) -> None:
    with pytest.raises(AwsError, match=r"placement group 'caerus-alice-tokyo'.*--placement required"):
        provision(_req(placement="required"), HostStore(tmp_path / "state"), lambda s: None)
    assert _live_instances(_ec2(moto_server)) == []


def test_infra_missing_ssm_parameter_names_it(moto_server: MotoServer, tmp_path: Path) -> None:
    with pytest.raises(AwsError, match=r"ubuntu/server/24\.04.*ParameterNotFound.*--ami-param"):
        provision(_req(ami_param=UBUNTU_2404_PARAM), HostStore(tmp_path / "state"), lambda s: None)
    assert _live_instances(_ec2(moto_server)) == []


def test_infra_wide_cidr_refused_before_any_call(tmp_path: Path) -> None:
    # endpoint is a closed port: any AWS call would fail with a connection error instead of this message
    req = _req(cidr="0.0.0.0/0", endpoint_url="http://127.0.0.1:1")
    with pytest.raises(AwsError, match="only a single /32"):
        provision(req, HostStore(tmp_path / "state"), lambda s: None)


def test_infra_dry_run_makes_no_calls(tmp_path: Path) -> None:
    out: list[str] = []
    store = HostStore(tmp_path / "state")
    assert provision(_req(endpoint_url="http://127.0.0.1:1", dry_run=True), store, out.append) is None
    text = "\n".join(out)
    assert "dry run" in text and "IMDSv2 required" in text and "tcp/22 from 198.51.100.7/32" in text
    assert store.names() == []


def test_infra_teardown_touches_only_project_resources(moto_server: MotoServer, tmp_path: Path) -> None:
    store = HostStore(tmp_path / "state")
    rec = provision(_req(), store, lambda s: None)
    other = provision(_req(name="osaka"), store, lambda s: None)
    ec2 = _ec2(moto_server)
    # an unrelated instance and group in the same account must survive
    ami = ec2.describe_images()["Images"][0]["ImageId"]
    foreign = ec2.run_instances(ImageId=ami, MinCount=1, MaxCount=1, InstanceType="t3.micro")["Instances"][0]
    foreign_sg = ec2.create_security_group(GroupName="not-ours", Description="x")["GroupId"]
    removed = teardown(ec2, "tokyo", lambda s: None)
    assert f"instance {rec.instance_id}" in removed and f"security group {rec.security_group_id}" in removed
    assert leftovers(ec2, "tokyo") == []
    alive = {i["InstanceId"] for i in _live_instances(ec2)}
    assert alive == {foreign["InstanceId"], other.instance_id}
    assert ec2.describe_security_groups(GroupIds=[foreign_sg])["SecurityGroups"]
    assert [k["KeyName"] for k in ec2.describe_key_pairs()["KeyPairs"]] == ["caerus-alice-osaka"]
    # --all: every project-tagged resource, still nothing foreign
    teardown(ec2, None, lambda s: None)
    assert leftovers(ec2, None) == []
    assert {i["InstanceId"] for i in _live_instances(ec2)} == {foreign["InstanceId"]}
    assert ec2.describe_security_groups(GroupIds=[foreign_sg])["SecurityGroups"]


def test_infra_caller_cidr_detection(tmp_path: Path) -> None:
    answers = iter([b"203.0.113.42\n", b"<html>captive portal</html>"])

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            self.reply(next(answers))

    with serving(Handler) as base:
        url = f"{base}/"
        assert detect_caller_cidr(url) == "203.0.113.42/32"
        with pytest.raises(AwsError, match="not a valid address"):
            detect_caller_cidr(url)
    with pytest.raises(AwsError, match="pass --cidr"):
        detect_caller_cidr("http://127.0.0.1:1/", timeout=2)


def test_infra_invoke_tasks_provision_status_teardown(moto_server: MotoServer, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    state = str(tmp_path / "state")
    invoke_tasks.provision(Context(), name="tokyo", cidr=CIDR, state_dir=state)
    invoke_tasks.status(Context(), state_dir=state)
    shown = capsys.readouterr().out
    assert "tokyo" in shown and "running" in shown and "$0.448/h" in shown
    invoke_tasks.teardown(Context(), name="tokyo", state_dir=state)
    shown = capsys.readouterr().out
    assert "teardown verified" in shown and "removed local state for tokyo" in shown
    assert HostStore(state).names() == []
    assert not (Path(state) / "keys" / "tokyo_ed25519").exists()
    assert _live_instances(_ec2(moto_server)) == []
    # a failing AWS step exits non-zero with a clear message, no traceback
    with pytest.raises(SystemExit) as exc:
        invoke_tasks.provision(Context(), name="t2", cidr=CIDR, ami_param="/nope", state_dir=state)
    assert exc.value.code == 1
    assert "SSM parameter '/nope'" in capsys.readouterr().err


def test_infra_provision_after_the_old_host_vanished_starts_clean(moto_server: MotoServer, tmp_path: Path) -> None:
    store = HostStore(tmp_path / "state")
    first = provision(_req(), store, lambda s: None)
    store.save_json("tokyo", "plan", {"hot": [1, 2, 3]})
    old_key = "AAAAC3NzaC1lZDI1NTE5AAAAIOldKeyOldKeyOldKeyOldKeyOldKeyOldKeyOld"
    store.known_hosts.write_text(f"{first.host} ssh-ed25519 {old_key}\n")
    ec2 = _ec2(moto_server)
    ec2.terminate_instances(InstanceIds=[first.instance_id])  # the TTL fired
    out: list[str] = []
    second = provision(_req(), store, out.append)
    assert second.instance_id != first.instance_id
    assert any("is gone: cleared its pin and results" in line for line in out)
    assert store.load_json("tokyo", "plan") is None
    assert first.host not in store.known_hosts.read_text()


def test_teardown_touches_only_your_hosts_in_one_region(moto_server: MotoServer, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    import dataclasses

    mine, theirs = HostStore(tmp_path / "mine"), HostStore(tmp_path / "theirs")
    provision(_req(owner="alice"), mine, lambda s: None)
    colleague = provision(_req(owner="bob"), theirs, lambda s: None)  # same default name, same account
    assert colleague is not None
    # a record of the same user for a host in another region: teardown of this region must not forget it
    other = dataclasses.replace(mine.load("tokyo"), name="ohio", region="us-east-2")
    mine.save(other)
    invoke_tasks.teardown(Context(), name="tokyo", all=True, owner="alice", state_dir=str(tmp_path / "mine"))
    shown = capsys.readouterr().out
    assert "of owner alice" in shown and "removed local state for tokyo" in shown
    assert "kept local state for ohio (region us-east-2, not ap-northeast-1)" in shown
    assert mine.names() == ["ohio"]
    live = _live_instances(_ec2(moto_server))
    assert [i["InstanceId"] for i in live] == [colleague.instance_id]  # bob's host of the same name is untouched
    teardown(_ec2(moto_server), None, lambda s: None)  # clean up what this test made


def _sts_identity(moto: MotoServer) -> dict:
    return AwsTarget.resolve("ap-northeast-1", moto.endpoint).client("sts").get_caller_identity()


def test_owner_tags_hold_the_aws_identity_and_teardown_is_scoped_on_it(moto_server: MotoServer, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Two people with the same login name "alice" but different AWS credentials (an IAM user made in moto): each
    host carries its creator's STS identity, and teardown (login + identity) deletes only the caller's."""
    me = _sts_identity(moto_server)
    iam = AwsTarget.resolve("ap-northeast-1", moto_server.endpoint).client("iam")
    iam.create_user(UserName="other-alice")
    key = iam.create_access_key(UserName="other-alice")["AccessKey"]
    mine = provision(_req(owner="alice"), HostStore(tmp_path / "mine"), lambda s: None)
    with monkeypatch.context() as m:  # the other person's process: their credentials (boto3 caches the first ones)
        m.setenv("AWS_ACCESS_KEY_ID", key["AccessKeyId"])
        m.setenv("AWS_SECRET_ACCESS_KEY", key["SecretAccessKey"])
        m.delenv("AWS_SESSION_TOKEN")
        boto3.setup_default_session()
        try:
            them = _sts_identity(moto_server)
            assert them["Arn"].endswith(":user/other-alice") and them["Arn"] != me["Arn"]
            theirs = provision(_req(owner="alice", name="osaka"), HostStore(tmp_path / "theirs"), lambda s: None)
        finally:
            m.undo()
            boto3.setup_default_session()
    assert mine is not None and theirs is not None
    ec2 = _ec2(moto_server)
    tags = {i["InstanceId"]: {t["Key"]: t["Value"] for t in i["Tags"]} for i in _live_instances(ec2)}
    assert tags[mine.instance_id]["owner"] == tags[theirs.instance_id]["owner"] == "alice"
    assert tags[mine.instance_id]["owner-arn"] == me["Arn"] and tags[theirs.instance_id]["owner-arn"] == them["Arn"]
    assert tags[mine.instance_id]["owner-account"] == me["Account"]
    sg = ec2.describe_security_groups(GroupIds=[theirs.security_group_id])["SecurityGroups"][0]
    assert {t["Key"]: t["Value"] for t in sg["Tags"]}["owner-arn"] == them["Arn"]
    assert mine.extra["owner_arn"] == me["Arn"]
    # every resource of login alice, in the region: only the caller's identity's go
    invoke_tasks.teardown(Context(), all=True, owner="alice", state_dir=str(tmp_path / "mine"))
    assert f"of owner alice ({me['Arn']})" in capsys.readouterr().out
    assert [i["InstanceId"] for i in _live_instances(ec2)] == [theirs.instance_id]
    assert [k["KeyName"] for k in ec2.describe_key_pairs()["KeyPairs"]] == ["caerus-alice-osaka"]
    assert leftovers(ec2, None, "alice", them["Arn"]) != [] and leftovers(ec2, None, "alice", me["Arn"]) == []
    teardown(ec2, None, lambda s: None)  # clean up what this test made


def test_an_existing_key_pair_of_another_key_is_refused_naming_both(moto_server: MotoServer, tmp_path: Path) -> None:
    from infra.aws.keys import generate_keypair, local_fingerprints

    store = HostStore(tmp_path / "state")
    first = provision(_req(), store, lambda s: None)
    ec2 = _ec2(moto_server)
    remote_fp = ec2.describe_key_pairs(KeyNames=[first.key_name])["KeyPairs"][0]["KeyFingerprint"]
    assert remote_fp in local_fingerprints(Path(first.key_path)).values()  # moto's form, computed here
    generate_keypair(Path(first.key_path))  # the local key was replaced (or someone else's key holds the name)
    with pytest.raises(AwsError) as exc:
        provision(_req(), store, lambda s: None)
    msg = str(exc.value)
    local_fp = local_fingerprints(Path(first.key_path))["sha256-der"]
    assert f"key pair 'caerus-alice-tokyo' in EC2 has fingerprint {remote_fp!r}" in msg
    assert f"the local key {first.key_path} has {local_fp!r}" in msg and remote_fp != local_fp
    assert len(_live_instances(ec2)) == 1
    teardown(ec2, None, lambda s: None)


def test_an_imported_rsa_key_pair_is_compared_by_its_md5(moto_server: MotoServer, tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from infra.aws.keys import ensure_key_pair, local_fingerprints

    path = tmp_path / "rsa_key"
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                       serialization.NoEncryption()))
    ec2 = _ec2(moto_server)
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    ec2.import_key_pair(KeyName="rsa-pair", PublicKeyMaterial=public)
    remote_fp = ec2.describe_key_pairs(KeyNames=["rsa-pair"])["KeyPairs"][0]["KeyFingerprint"]
    assert remote_fp == local_fingerprints(path)["md5-der"]  # RFC 4716 MD5 of the DER public key
    assert ensure_key_pair(ec2, "rsa-pair", path, {}) == ("rsa-pair", False)
    other = tmp_path / "other_key"
    other.write_bytes(rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()))
    with pytest.raises(AwsError, match=f"has fingerprint '{remote_fp}', but the local key {other} has "
                                       f"'{local_fingerprints(other)['md5-der']}'"):
        ensure_key_pair(ec2, "rsa-pair", other, {})
