"""The security group: SSH from the caller's /32 only, nothing wider, ever.

The caller's address is detected through checkip.amazonaws.com unless ``--cidr`` gives it. A CIDR wider than a
single address is refused before any AWS call. On a re-run the group is reconciled: a rule for an old address is
revoked, the current one authorized, and any other ingress rule (someone widened it by hand) is revoked.
"""

from __future__ import annotations

import ipaddress
import urllib.request
from typing import Any

from botocore.exceptions import ClientError

from infra.aws import tags as T
from infra.aws.clients import AwsError

CHECKIP_URL = "https://checkip.amazonaws.com"
SSH_PORT = 22


def validate_cidr(cidr: str) -> str:
    """Normalised single-address CIDR ("203.0.113.7/32"); anything wider is refused."""
    try:
        net = ipaddress.ip_network(cidr if "/" in cidr else f"{cidr}/{32 if ':' not in cidr else 128}", strict=True)
    except ValueError as exc:
        raise AwsError(f"--cidr {cidr!r} is not a valid address or CIDR: {exc}") from exc
    if net.num_addresses != 1:
        raise AwsError(f"--cidr {cidr!r} opens SSH to {net.num_addresses} addresses; only a single /32 is allowed")
    return str(net)


def detect_caller_cidr(url: str = CHECKIP_URL, timeout: float = 5.0) -> str:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            text = resp.read(64).decode().strip()
    except OSError as exc:
        raise AwsError(f"could not detect your public IP via {url} ({exc}); pass --cidr A.B.C.D/32") from exc
    return validate_cidr(text)


def default_vpc(ec2: Any) -> str:
    vpcs = ec2.describe_vpcs(Filters=[{"Name": "is-default", "Values": ["true"]}]).get("Vpcs", [])
    if not vpcs:
        raise AwsError("no default VPC in this region; create one (`aws ec2 create-default-vpc`)")
    return vpcs[0]["VpcId"]


def _ssh_rule(cidr: str) -> dict:
    key = "Ipv6Ranges" if ":" in cidr else "IpRanges"
    entry = {"CidrIpv6": cidr} if ":" in cidr else {"CidrIp": cidr, "Description": "caerus ssh from caller"}
    return {"IpProtocol": "tcp", "FromPort": SSH_PORT, "ToPort": SSH_PORT, key: [entry]}


def _rule_matches(perm: dict, cidr: str) -> bool:
    if perm.get("IpProtocol") != "tcp" or perm.get("FromPort") != SSH_PORT or perm.get("ToPort") != SSH_PORT:
        return False
    ranges = [r.get("CidrIp") for r in perm.get("IpRanges", [])] + [
        r.get("CidrIpv6") for r in perm.get("Ipv6Ranges", [])
    ]
    return ranges == [cidr] and not perm.get("UserIdGroupPairs") and not perm.get("PrefixListIds")


def find_security_group(ec2: Any, name: str, vpc_id: str) -> dict | None:
    groups = ec2.describe_security_groups(
        Filters=[{"Name": "group-name", "Values": [name]}, {"Name": "vpc-id", "Values": [vpc_id]}]
    ).get("SecurityGroups", [])
    return groups[0] if groups else None


def ensure_security_group(ec2: Any, name: str, cidr: str, tags: dict[str, str]) -> tuple[str, list[str]]:
    """Return (group id, list of changes made). Ingress ends as exactly one rule: tcp/22 from ``cidr``."""
    cidr = validate_cidr(cidr)
    vpc_id = default_vpc(ec2)
    changes: list[str] = []
    group = find_security_group(ec2, name, vpc_id)
    if group is None:
        try:
            gid = ec2.create_security_group(
                GroupName=name,
                Description="caerus benchmark host: SSH from the operator's /32 only",
                VpcId=vpc_id,
                TagSpecifications=[T.tag_spec("security-group", tags)],
            )["GroupId"]
        except ClientError as exc:
            raise AwsError(f"creating security group {name!r} failed: {exc}") from exc
        changes.append(f"created security group {gid}")
        perms: list[dict] = []
    else:
        gid = group["GroupId"]
        if not T.is_ours(group.get("Tags")):
            raise AwsError(f"security group {name!r} ({gid}) exists without the project tag; refusing to touch it")
        perms = group.get("IpPermissions", [])
    keep = [p for p in perms if _rule_matches(p, cidr)]
    stale = [p for p in perms if not _rule_matches(p, cidr)]
    if stale:
        ec2.revoke_security_group_ingress(GroupId=gid, IpPermissions=stale)
        changes.append(f"revoked {len(stale)} ingress rule(s) other than tcp/22 from {cidr}")
    if not keep:
        ec2.authorize_security_group_ingress(GroupId=gid, IpPermissions=[_ssh_rule(cidr)])
        changes.append(f"allowed tcp/22 from {cidr}")
    return gid, changes
