"""boto3 clients for one target (region + optional endpoint override) and the errors the orchestrator reports.

The endpoint override (``--endpoint-url`` or ``CAERUS_AWS_ENDPOINT``) exists so tests drive moto's server on
127.0.0.1; in normal use it is empty and boto3 talks to AWS with the caller's usual credential chain.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from botocore.parsers import ResponseParserError

DEFAULT_REGION = "ap-northeast-1"
DEFAULT_INSTANCE_TYPE = "c7i.2xlarge"
ENDPOINT_ENV = "CAERUS_AWS_ENDPOINT"

# What an API call can raise: an AWS error answer, a transport error, or an unparseable answer (moto's HTML 500
# page for actions it does not implement raises ResponseParserError, which is not a BotoCoreError).
API_ERRORS = (ClientError, BotoCoreError, ResponseParserError)


class AwsError(RuntimeError):
    """An AWS step failed; the message names the step and what to do."""


def describe_one(describe: Callable[..., dict], not_found: str, answer_key: str, **query: Any) -> dict | None:
    """The first item a describe call answers (``describe(**query)[answer_key][0]``), or None when there is none or
    AWS answers with the error code ``not_found`` (other errors raise)."""
    try:
        items = describe(**query).get(answer_key, [])
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == not_found:
            return None
        raise
    return items[0] if items else None


@dataclass(frozen=True)
class AwsTarget:
    region: str = DEFAULT_REGION
    endpoint_url: str = ""

    @classmethod
    def resolve(cls, region: str = "", endpoint_url: str = "") -> AwsTarget:
        return cls(region=region or DEFAULT_REGION, endpoint_url=endpoint_url or os.environ.get(ENDPOINT_ENV, ""))

    def client(self, service: str) -> Any:
        # Standard retry mode with few attempts: a broken endpoint (moto's HTTP 500 on placement groups) fails
        # in seconds instead of backing off for a minute.
        config = Config(retries={"max_attempts": 3, "mode": "standard"}, connect_timeout=10, read_timeout=60)
        kwargs: dict[str, Any] = {"region_name": self.region, "config": config}
        if self.endpoint_url:
            kwargs["endpoint_url"] = self.endpoint_url
        return boto3.client(service, **kwargs)
