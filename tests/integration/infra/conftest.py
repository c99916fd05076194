"""Infra's fixtures besides the shared sshd (tests/integration/conftest.py): moto, chronyd, a second host in a
network namespace and the EC2-like non-root login."""

from tests.fixtures.infra_chrony import chronyd_synced  # noqa: F401
from tests.fixtures.infra_moto import _moto_process, moto_server  # noqa: F401
from tests.fixtures.infra_sshd import ec2_user_host, sshd_netns_server  # noqa: F401
