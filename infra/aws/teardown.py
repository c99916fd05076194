"""Delete what provision made, touching only resources tagged project=caerus, then verify nothing is left."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from infra.aws import instances as I
from infra.aws import placement as P
from infra.aws import tags as T
from infra.aws.clients import AwsError


def _instances(ec2: Any, session: str | None) -> list[dict]:
    out = []
    for page in ec2.get_paginator("describe_instances").paginate(
        Filters=[*T.filters(session), {"Name": "instance-state-name", "Values": [*I.LIVE_STATES, "shutting-down"]}]
    ):
        for res in page.get("Reservations", []):
            out.extend(i for i in res.get("Instances", []) if T.is_ours(i.get("Tags"), session))
    return out


def _groups(ec2: Any, session: str | None) -> list[dict]:
    groups = ec2.describe_security_groups(Filters=T.filters(session)).get("SecurityGroups", [])
    return [g for g in groups if T.is_ours(g.get("Tags"), session)]


def _keys(ec2: Any, session: str | None) -> list[dict]:
    pairs = ec2.describe_key_pairs(Filters=T.filters(session)).get("KeyPairs", [])
    return [k for k in pairs if T.is_ours(k.get("Tags"), session)]


def leftovers(ec2: Any, session: str | None) -> list[str]:
    """Project-tagged resources still present (terminated instances do not count)."""
    left = [f"instance {i['InstanceId']} ({i['State']['Name']})" for i in _instances(ec2, session)]
    left += [f"security group {g['GroupId']}" for g in _groups(ec2, session)]
    left += [f"key pair {k['KeyName']}" for k in _keys(ec2, session)]
    return left


def teardown(ec2: Any, session: str | None, say: Callable[[str], None] = print) -> list[str]:
    """Terminate and delete the session's (or, with session=None, every) project-tagged resource."""
    removed: list[str] = []
    instances = _instances(ec2, session)
    ids = [i["InstanceId"] for i in instances]
    if ids:
        ec2.terminate_instances(InstanceIds=ids)
        say(f"terminating {', '.join(ids)}")
        for iid in ids:
            I.wait(ec2, "instance_terminated", iid, say)
        removed += [f"instance {i}" for i in ids]
    for g in _groups(ec2, session):
        try:
            ec2.delete_security_group(GroupId=g["GroupId"])
        except ClientError as exc:
            raise AwsError(f"deleting security group {g['GroupId']} failed: {exc}") from exc
        removed.append(f"security group {g['GroupId']}")
    for k in _keys(ec2, session):
        ec2.delete_key_pair(KeyName=k["KeyName"])
        removed.append(f"key pair {k['KeyName']}")
    removed += [f"placement group {g}" for g in P.delete_placement_groups(ec2, session)]
    left = leftovers(ec2, session)
    if left:
        raise AwsError(f"teardown left project resources behind: {', '.join(left)}")
    say(f"teardown verified: no project-tagged resources left{'' if session is None else ' for ' + session}")
    return removed
