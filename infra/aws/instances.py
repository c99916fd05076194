"""Find, launch and wait for the benchmark instance (IMDSv2 required, gp3 root, terminate on shutdown)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError, WaiterError

from infra.aws import tags as T
from infra.aws.clients import AwsError

LIVE_STATES = ("pending", "running", "stopping", "stopped")


@dataclass(frozen=True)
class LaunchSpec:
    ami: str
    instance_type: str
    key_name: str
    security_group_id: str
    root_device: str
    user_data: str
    tags: dict[str, str]
    placement_group: str = ""
    threads_per_core: int | None = None  # 1 = one thread per core (needs the core count)
    core_count: int | None = None
    volume_gb: int = 30


def run_instances_args(spec: LaunchSpec) -> dict[str, Any]:
    """The exact RunInstances request (pure; the dry run prints it)."""
    args: dict[str, Any] = {
        "ImageId": spec.ami,
        "InstanceType": spec.instance_type,
        "KeyName": spec.key_name,
        "SecurityGroupIds": [spec.security_group_id],
        "MinCount": 1,
        "MaxCount": 1,
        "InstanceInitiatedShutdownBehavior": "terminate",
        "UserData": spec.user_data,
        "MetadataOptions": {"HttpTokens": "required", "HttpEndpoint": "enabled", "HttpPutResponseHopLimit": 1},
        "BlockDeviceMappings": [
            {
                "DeviceName": spec.root_device,
                "Ebs": {"VolumeSize": spec.volume_gb, "VolumeType": "gp3", "DeleteOnTermination": True,
                        "Encrypted": True},
            }
        ],
        "TagSpecifications": [T.tag_spec("instance", spec.tags), T.tag_spec("volume", spec.tags)],
    }
    if spec.placement_group:
        args["Placement"] = {"GroupName": spec.placement_group}
    if spec.threads_per_core is not None:
        if not spec.core_count:
            raise AwsError("ThreadsPerCore needs the instance type's core count")
        args["CpuOptions"] = {"CoreCount": spec.core_count, "ThreadsPerCore": spec.threads_per_core}
    return args


def core_count(ec2: Any, instance_type: str) -> int:
    info = ec2.describe_instance_types(InstanceTypes=[instance_type])["InstanceTypes"][0]["VCpuInfo"]
    if 1 not in info.get("ValidThreadsPerCore", [1]):
        raise AwsError(f"{instance_type} does not allow ThreadsPerCore=1")
    return int(info["DefaultCores"])


def find_instance(ec2: Any, session: str, owner: str | None = None, owner_arn: str | None = None) -> dict | None:
    """The live project-tagged instance of ``session`` (and ``owner``, ``owner_arn``) (newest if several), or None."""
    found: list[dict] = []
    for page in ec2.get_paginator("describe_instances").paginate(
        Filters=[*T.filters(session, owner, owner_arn), {"Name": "instance-state-name", "Values": list(LIVE_STATES)}]
    ):
        for res in page.get("Reservations", []):
            found.extend(i for i in res.get("Instances", []) if T.is_ours(i.get("Tags"), session, owner, owner_arn))
    if not found:
        return None
    return max(found, key=lambda i: i.get("LaunchTime") or 0)


def launch(ec2: Any, spec: LaunchSpec) -> str:
    try:
        resp = ec2.run_instances(**run_instances_args(spec))
    except ClientError as exc:
        raise AwsError(f"RunInstances failed: {exc}") from exc
    return resp["Instances"][0]["InstanceId"]


def wait(ec2: Any, waiter_name: str, instance_id: str, say: Callable[[str], None] = print,
         delay: int = 5, max_attempts: int = 120) -> None:
    """A boto3 waiter with progress: one attempt per poll so the operator sees time passing."""
    waiter = ec2.get_waiter(waiter_name)
    start = time.monotonic()
    for attempt in range(1, max_attempts + 1):
        try:
            waiter.wait(InstanceIds=[instance_id], WaiterConfig={"Delay": delay, "MaxAttempts": 1})
        except WaiterError as exc:
            if "terminal failure state" in str(exc):
                raise AwsError(f"{instance_id}: {waiter_name} failed: {exc}") from exc
            say(f"  waiting for {waiter_name} on {instance_id}: {time.monotonic() - start:.0f} s "
                f"(poll {attempt}/{max_attempts})")
            time.sleep(delay)
            continue
        say(f"  {instance_id}: {waiter_name} after {time.monotonic() - start:.0f} s")
        return
    raise AwsError(f"{instance_id}: {waiter_name} not reached after {max_attempts} polls")


def describe(ec2: Any, instance_id: str) -> dict:
    return ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]
