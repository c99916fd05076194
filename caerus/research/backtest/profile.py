"""Build a latency profile file (``profiles/*.json``) from a real ``caerus session``: the backtest's and the
verdict's default latency (caerus.research.backtest.latency.LatencyModel.default).

A profile holds one distribution per latency segment and says where each came from:

* **measured** on the machine that ran the session: the fleet's own segments, the session's HdrHistograms merged
  over all its ``.hlog`` files (``seen_to_decision``, ``queue_transit``, ``pickup_to_sent``, ``book_hop``,
  ``feed_internal.<venue>``), stored in the standard compressed encoding with their sample counts and percentiles;
* **published**: what a session against the emulator on loopback cannot measure of the real venues, from
  /work/shared/FACTS.md (checked 2026-12), as a shifted exponential (a floor plus an exponential tail: the least
  shape a floor and one more figure determine; the tail's shape is an assumption):

  - ``info_age.binance``: the reference C++ system in Tokyo measured ~3.1 ms p50, floor 2.6 ms;
  - ``info_age.hyperliquid``: the public book ~285 ms p50, floor 204 ms (same system);
  - ``wire`` (one way, our send -> the venue): "Binance from Tokyo ~4 ms average, p99 13 ms", read as an order
    round trip and halved (mean 2.0 ms, p99 6.5 ms one way; the only published order-path figure, applied to
    Hyperliquid's API as well: no figure for it is published).

A session that read live venues (``--live``) measured its info age itself: ``--measured-venues`` takes the venue
segments from it instead. The file records the command, date, revision, machine and session it was built from.

``python -m caerus.research.backtest.profile SESSION --out caerus/research/backtest/profiles/NAME.json
[--name NAME] [--command "how the session was run"]``
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from caerus.metrics import hdr
from caerus.research.backtest.latency import (
    PATH_DRAWS,
    PROFILE_FORMAT,
    SEGMENTS,
    LatencyError,
    LatencyModel,
    merge_hlogs,
    profile_from_doc,
)

MS = 1_000_000


@dataclass(frozen=True)
class Published:
    """A venue segment from published figures: what was published, where, and the shape fitted through it."""

    basis: str
    figures: dict[str, float]
    floor_ns: int
    scale_ns: int

    @classmethod
    def floor_p50(cls, basis: str, floor_ms: float, p50_ms: float) -> Published:
        """The shifted exponential with that floor and median."""
        return cls(basis, {"floor_ms": floor_ms, "p50_ms": p50_ms}, round(floor_ms * MS),
                   round((p50_ms - floor_ms) / math.log(2.0) * MS))

    @classmethod
    def mean_p99(cls, basis: str, mean_ms: float, p99_ms: float) -> Published:
        """The shifted exponential with that mean and p99 (p99 = floor + scale * ln 100, mean = floor + scale)."""
        scale = (p99_ms - mean_ms) / (math.log(100.0) - 1.0)
        return cls(basis, {"mean_ms": mean_ms, "p99_ms": p99_ms}, round((mean_ms - scale) * MS), round(scale * MS))


#: the venue segments no loopback session measures: published figures (FACTS.md, "Latency landscape")
PUBLISHED: dict[str, Published] = {
    "info_age.binance": Published.floor_p50(
        "FACTS.md: Binance information age from Tokyo ~3.1 ms p50, floor 2.6 ms (reference C++ system, c7i.2xlarge, "
        "4 h); shifted exponential through floor and p50", 2.6, 3.1),
    "info_age.hyperliquid": Published.floor_p50(
        "FACTS.md: Hyperliquid public book information age ~285 ms p50, floor 204 ms (same system); shifted "
        "exponential through floor and p50", 204.0, 285.0),
    "wire": Published.mean_p99(
        "FACTS.md: Binance from Tokyo ~4 ms average, p99 13 ms, read as an order round trip and halved: one way mean "
        "2.0 ms, p99 6.5 ms (applied to Hyperliquid too: no published figure); shifted exponential through mean "
        "and p99", 2.0, 6.5),
}


def _revision(root: Path) -> str:
    try:
        res = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10, check=False)
    except OSError:
        return "unknown"
    return res.stdout.strip() or "unknown"


def _machine(session: Path) -> dict[str, object]:
    """What ran the session, from its env.json (what caerus.session recorded), else this machine."""
    env_path = session / "env.json"
    env = json.loads(env_path.read_text()) if env_path.is_file() else {}
    topo = env.get("topology", {})
    return {"cpu_model": env.get("cpu_model", f"unknown (no env.json; {platform.machine()})"),
            "logical_cpus": topo.get("logical_cpus"), "threads_per_core": topo.get("threads_per_core"),
            "kernel": env.get("kernel", {}).get("release", platform.release()),
            "python": env.get("python", {}).get("version", platform.python_version()),
            "isolated": bool(env.get("isolation", {}).get("isolated"))}


def build(session: Path, name: str, command: str, description: str, *, measured_venues: bool = False,
          revision: str = "unknown") -> dict[str, object]:
    """The profile document of ``session`` (see the module docstring); ``revision``: the code it ran."""
    session = Path(session)
    logs = sorted(session.glob("*.hlog"))
    if not logs:
        raise LatencyError(f"{session}: no .hlog files (not a session folder?)")
    merged = merge_hlogs(logs)
    segments: dict[str, dict[str, object]] = {}
    for s in SEGMENTS:
        h = merged.get(s)
        if s in PUBLISHED and not (measured_venues and s != "wire" and h is not None and h.total_count):
            pub = PUBLISHED[s]
            segments[s] = {"origin": "published", "basis": pub.basis, "published": pub.figures,
                           "shape": "shifted_exponential", "floor_ns": pub.floor_ns, "scale_ns": pub.scale_ns}
            continue
        if h is None or not h.total_count:
            raise LatencyError(f"{session}: the session did not measure {s} (a profile needs every fleet segment; "
                               "did the strategy fire?)")
        segments[s] = {"origin": "measured", "basis": f"session {session.name}, this machine", "n": h.total_count,
                       "p50_ns": hdr.percentile(h, 50.0), "p99_ns": hdr.percentile(h, 99.0),
                       "max_ns": h.get_max_value(), "hdr": hdr.encode(h)}
    summary = {}
    summary_path = session / "summary.json"
    if summary_path.is_file():
        sm = json.loads(summary_path.read_text())
        summary = {"duration_s": sm.get("duration_s"), "orders": sm.get("exec", {}).get("orders"),
                   "caveats": sm.get("caveats", [])}
    doc: dict[str, object] = {
        "format": PROFILE_FORMAT, "name": name, "description": description,
        "produced": {"command": command, "profile_command": "python -m caerus.research.backtest.profile "
                     f"{session.name} --name {name}", "date_utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                     "revision": revision, "session": session.name,
                     "machine": _machine(session), **summary},
        "segments": segments,
    }
    return doc


def write(doc: dict[str, object], out: Path) -> LatencyModel:
    """Write the profile, with its order path's p50 and p99, and read it back as a model (the check that it
    loads)."""
    prof = profile_from_doc(doc, str(out))
    q = LatencyModel(dict(prof.segments), prof.name).order_path_quantiles()
    doc["order_path"] = {"p50_ns": q[0.5], "p99_ns": q[0.99], "draws": PATH_DRAWS,
                         "note": "decision + queue + pickup to sent + wire: quantiles of seeded draws of the sum"}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return LatencyModel.from_profile(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m caerus.research.backtest.profile",
                                description=(__doc__ or "").splitlines()[0])
    p.add_argument("session", type=Path, help="a caerus session folder (its .hlog files)")
    p.add_argument("--out", type=Path, required=True, help="profile file to write")
    p.add_argument("--name", default=None, help="profile name (default: the file's stem)")
    p.add_argument("--command", default="caerus session", help="how the session was run (recorded)")
    p.add_argument("--description", default="the fleet on this machine, venues as published",
                   help="one line on what the profile is")
    p.add_argument("--measured-venues", action="store_true",
                   help="take info age from the session (a --live session measured it against the real venues)")
    args = p.parse_args(argv)
    try:
        doc = build(args.session, args.name or args.out.stem, args.command, args.description,
                    measured_venues=args.measured_venues, revision=_revision(Path(__file__).resolve().parents[3]))
        model = write(doc, args.out)
    except (LatencyError, OSError, ValueError) as exc:
        print(f"profile: {exc}", file=sys.stderr)
        return 2
    print(f"profile {args.out}: {model.headline()}")
    for s, d in model.describe()["segments"].items():  # type: ignore[attr-defined]
        print(f"  {s:28s} p50 {d['p50_ns']:>12,} ns  p99 {d['p99_ns']:>12,} ns  n {d['n']:>7}  {d['origin'][:60]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

