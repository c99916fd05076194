"""Delete what provision made, touching only resources tagged project=caerus *and* owner=<your login> *and*
owner-arn=<your AWS identity> (in a shared account a colleague's host of the same name is never touched, nor one of
someone with your login name but other credentials), in one region, then verify nothing is left."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from infra.aws import instances as I
from infra.aws import placement as P
from infra.aws import tags as T
from infra.aws.clients import AwsError


def _instances(ec2: Any, session: str | None, owner: str | None = None, owner_arn: str | None = None) -> list[dict]:
    out = []
    states = {"Name": "instance-state-name", "Values": [*I.LIVE_STATES, "shutting-down"]}
    pages = ec2.get_paginator("describe_instances").paginate(Filters=[*T.filters(session, owner, owner_arn), states])
    for page in pages:
        for res in page.get("Reservations", []):
            out.extend(i for i in res.get("Instances", []) if T.is_ours(i.get("Tags"), session, owner, owner_arn))
    return out


def _groups(ec2: Any, session: str | None, owner: str | None = None, owner_arn: str | None = None) -> list[dict]:
    groups = ec2.describe_security_groups(Filters=T.filters(session, owner, owner_arn)).get("SecurityGroups", [])
    return [g for g in groups if T.is_ours(g.get("Tags"), session, owner, owner_arn)]


def _keys(ec2: Any, session: str | None, owner: str | None = None, owner_arn: str | None = None) -> list[dict]:
    pairs = ec2.describe_key_pairs(Filters=T.filters(session, owner, owner_arn)).get("KeyPairs", [])
    return [k for k in pairs if T.is_ours(k.get("Tags"), session, owner, owner_arn)]


def leftovers(ec2: Any, session: str | None, owner: str | None = None, owner_arn: str | None = None) -> list[str]:
    """Project-tagged resources (of ``owner`` / ``owner_arn`` when given) still present (terminated instances do
    not count)."""
    left = [f"instance {i['InstanceId']} ({i['State']['Name']})" for i in _instances(ec2, session, owner, owner_arn)]
    left += [f"security group {g['GroupId']}" for g in _groups(ec2, session, owner, owner_arn)]
    left += [f"key pair {k['KeyName']}" for k in _keys(ec2, session, owner, owner_arn)]
    return left


def teardown(ec2: Any, session: str | None, say: Callable[[str], None] = print, owner: str | None = None,
             owner_arn: str | None = None) -> list[str]:
    """Terminate and delete the session's (or, with session=None, every) project-tagged resource of ``owner`` (the
    login name) and ``owner_arn`` (the AWS identity); None: any, for tests and a single-user account."""
    removed: list[str] = []
    instances = _instances(ec2, session, owner, owner_arn)
    ids = [i["InstanceId"] for i in instances]
    if ids:
        ec2.terminate_instances(InstanceIds=ids)
        say(f"terminating {', '.join(ids)}")
        for iid in ids:
            I.wait(ec2, "instance_terminated", iid, say)
        removed += [f"instance {i}" for i in ids]
    for g in _groups(ec2, session, owner, owner_arn):
        try:
            ec2.delete_security_group(GroupId=g["GroupId"])
        except ClientError as exc:
            raise AwsError(f"deleting security group {g['GroupId']} failed: {exc}") from exc
        removed.append(f"security group {g['GroupId']}")
    for k in _keys(ec2, session, owner, owner_arn):
        ec2.delete_key_pair(KeyName=k["KeyName"])
        removed.append(f"key pair {k['KeyName']}")
    removed += [f"placement group {g}" for g in P.delete_placement_groups(ec2, session, owner, owner_arn)]
    left = leftovers(ec2, session, owner, owner_arn)
    if left:
        raise AwsError(f"teardown left project resources behind: {', '.join(left)}")
    who = "" if owner is None else f" of owner {owner}"
    who += "" if owner_arn is None else f" ({owner_arn})"
    say(f"teardown verified: no project-tagged resources{who} left{'' if session is None else ' for ' + session}")
    return removed
