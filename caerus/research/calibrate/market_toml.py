"""A Calibration as the market TOML the emulator loads (``venue-sim --market FILE``), with a comment header.

The one place that knows the emulator's parameter names: ``PARAMETERS`` maps each estimate (fit.py's names) to the
market model's setting and its unit. Estimates the model has no setting for, and settings nothing was estimated
for, are left out (the model keeps its defaults). The header names the source, the symbol, the clock, the time
range, the rows per venue and every estimate with its standard error and sample size, plus the cross-checks.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping

import tomli_w

from caerus.research.calibrate.estimators import Estimate
from caerus.research.calibrate.fit import Calibration

#: fit.py's estimate name -> (the market model's setting, unit shown in the header, decimals kept)
PARAMETERS: dict[str, tuple[str, str, int]] = {
    "annual_vol": ("annual_vol", "per year", 4),
    "jumps_per_min": ("jumps_per_min", "per minute", 3),
    "jump_bps_min": ("jump_bps_min", "bp", 2),
    "jump_bps_max": ("jump_bps_max", "bp", 2),
    "lag_median_ms": ("hl_lag_ms", "ms", 1),
    "lag_sd_ms": ("hl_lag_sd_ms", "ms", 1),
    "noise_share": ("noise_share", "of tick variance", 4),
    "block_ms": ("hl_block_ms", "ms", 2),
    "block_jitter_ms": ("hl_block_jitter_ms", "ms", 2),
    "catch_up": ("catch_up", "of the move", 3),
}


def market_settings(cal: Calibration, known: Mapping[str, object] | None = None) -> dict[str, float]:
    """The model's settings from ``cal``'s estimates, rounded to what the estimate supports; with ``known`` (the
    model's settings and defaults) only the settings it has, and jitter kept below the block it jitters."""
    out: dict[str, float] = {}
    for name, e in cal.estimates.items():
        if name not in PARAMETERS or not math.isfinite(e.value):
            continue
        setting, _, decimals = PARAMETERS[name]
        if known is not None and setting not in known:
            continue
        out[setting] = round(float(e.value), decimals)
    block, jitter = out.get("hl_block_ms"), out.get("hl_block_jitter_ms")
    if block is not None and jitter is not None and jitter >= block:
        out["hl_block_jitter_ms"] = round(0.9 * block, 2)  # the model requires jitter < block
    if "jump_bps_min" in out:
        out["jump_bps_min"] = max(out["jump_bps_min"], 0.0)
    return out


def _when(ns: int) -> str:
    return dt.datetime.fromtimestamp(ns / 1e9, tz=dt.UTC).isoformat(timespec="milliseconds")


def _fmt(e: Estimate) -> str:
    se = f"{e.se:.4g}" if math.isfinite(e.se) else "n/a"
    return f"{e.value:.6g} (SE {se}, n = {e.n})"


def header(cal: Calibration, source: str, written: Mapping[str, float]) -> list[str]:
    lines = [
        "Market model calibrated by `caerus calibrate` (docs/research.md, Calibration).",
        f"source: {source}",
        f"symbol: {cal.symbol}   clock: {cal.clock}",
        f"range: {_when(cal.start_ns)} .. {_when(cal.end_ns)} ({cal.minutes:.1f} min)",
        "rows: " + ", ".join(f"{v} {n}" for v, n in cal.rows.items()),
        "estimates (value, standard error, sample size):",
    ]
    for name, e in cal.estimates.items():
        setting, unit, _ = PARAMETERS.get(name, (name, "", 0))
        used = "" if setting in written else "   [not a setting of this model: not written]"
        lines.append(f"  {setting} = {_fmt(e)} {unit}{used}")
    if cal.cross_checks:
        lines.append("cross-checks: " + ", ".join(f"{k} {v:.4g}" for k, v in cal.cross_checks.items()))
    lines.extend(f"note: {n}" for n in cal.notes)
    return lines


def render(cal: Calibration, source: str, known: Mapping[str, object] | None = None,
           table: str | None = None) -> str:
    """The TOML text: the header as comments, then the settings (under ``[table]`` when given)."""
    settings = market_settings(cal, known)
    body = tomli_w.dumps({table: settings} if table else settings)
    return "".join(f"# {line}\n".replace("# \n", "#\n") for line in header(cal, source, settings)) + "\n" + body
