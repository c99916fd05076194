"""`invoke provision`: one tuned-benchmark host in EC2, idempotently (a re-run finds the existing host).

Order: AMI (SSM parameter) -> key pair -> security group (/32) -> placement group (policy) -> instance (or the
existing one) -> wait running + status ok -> host record in the state folder -> hourly cost line.
``dry_run`` prints the same plan without a single AWS call.
"""

from __future__ import annotations

import getpass
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from infra.aws import ami as A
from infra.aws import instances as I
from infra.aws import keys as K
from infra.aws import network as N
from infra.aws import placement as P
from infra.aws import tags as T
from infra.aws.clients import DEFAULT_INSTANCE_TYPE, AwsError, AwsTarget
from infra.aws.identity import caller_identity
from infra.aws.pricing import format_cost, hourly_estimate
from infra.aws.userdata import render_ttl_user_data
from infra.hosts import HostRecord, HostStore
from infra.remote import FINGERPRINTS_KEY, forget_host


@dataclass(frozen=True)
class ProvisionRequest:
    name: str = "tokyo"
    region: str = ""
    endpoint_url: str = ""
    instance_type: str = DEFAULT_INSTANCE_TYPE
    ami_param: str = A.DEFAULT_AMI_PARAM
    cidr: str = ""  # "" = detect the caller's public address
    one_thread_per_core: bool = False
    ttl_hours: float = 6.0
    volume_gb: int = 30
    owner: str = ""
    placement: str = "preferred"
    hourly_usd: float | None = None
    user: str = ""  # SSH login; default from the AMI family
    dry_run: bool = False


def _owner(req: ProvisionRequest) -> str:
    return req.owner or getpass.getuser()


def names_for(session: str, owner: str) -> dict[str, str]:
    """Account-wide names of the host's key pair, security group and placement group: they carry the owner, so
    two people of one account who both keep the default host name never collide (nor delete each other's)."""
    base = f"caerus-{owner}-{session}"
    return {"key": base, "sg": base, "pg": base}


def describe_plan(req: ProvisionRequest, target: AwsTarget) -> list[str]:
    """Human-readable plan (used by --dry-run; touches nothing)."""
    n = names_for(req.name, _owner(req))
    hourly = req.hourly_usd if req.hourly_usd is not None else hourly_estimate(target.region, req.instance_type)
    return [
        f"region {target.region}{' via ' + target.endpoint_url if target.endpoint_url else ''}",
        f"AMI from SSM parameter {req.ami_param} (login user {req.user or A.ssh_user_for(req.ami_param)})",
        f"key pair {n['key']}: ed25519 generated locally, private key 0600 in the state folder",
        f"security group {n['sg']}: tcp/22 from {req.cidr or 'your detected public /32'} only",
        f"placement group {n['pg']} (cluster), policy {req.placement}",
        f"instance {req.instance_type}"
        f"{', ThreadsPerCore=1' if req.one_thread_per_core else ''}, IMDSv2 required, gp3 {req.volume_gb} GB root,"
        f" shutdown behaviour terminate",
        f"time-to-live {req.ttl_hours:g} h (shutdown -h in user data + persistent systemd timer)",
        f"tags project={T.PROJECT_VALUE} owner={_owner(req)} {T.OWNER_ARN_KEY}=<your AWS identity (STS ARN)> "
        f"{T.OWNER_ACCOUNT_KEY}=<its account> session={req.name} expiry=<launch + TTL>",
        f"cost {format_cost(hourly)}",
    ]


def provision(req: ProvisionRequest, store: HostStore, say: Callable[[str], None] = print) -> HostRecord | None:
    target = AwsTarget.resolve(req.region, req.endpoint_url)
    if req.ttl_hours <= 0:
        raise AwsError(f"--ttl-hours must be positive, got {req.ttl_hours}")
    if req.cidr:
        N.validate_cidr(req.cidr)  # refuse a wide CIDR before anything else
    if req.dry_run:
        say("provision plan (dry run, no AWS calls):")
        for line in describe_plan(req, target):
            say(f"  - {line}")
        return None

    ec2, ssm = target.client("ec2"), target.client("ssm")
    n = names_for(req.name, _owner(req))
    who = caller_identity(target.client("sts"))  # the AWS identity owns the host, beside the login name
    now = datetime.now(UTC).replace(microsecond=0)
    expiry = now + timedelta(hours=req.ttl_hours)
    tags = T.project_tags(req.name, _owner(req), expiry.strftime("%Y-%m-%dT%H:%M:%SZ"), who.arn, who.account)
    hourly = req.hourly_usd if req.hourly_usd is not None else hourly_estimate(target.region, req.instance_type)
    user = req.user or A.ssh_user_for(req.ami_param)

    existing = I.find_instance(ec2, req.name, _owner(req), who.arn)  # a colleague's host of this name is not ours
    cidr = N.validate_cidr(req.cidr) if req.cidr else N.detect_caller_cidr()
    key_path = store.key_path(req.name)
    key_name, created = K.ensure_key_pair(ec2, n["key"], key_path, tags)
    say(f"key pair {key_name}: {'imported' if created else 'exists'} (private key {key_path})")
    sg_id, sg_changes = N.ensure_security_group(ec2, n["sg"], cidr, tags)
    say(f"security group {sg_id}: {'; '.join(sg_changes) or 'unchanged'} (tcp/22 from {cidr} only)")

    if existing is not None:
        instance_id = existing["InstanceId"]
        expiry_tag = T.as_dict(existing.get("Tags")).get("expiry", "")
        pg = (existing.get("Placement") or {}).get("GroupName", "")
        say(f"found existing instance {instance_id} ({existing['State']['Name']}) for session {req.name}")
        if existing["State"]["Name"] in ("stopped", "stopping"):
            raise AwsError(f"{instance_id} is {existing['State']['Name']}; start it or `invoke teardown` first")
    else:
        if req.name in store.names():  # the previous host of this name is gone (TTL, console): forget it
            old = store.load(req.name)
            forget_host(store.known_hosts, old.host, old.port)
            store.clear_results(req.name)
            say(f"previous host {old.instance_id or old.host} of {req.name} is gone: cleared its pin and results")
        image = A.resolve_ami(ssm, req.ami_param)
        say(f"AMI {image} from {req.ami_param}")
        pg = P.resolve_placement(ec2, n["pg"], tags, req.placement, say)
        spec = I.LaunchSpec(
            ami=image,
            instance_type=req.instance_type,
            key_name=key_name,
            security_group_id=sg_id,
            root_device=A.root_device_name(ec2, image),
            user_data=render_ttl_user_data(req.name, now, timedelta(hours=req.ttl_hours)),
            tags=tags,
            placement_group=pg,
            threads_per_core=1 if req.one_thread_per_core else None,
            core_count=I.core_count(ec2, req.instance_type) if req.one_thread_per_core else None,
            volume_gb=req.volume_gb,
        )
        instance_id = I.launch(ec2, spec)
        expiry_tag = tags["expiry"]
        say(f"launched {instance_id} ({req.instance_type}) in {target.region}")
    I.wait(ec2, "instance_running", instance_id, say)
    I.wait(ec2, "instance_status_ok", instance_id, say)
    inst = I.describe(ec2, instance_id)
    address = inst.get("PublicIpAddress") or inst.get("PrivateIpAddress") or ""
    if not address:
        raise AwsError(f"{instance_id} has no IP address")
    launched = inst.get("LaunchTime")
    kept_fingerprints = {}  # the same instance found again: keep the host key fingerprints read from its console
    if req.name in store.names():
        old = store.load(req.name)
        if old.instance_id == instance_id and FINGERPRINTS_KEY in old.extra:
            kept_fingerprints = {FINGERPRINTS_KEY: old.extra[FINGERPRINTS_KEY]}
    record = HostRecord(
        name=req.name,
        host=address,
        user=user,
        key_path=str(key_path),
        instance_id=instance_id,
        region=target.region,
        instance_type=inst.get("InstanceType", req.instance_type),
        launched_at=launched.astimezone(UTC).isoformat() if launched else now.isoformat(),
        expires_at=expiry_tag,
        hourly_usd=hourly or 0.0,
        placement_group=pg,
        security_group_id=sg_id,
        key_name=key_name,
        endpoint_url=target.endpoint_url,
        extra={"ami_param": req.ami_param, "one_thread_per_core": req.one_thread_per_core, "cidr": cidr,
               "owner_arn": who.arn, **kept_fingerprints},
    )
    path = store.save(record)
    say(f"host {req.name}: {user}@{address} ({instance_id}), expires {expiry_tag}; state {path}")
    say(f"cost {format_cost(hourly)}")
    return record


def plan_json(req: ProvisionRequest) -> str:
    return json.dumps(describe_plan(req, AwsTarget.resolve(req.region, req.endpoint_url)), indent=2)
