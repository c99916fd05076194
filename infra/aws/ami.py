"""Which AMI to boot: read from an SSM public parameter, never hard-coded per region."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from infra.aws.clients import AwsError

AL2023_PARAM = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"
UBUNTU_2404_PARAM = "/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id"
DEFAULT_AMI_PARAM = AL2023_PARAM


def ssh_user_for(param: str) -> str:
    """Login user of the image family the parameter names."""
    return "ubuntu" if "canonical/ubuntu" in param else "ec2-user"


def resolve_ami(ssm: Any, param: str) -> str:
    """The AMI id the public parameter currently points at; a clear error naming the parameter otherwise."""
    try:
        value = ssm.get_parameter(Name=param)["Parameter"]["Value"]
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        hint = ""
        if code == "ParameterNotFound":
            hint = f" (not published in this region/endpoint; try --ami-param {AL2023_PARAM})"
        raise AwsError(f"AMI lookup failed: SSM parameter {param!r}: {code or exc}{hint}") from exc
    except BotoCoreError as exc:
        raise AwsError(f"AMI lookup failed: SSM parameter {param!r}: {exc}") from exc
    if not value.startswith("ami-"):
        raise AwsError(f"SSM parameter {param!r} holds {value!r}, not an AMI id")
    return value


def root_device_name(ec2: Any, ami: str) -> str:
    """The AMI's root device (so the gp3 mapping replaces the root volume instead of adding a disk)."""
    images = ec2.describe_images(ImageIds=[ami]).get("Images", [])
    if not images:
        raise AwsError(f"AMI {ami} not found in this region")
    return images[0].get("RootDeviceName") or "/dev/xvda"
