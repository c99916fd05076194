"""The cluster placement group.

Policy (documented in docs/infra.md): a single benchmark host gains little from a cluster group, so when the API
cannot create one (moto answers NotImplemented / HTTP 500; a real account may lack the permission) provision
says so loudly and continues without one, recording that in the host state. ``--placement required`` turns that
into a hard stop; ``--placement off`` skips the step.
"""

from __future__ import annotations

from typing import Any

from botocore.parsers import ResponseParserError

from infra.aws import tags as T
from infra.aws.clients import API_ERRORS, AwsError, describe_one

PLACEMENT_MODES = ("preferred", "required", "off")


class PlacementUnavailable(AwsError):
    """The placement-group API refused or is not implemented at this endpoint."""


def _describe(ec2: Any, name: str) -> dict | None:
    return describe_one(ec2.describe_placement_groups, "InvalidPlacementGroup.Unknown", "PlacementGroups",
                        GroupNames=[name])


def ensure_placement_group(ec2: Any, name: str, tags: dict[str, str]) -> tuple[str, bool]:
    """Return (group name, created); raise PlacementUnavailable with the API's answer when it cannot."""
    try:
        existing = _describe(ec2, name)
        if existing is not None:
            return name, False
        ec2.create_placement_group(
            GroupName=name, Strategy="cluster", TagSpecifications=[T.tag_spec("placement-group", tags)]
        )
    except API_ERRORS as exc:
        if isinstance(exc, ResponseParserError):
            detail = "the endpoint answered with a non-AWS error page (HTTP 500; action not implemented there?)"
        else:
            detail = str(exc).splitlines()[0][:200]
        raise PlacementUnavailable(
            f"cluster placement group {name!r} could not be created: {type(exc).__name__}: {detail}"
        ) from exc
    return name, True


def resolve_placement(ec2: Any, name: str, tags: dict[str, str], mode: str, say: Any = print) -> str:
    """Apply the placement policy; returns the group name to launch into, or "" for none."""
    if mode not in PLACEMENT_MODES:
        raise AwsError(f"--placement {mode!r} is not one of {', '.join(PLACEMENT_MODES)}")
    if mode == "off":
        return ""
    try:
        group, created = ensure_placement_group(ec2, name, tags)
    except PlacementUnavailable as exc:
        if mode == "required":
            raise AwsError(f"{exc}; stopping because --placement required") from exc
        say(f"WARNING: {exc}; continuing WITHOUT a placement group (use --placement required to stop instead)")
        return ""
    say(f"placement group {group}: {'created' if created else 'exists'}")
    return group


def delete_placement_groups(ec2: Any, session: str | None, owner: str | None = None,
                            owner_arn: str | None = None) -> list[str]:
    """Delete project-tagged placement groups (of one session / owner); silently nothing when the API is missing."""
    try:
        groups = ec2.describe_placement_groups(Filters=T.filters(session, owner, owner_arn)).get("PlacementGroups", [])
    except API_ERRORS:
        return []
    deleted = []
    for g in groups:
        if T.is_ours(g.get("Tags"), session, owner, owner_arn):
            ec2.delete_placement_group(GroupName=g["GroupName"])
            deleted.append(g["GroupName"])
    return deleted
