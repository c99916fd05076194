"""A host's time-to-live: does a session fit in what is left, and ``invoke extend`` to give it more.

A provisioned host powers off (= terminates, deleting its volume and any session on it) at its expiry: the
user-data's ``shutdown -h +N`` for the first boot and the persistent ``caerus-ttl.timer`` (OnCalendar) after a
reboot (infra/templates/userdata.sh.tmpl). ``bench --host`` therefore refuses a session that, with its
collection margin, does not end before the expiry, and names the ``invoke extend`` that would make it fit.
``extend`` moves the deadline on the host (the timer's calendar, ``/etc/caerus/expiry``, the pending shutdown),
on the instance's ``expiry`` tag and in the local host record, in that order: a record never promises more time
than the host was given.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from infra.hosts import HostRecord
from infra.remote import RemoteHost
from infra.steps import Command, FileSpec, Step, apply

COLLECT_MARGIN_S = 900.0  # collection, the runner's grace and start-up: a session must end this long before expiry


class TtlError(RuntimeError):
    """The session does not fit in the host's time-to-live (the message names the fix)."""


def expiry(record: HostRecord) -> datetime | None:
    """The host's expiry (UTC), or None for a host without one (a host not provisioned by caerus)."""
    if not record.expires_at:
        return None
    return datetime.fromisoformat(record.expires_at.replace("Z", "+00:00")).astimezone(UTC)


def check_fits(record: HostRecord, seconds: float, now: datetime | None = None,
               margin_s: float = COLLECT_MARGIN_S) -> None:
    """TtlError unless ``seconds`` of session plus the collection margin end before the host's expiry."""
    end = expiry(record)
    if end is None:
        return
    now = now or datetime.now(UTC)
    left = (end - now).total_seconds()
    needed = seconds + margin_s
    if left >= needed:
        return
    hours = max(1, math.ceil((needed - left) / 3600))
    raise TtlError(f"host {record.name} expires at {record.expires_at} ({max(left, 0) / 3600:.2f} h left), but this "
                   f"session needs {needed / 3600:.2f} h with collection; the host would power off (and delete its "
                   f"volume) mid-session. Run `invoke extend --host {record.name} --hours {hours}` first")


def ttl_step(new_expiry: datetime, now: datetime) -> Step:
    """Files and commands that move the host's deadline to ``new_expiry``."""
    minutes = max(1, math.ceil((new_expiry - now).total_seconds() / 60))
    calendar = new_expiry.strftime("%Y-%m-%d %H:%M:%S UTC")
    timer = ("[Unit]\nDescription=caerus time-to-live deadline\n\n[Timer]\n"
             f"OnCalendar={calendar}\nPersistent=true\n\n[Install]\nWantedBy=timers.target\n")
    step = Step("ttl")
    step.files += [FileSpec("/etc/caerus/expiry", f"{int(new_expiry.timestamp())}\n"),
                   FileSpec("/etc/systemd/system/caerus-ttl.timer", timer, notify=("timer",))]
    step.handlers["timer"] = Command("systemctl daemon-reload && systemctl restart caerus-ttl.timer",
                                     "the time-to-live timer's calendar moved", "service")
    step.commands.append(Command(f"shutdown -c; shutdown -h +{minutes} 'caerus TTL expired'",
                                 "re-arm this boot's scheduled power-off at the new expiry", "service"))
    return step


def extend(host: RemoteHost, record: HostRecord, hours: float, live: bool, tag: Callable[[str], None] | None,
           say: Callable[[str], None] = print, now: datetime | None = None) -> datetime:
    """Move the deadline ``hours`` beyond the current expiry (or now, if already past); returns the new expiry.
    ``tag(expiry_iso)`` updates the instance's ``expiry`` tag (None for a host without an instance)."""
    if not hours > 0:
        raise ValueError(f"--hours must be positive, got {hours}")
    now = now or datetime.now(UTC)
    base = max(expiry(record) or now, now)
    new = (base + timedelta(hours=hours)).replace(microsecond=0)
    result = apply(host, [ttl_step(new, now)], live, say)
    for p in result.planned:
        say(f"  planned (not run here): {p['command']}")
    iso = new.strftime("%Y-%m-%dT%H:%M:%SZ")
    if tag is not None:
        tag(iso)
    record.expires_at = iso
    return new
