"""Who is calling AWS: the STS caller identity (ARN and account) that provision tags every resource with and that
teardown requires, so ownership follows the AWS credentials and not only the local login name (two people with
the same login on different machines, or one person's two accounts, never share or delete each other's hosts)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from infra.aws.clients import API_ERRORS, AwsError


@dataclass(frozen=True)
class CallerIdentity:
    arn: str  # arn:aws:iam::123456789012:user/alice, arn:aws:sts::123456789012:assumed-role/Role/session
    account: str


def caller_identity(sts: Any) -> CallerIdentity:
    """STS GetCallerIdentity (needs no permission); a clear error when the credentials are not usable."""
    try:
        resp = sts.get_caller_identity()
    except API_ERRORS as exc:
        raise AwsError(f"could not tell who is calling AWS (sts:GetCallerIdentity): {exc}") from exc
    arn, account = str(resp.get("Arn") or ""), str(resp.get("Account") or "")
    if not arn.startswith("arn:") or not account:
        raise AwsError(f"sts:GetCallerIdentity answered no usable identity (Arn {arn!r}, Account {account!r})")
    return CallerIdentity(arn, account)
