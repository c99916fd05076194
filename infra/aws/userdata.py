"""User data that makes a forgotten instance terminate itself at its expiry (the time-to-live)."""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from importlib import resources
from string import Template


def render_ttl_user_data(session: str, launched: datetime, ttl: timedelta) -> str:
    """Shell user data: ``shutdown -h +N`` now plus a persistent systemd timer at the absolute expiry."""
    if ttl <= timedelta(0):
        raise ValueError(f"time-to-live must be positive, got {ttl}")
    expiry = launched + ttl
    text = resources.files("infra").joinpath("templates/userdata.sh.tmpl").read_text()
    return Template(text).substitute(
        session=session,
        ttl_minutes=max(1, math.ceil(ttl.total_seconds() / 60)),
        expiry_iso=expiry.strftime("%Y-%m-%dT%H:%M:%SZ"),
        expiry_epoch=int(expiry.timestamp()),
        expiry_calendar=expiry.strftime("%Y-%m-%d %H:%M:%S UTC"),
    )
