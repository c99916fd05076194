"""A Calibration as the market TOML the emulator loads (``venue-sim --market FILE``), with a comment header.

The one place that knows the emulator's parameter names: ``PARAMETERS`` maps each estimate (fit.py's names) to the
market model's setting and its unit. Estimates the model has no setting for are left out; settings nothing was
estimated for, and those in ``CARRIED`` (estimated, not recovered by the round trip), take the ``PRESET``'s value.
The header names the source, the symbol, the clock, the time range, the rows per venue, every estimate with its
standard error, 95 % interval and sample size, the cross-checks, and which settings were fitted and which carried
over (each with its reason).
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
    "catch_up_late": ("catch_up_late", "of the rest", 3),
    "catch_up_late_ms": ("catch_up_late_ms", "ms", 0),
    "fade": ("hl_fade", "of the pending move", 3),
    "flicker_share": ("flicker_share", "of jump-sized moves", 3),
    "flicker_ms": ("flicker_ms", "ms", 0),
    "regime_vol_mult": ("regime_vol_mult", "x calm", 3),
    "regime_jump_mult": ("regime_jump_mult", "x calm", 3),
    "regime_calm_s": ("regime_calm_s", "s", 0),
    "regime_volatile_s": ("regime_volatile_s", "s", 0),
    "basis_half_life_s": ("hl_basis_half_life_s", "s", 1),
    "own_per_min": ("hl_own_jumps_per_min", "per minute", 2),
    "own_bps_min": ("hl_own_bps_min", "bp", 2),
    "own_bps_max": ("hl_own_bps_max", "bp", 2),
    "own_blocks": ("hl_own_blocks", "blocks", 0),
}
#: the preset whose values a setting keeps when the books cannot identify it (named in the header)
PRESET = "default"
_LATE = ("the late-part curve needs moves clear of other jumps for 8 s after their response: 7-20 of them in 20 "
         "minutes of the default market (SE 0.4 on the share, seconds on the delay); identifiable in principle, "
         "not from captures of this length")
_OWN = ("Hyperliquid's own moves are confounded in its books with single-block late parts of Binance moves and "
        "runs of diffusion: the run count reads 10-11 per minute for 6, sizes 3.9..23-31 bp for 6..18")
#: settings estimated but not recovered by the round trip (docs/research.md, Round trip): the estimate is shown
#: in the header, the setting is carried over from PRESET, with this reason
CARRIED: dict[str, str] = {
    "catch_up_late": _LATE,
    "catch_up_late_ms": _LATE,
    "hl_own_jumps_per_min": _OWN,
    "hl_own_bps_min": _OWN,
    "hl_own_bps_max": _OWN,
    "hl_own_blocks": _OWN,
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
        if setting in CARRIED:
            continue
        out[setting] = round(e.value) if setting == "hl_own_blocks" else round(float(e.value), decimals)
    block, jitter = out.get("hl_block_ms"), out.get("hl_block_jitter_ms")
    if block is not None and jitter is not None and jitter >= block:
        out["hl_block_jitter_ms"] = round(0.9 * block, 2)  # the model requires jitter < block
    for low, high in (("jump_bps_min", "jump_bps_max"), ("hl_own_bps_min", "hl_own_bps_max")):
        if low in out:
            out[low] = max(out[low], 0.0)
        if low in out and high in out and out[high] < out[low]:
            out[high] = out[low]
    for unit in ("catch_up", "catch_up_late", "hl_fade"):  # shares: an estimate past 1 (noise) is 1
        if unit in out:
            out[unit] = min(max(out[unit], 0.0), 1.0)
    if "flicker_share" in out:
        out["flicker_share"] = min(max(out["flicker_share"], 0.0), 0.95)
    if "hl_lag_ms" in out and out["hl_lag_ms"] <= 0.0 and (known is None or "hl_lag_sd_ms" in known):
        # No measurable lag (a short capture's HY peak at 0): a fixed zero lag. The model's lognormal lag needs a
        # positive median, so the preset's dispersion must not be kept next to it.
        out["hl_lag_ms"] = 0.0
        out["hl_lag_sd_ms"] = 0.0
    if "hl_own_blocks" in out:
        out["hl_own_blocks"] = min(max(int(out["hl_own_blocks"]), 1), 1000)
    return out


def preset_settings(written: Mapping[str, object]) -> dict[str, object]:
    """The ``PRESET`` market's settings that ``written`` lacks (what the books could not identify)."""
    from importlib import resources

    from caerus.sim.market_config import parse_market, presets

    if PRESET not in presets():
        return {}
    text = resources.files("caerus.sim.markets").joinpath(f"{PRESET}.toml").read_text()
    return {k: v for k, v in parse_market(text, PRESET).items() if k not in written}


def _when(ns: int) -> str:
    return dt.datetime.fromtimestamp(ns / 1e9, tz=dt.UTC).isoformat(timespec="milliseconds")


def _fmt(e: Estimate) -> str:
    if not math.isfinite(e.se):
        return f"{e.value:.6g} (SE n/a, n = {e.n})"
    lo, hi = e.value - 1.96 * e.se, e.value + 1.96 * e.se  # normal approximation, as the SE itself
    return f"{e.value:.6g} (SE {e.se:.4g}, 95 % CI [{lo:.4g}, {hi:.4g}], n = {e.n})"


def header(cal: Calibration, source: str, written: Mapping[str, object]) -> list[str]:
    lines = [
        "Market model calibrated by `caerus calibrate` (docs/research.md, Calibration).",
        f"source: {source}",
        f"symbol: {cal.symbol}   clock: {cal.clock}",
        f"range: {_when(cal.start_ns)} .. {_when(cal.end_ns)} ({cal.minutes:.1f} min)",
        "rows: " + ", ".join(f"{v} {n}" for v, n in cal.rows.items()),
        "estimates (value, standard error, 95 % interval as value +- 1.96 SE, sample size):",
    ]
    for name, e in cal.estimates.items():
        setting, unit, _ = PARAMETERS.get(name, (name, "", 0))
        used = ("   [not recovered by the round trip: preset kept]" if setting in CARRIED else
                "" if setting in written else "   [not a setting of this model: not written]")
        lines.append(f"  {setting} = {_fmt(e)} {unit}{used}")
    if cal.cross_checks:
        lines.append("cross-checks: " + ", ".join(f"{k} {v:.4g}" for k, v in cal.cross_checks.items()))
    lines.extend(f"note: {n}" for n in cal.notes)
    kept = preset_settings(written) if written else {}
    lines.append("fitted from these books: " + (", ".join(written) if written else "none"))
    if kept:
        lines.append(f"carried over from preset {PRESET} (not fitted):")
        for k, v in kept.items():
            why = CARRIED.get(k, "not identified from these books (see the notes)")
            lines.append(f"  {k} = {v}   not estimated: from preset; {why}")
    return lines


def render(cal: Calibration, source: str, known: Mapping[str, object] | None = None,
           table: str | None = None) -> str:
    """The TOML text: the header as comments, then the settings (under ``[table]`` when given)."""
    settings: dict[str, object] = dict(market_settings(cal, known))
    written = dict(settings)
    settings.update(preset_settings(written))
    body = tomli_w.dumps({table: settings} if table else settings)
    return "".join(f"# {line}\n".replace("# \n", "#\n") for line in header(cal, source, written)) + "\n" + body
