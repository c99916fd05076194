"""chrony: which time source a host uses (PHC when /dev/ptp0 exists, else Amazon Time Sync), and the parser for
``chronyc -c tracking`` used by verification."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from importlib import resources
from string import Template

from infra.facts import HostFacts

AMAZON_TIME_SYNC = "169.254.169.123"
PHC_DEVICE = "/dev/ptp0"
# The AWS-documented PHC line; `poll 0` reads the ENA clock every second, `delay` models its read cost.
PHC_LINE = f"refclock PHC {PHC_DEVICE} poll 0 delay 0.000010 prefer"
NTP_LINE = f"server {AMAZON_TIME_SYNC} prefer iburst minpoll 4 maxpoll 4"


def time_source(facts: HostFacts) -> str:
    return "phc" if facts.ptp0 else "ntp"


def render_chrony_conf(facts: HostFacts) -> str:
    phc = time_source(facts) == "phc"
    text = resources.files("infra").joinpath("templates/chrony.conf.tmpl").read_text()
    drift = "/var/lib/chrony/chrony.drift" if facts.chrony_conf.startswith("/etc/chrony/") else "/var/lib/chrony/drift"
    return Template(text).substitute(
        source_name=(f"PTP hardware clock {PHC_DEVICE} ({facts.ptp0_name or 'ENA'})" if phc
                     else f"Amazon Time Sync Service {AMAZON_TIME_SYNC} (no {PHC_DEVICE} on this host)"),
        source_line=PHC_LINE if phc else NTP_LINE,
        drift_file=drift,
        # The PHC does not smear: chrony inserts leap seconds from the tz table. The NTP endpoint smears: no table.
        leap_line="leapsectz right/UTC" if phc else "# leap seconds: smeared by the NTP endpoint (no leapsectz)",
    )


class TrackingParseError(ValueError):
    """``chronyc -c tracking`` output did not have the documented 14 CSV fields."""


@dataclass(frozen=True)
class Tracking:
    refid: str
    refname: str
    stratum: int
    reftime: float
    correction_s: float
    last_offset_s: float
    rms_offset_s: float
    freq_ppm: float
    resid_freq_ppm: float
    skew_ppm: float
    root_delay_s: float
    root_dispersion_s: float
    update_interval_s: float
    leap: str

    @property
    def synchronised(self) -> bool:
        """chrony has a selected reference and a valid leap status."""
        return self.leap != "Not synchronised" and self.refid not in ("00000000", "0.0.0.0", "") and self.stratum > 0

    def to_dict(self) -> dict:
        return {**asdict(self), "synchronised": self.synchronised}


def parse_tracking(text: str) -> Tracking:
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    parts = line.strip().split(",")
    if len(parts) != 14:
        raise TrackingParseError(f"chronyc -c tracking: expected 14 fields, got {len(parts)}: {line[:200]!r}")
    try:
        return Tracking(
            refid=parts[0],
            refname=parts[1],
            stratum=int(parts[2]),
            reftime=float(parts[3]),
            correction_s=float(parts[4]),
            last_offset_s=float(parts[5]),
            rms_offset_s=float(parts[6]),
            freq_ppm=float(parts[7]),
            resid_freq_ppm=float(parts[8]),
            skew_ppm=float(parts[9]),
            root_delay_s=float(parts[10]),
            root_dispersion_s=float(parts[11]),
            update_interval_s=float(parts[12]),
            leap=parts[13],
        )
    except ValueError as exc:
        raise TrackingParseError(f"chronyc -c tracking: bad number in {line[:200]!r}: {exc}") from exc
