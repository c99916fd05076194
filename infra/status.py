"""`invoke status`: every host in the state folder with its EC2 state, age and cost so far."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from infra.aws.clients import API_ERRORS, AwsTarget
from infra.hosts import HostStore


@dataclass(frozen=True)
class HostStatus:
    name: str
    instance_id: str
    state: str
    address: str
    age_h: float
    hourly_usd: float
    cost_usd: float
    expires_at: str

    def line(self) -> str:
        return (f"{self.name:<12} {self.instance_id or '-':<20} {self.state:<13} {self.address:<16} "
                f"age {self.age_h:6.2f} h  ${self.hourly_usd:.3f}/h  ~${self.cost_usd:.2f} so far  "
                f"expires {self.expires_at or '-'}")


def host_statuses(store: HostStore, endpoint_url: str = "", offline: bool = False,
                  now: datetime | None = None) -> list[HostStatus]:
    now = now or datetime.now(UTC)
    out = []
    for name in store.names():
        r = store.load(name)
        state = "unknown"
        if r.instance_id and not offline:
            try:
                ec2 = AwsTarget.resolve(r.region, endpoint_url or r.endpoint_url).client("ec2")
                res = ec2.describe_instances(InstanceIds=[r.instance_id])["Reservations"]
                state = res[0]["Instances"][0]["State"]["Name"] if res else "gone"
            except API_ERRORS as exc:
                state = f"error: {type(exc).__name__}"
        elif not r.instance_id:
            state = "not-ec2"
        age_h = 0.0
        if r.launched_at:
            age_h = max(0.0, (now - datetime.fromisoformat(r.launched_at)).total_seconds() / 3600)
        out.append(HostStatus(name, r.instance_id, state, r.host, age_h, r.hourly_usd, age_h * r.hourly_usd,
                              r.expires_at))
    return out
