"""Hourly on-demand price estimates (Linux, USD) for the cost line provision and status print.

A static table, not the Pricing API: the API is a separate endpoint (us-east-1 only) and the estimate only has to
tell a forgotten instance from a cheap one. Prices are approximate list prices; ``--hourly-usd`` overrides.
"""

from __future__ import annotations

# (region, instance type) -> USD per hour, approximate on-demand Linux list price.
HOURLY_USD: dict[tuple[str, str], float] = {
    ("ap-northeast-1", "c7i.large"): 0.112,
    ("ap-northeast-1", "c7i.xlarge"): 0.224,
    ("ap-northeast-1", "c7i.2xlarge"): 0.448,
    ("ap-northeast-1", "c7i.4xlarge"): 0.896,
    ("ap-northeast-1", "c7i.metal-24xl"): 5.376,
    ("ap-northeast-1", "c6i.2xlarge"): 0.428,
    ("us-east-1", "c7i.2xlarge"): 0.357,
}


def hourly_estimate(region: str, instance_type: str) -> float | None:
    return HOURLY_USD.get((region, instance_type))


def format_cost(hourly: float | None, hours: float | None = None) -> str:
    if hourly is None:
        return "unknown (no price in infra/aws/pricing.py; pass --hourly-usd)"
    text = f"~${hourly:.3f}/h (~${hourly * 24:.2f}/day)"
    if hours is not None:
        text += f", ~${hourly * hours:.2f} so far"
    return text
