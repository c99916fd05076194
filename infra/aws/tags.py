"""The project's tags: what provision puts on every resource and what teardown requires before deleting one."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

PROJECT_KEY = "project"
PROJECT_VALUE = "caerus"
OWNER_ARN_KEY = "owner-arn"  # the AWS caller identity (STS ARN) beside the login name in "owner"
OWNER_ACCOUNT_KEY = "owner-account"


def project_tags(session: str, owner: str, expiry_iso: str, owner_arn: str = "",
                 owner_account: str = "") -> dict[str, str]:
    tags = {
        PROJECT_KEY: PROJECT_VALUE,
        "owner": owner,
        "session": session,
        "expiry": expiry_iso,
        "Name": f"caerus-{session}",
    }
    if owner_arn:
        tags[OWNER_ARN_KEY] = owner_arn
    if owner_account:
        tags[OWNER_ACCOUNT_KEY] = owner_account
    return tags


def as_tag_list(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in sorted(tags.items())]


def tag_spec(resource_type: str, tags: Mapping[str, str]) -> dict:
    return {"ResourceType": resource_type, "Tags": as_tag_list(tags)}


def as_dict(tag_list: Iterable[Mapping[str, str]] | None) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in (tag_list or [])}


def is_ours(tag_list: Iterable[Mapping[str, str]] | None, session: str | None = None,
            owner: str | None = None, owner_arn: str | None = None) -> bool:
    """True when the resource carries project=caerus (and, when given, session=<session>, owner=<login> and
    owner-arn=<AWS identity>: in a shared account a colleague's host of the same name is not ours)."""
    tags = as_dict(tag_list)
    if tags.get(PROJECT_KEY) != PROJECT_VALUE:
        return False
    if owner is not None and tags.get("owner") != owner:
        return False
    if owner_arn is not None and tags.get(OWNER_ARN_KEY) != owner_arn:
        return False
    return session is None or tags.get("session") == session


def filters(session: str | None = None, owner: str | None = None, owner_arn: str | None = None) -> list[dict]:
    out = [{"Name": f"tag:{PROJECT_KEY}", "Values": [PROJECT_VALUE]}]
    if session is not None:
        out.append({"Name": "tag:session", "Values": [session]})
    if owner is not None:
        out.append({"Name": "tag:owner", "Values": [owner]})
    if owner_arn is not None:
        out.append({"Name": f"tag:{OWNER_ARN_KEY}", "Values": [owner_arn]})
    return out
