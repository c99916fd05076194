"""An instance's serial console output (EC2 GetConsoleOutput): where cloud-init prints the SSH host keys that
first contact checks (infra.hostkeys)."""

from __future__ import annotations

from infra.aws.clients import API_ERRORS, AwsTarget


def console_output(target: AwsTarget, instance_id: str) -> str:
    """The newest console output (``Latest``: Nitro instances such as c7i serve it live; others reject the flag
    and get the buffer EC2 captured at boot). Empty when the instance has printed nothing yet."""
    ec2 = target.client("ec2")
    try:
        resp = ec2.get_console_output(InstanceId=instance_id, Latest=True)
    except API_ERRORS:
        resp = ec2.get_console_output(InstanceId=instance_id)
    return str(resp.get("Output") or "")  # botocore decodes the base64 payload
