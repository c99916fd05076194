"""What the regression suite runs and how each member's output becomes one value per metric per repetition.

Members are data (``suite.toml``, or any file given with ``--suite``), so adding a benchmark needs no code and a
member that is missing or broken is reported by name instead of ending the whole run. Metric ids are
``<member>/<metric>.<stat>`` for percentiles (``ipc_hop/swmr.p99``) and ``<member>/ratio.<name>`` for a
benchmark's own same-run ratios.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeGuard

import msgspec

from benchmarks.regress.stats import DIRECTIONS, HIGHER, LOWER, UNKNOWN

DEFAULT_SUITE = Path(__file__).with_name("suite.toml")
PERCENTILE_KEYS = {"p50": "p50", "p90": "p90", "p99": "p99", "p999": "p999"}
# summary.json spellings we accept for a percentile (value scaled to ns)
_UNIT_SCALE = {"": 1.0, "_ns": 1.0, "_us": 1e3, "_ms": 1e6}


class SuiteError(ValueError):
    """The suite file is missing or invalid (a setup error: exit 2)."""


class Member(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """One suite member, as written in suite.toml."""

    name: str
    kind: Literal["benchmark", "session"]
    module: str
    args: list[str] = []
    quick_args: list[str] = []
    full_args: list[str] = []
    timeout_s: float = 300.0
    stats: list[str] = msgspec.field(default_factory=lambda: ["p50", "p99"])
    reference: str = ""
    directions: dict[str, str] = {}
    thresholds: dict[str, float] = {}
    # fnmatch patterns on metric ids that can fail a run (the headline metrics); every other metric of the member
    # is reported as information. A suite where no member declares any gates on every metric.
    gating: list[str] = []

    def argv(self, quick: bool, output: Path) -> list[str]:
        out_flag = ["--json", str(output)] if self.kind == "benchmark" else ["--out", str(output)]
        extra = self.quick_args if quick else self.full_args
        return [sys.executable, "-m", self.module, *self.args, *extra, *out_flag]

    def module_file(self, root: Path) -> Path | None:
        """The file ``python -m module`` would run from ``root``, or None when the tree does not have it."""
        base = root.joinpath(*self.module.split("."))
        for candidate in (base.with_suffix(".py"), base / "__main__.py"):
            if candidate.is_file():
                return candidate
        return None


class _SuiteFile(msgspec.Struct, forbid_unknown_fields=True):
    member: list[Member]


def load_suite(path: Path = DEFAULT_SUITE, only: list[str] | None = None) -> list[Member]:
    """Members from a suite file, optionally narrowed to ``only`` (names, in suite order)."""
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise SuiteError(f"suite file {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise SuiteError(f"suite file {path} is not valid TOML: {exc}") from None
    try:
        members = msgspec.convert(raw, _SuiteFile).member
    except msgspec.ValidationError as exc:
        raise SuiteError(f"suite file {path}: {exc}") from None
    names = [m.name for m in members]
    if len(set(names)) != len(names):
        raise SuiteError(f"suite file {path}: member names must be unique, got {names}")
    for m in members:
        if not m.name or "/" in m.name:
            raise SuiteError(f"suite file {path}: member name {m.name!r} must be non-empty and contain no '/'")
        if m.timeout_s <= 0:
            raise SuiteError(f"suite file {path}: member {m.name}: timeout_s must be > 0")
        bad_stats = [s for s in m.stats if s not in PERCENTILE_KEYS]
        if bad_stats:
            raise SuiteError(f"suite file {path}: member {m.name}: unknown stats {bad_stats}; "
                             f"choose from {sorted(PERCENTILE_KEYS)}")
        bad_dirs = {k: v for k, v in m.directions.items() if v not in DIRECTIONS}
        if bad_dirs:
            raise SuiteError(f"suite file {path}: member {m.name}: directions must be one of {DIRECTIONS}: "
                             f"{bad_dirs}")
        bad_thr = {k: v for k, v in m.thresholds.items() if not v >= 0}
        if bad_thr:
            raise SuiteError(f"suite file {path}: member {m.name}: thresholds must be >= 0: {bad_thr}")
    if only:
        unknown = [n for n in only if n not in names]
        if unknown:
            raise SuiteError(f"--only names unknown suite members {unknown}; the suite has {names}")
        members = [m for m in members if m.name in only]
    return members


@dataclass
class Sample:
    """What one run of one member produced: a value per metric id (raw, and normalized for baselines)."""

    values: dict[str, float] = field(default_factory=dict)
    directions: dict[str, str] = field(default_factory=dict)
    normalized: dict[str, float] = field(default_factory=dict)  # value / in-run reference (baselines)
    reference: str = ""  # what ``normalized`` was divided by


@dataclass
class RunOutcome:
    member: str
    side: str
    repetition: int
    ok: bool
    seconds: float
    sample: Sample | None = None
    error: str = ""
    log: str = ""


def _finite(v: object) -> TypeGuard[int | float]:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def extract_benchmark(member: Member, doc: dict) -> Sample:
    """Metric values from one benchmark JSON document (benchmarks/common.py schema)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("metrics"), dict):
        raise ValueError("benchmark JSON has no 'metrics' object (schema: benchmarks/common.py)")
    s = Sample()
    for name, m in doc["metrics"].items():
        if not isinstance(m, dict):
            continue
        for stat in member.stats:
            v = m.get(PERCENTILE_KEYS[stat])
            if _finite(v):
                mid = f"{member.name}/{name}.{stat}"
                s.values[mid] = float(v)
                s.directions[mid] = LOWER
    goal_dirs: dict[str, str] = {}
    for g in doc.get("goals") or []:
        target = str(g.get("target", "")).strip() if isinstance(g, dict) else ""
        if target.startswith(">="):
            goal_dirs[str(g.get("name"))] = HIGHER
        elif target.startswith("<="):
            goal_dirs[str(g.get("name"))] = LOWER
    for name, v in (doc.get("ratios") or {}).items():
        if _finite(v):
            mid = f"{member.name}/ratio.{name}"
            s.values[mid] = float(v)
            s.directions[mid] = goal_dirs.get(name, UNKNOWN)
    if not s.values:
        raise ValueError("benchmark JSON has no finite metric percentiles or ratios")
    return s


def _walk_percentiles(node: object, path: list[str], out: dict[str, dict[str, float]]) -> None:
    if not isinstance(node, dict):
        return
    found: dict[str, float] = {}
    for key, v in node.items():
        if not isinstance(key, str) or not _finite(v):
            continue
        for stat in PERCENTILE_KEYS:
            for suffix, scale in _UNIT_SCALE.items():
                if key == stat + suffix:
                    found[stat] = float(v) * scale
    if found and path:
        out[".".join(path)] = found
    for key, v in node.items():
        if isinstance(v, dict):
            _walk_percentiles(v, [*path, str(key)], out)


def extract_session(member: Member, summary: dict) -> Sample:
    """Metric values from a session's summary.json: every object carrying percentiles (p50, p99, p50_us...).

    The session engineer owns summary.json's layout (caerus/session/collect.py: ``metrics`` = {tag: {n, p50 ..
    max in ns}}); this reads whatever percentile objects sit under ``metrics`` (or anywhere, when there is no
    ``metrics`` object), named by their path (``tick_to_decision`` -> ``session/tick_to_decision.p99``), so a
    new headline metric joins the suite without a change here. Values with ``_us``/``_ms`` suffixes are scaled
    to ns; null percentiles (a metric with no samples) are skipped.
    """
    found: dict[str, dict[str, float]] = {}
    metrics = summary.get("metrics") if isinstance(summary, dict) else None
    _walk_percentiles(metrics if isinstance(metrics, dict) else summary, [], found)
    s = Sample()
    for name, stats in found.items():
        for stat in member.stats:
            if stat in stats:
                mid = f"{member.name}/{name}.{stat}"
                s.values[mid] = stats[stat]
                s.directions[mid] = LOWER
    if not s.values:
        keys = sorted(summary)[:20] if isinstance(summary, dict) else type(summary).__name__
        raise ValueError(f"summary.json holds no percentile objects with {member.stats} (top-level keys: {keys})")
    return s


def apply_overrides(member: Member, sample: Sample) -> None:
    """Suite-file direction overrides (fnmatch patterns, first match wins)."""
    for mid in sample.values:
        for pattern, direction in member.directions.items():
            if fnmatch.fnmatchcase(mid, pattern):
                sample.directions[mid] = direction
                break


def gating_predicate(members: list[Member]) -> Callable[[str], bool]:
    """``metric id -> True`` when the metric can fail a run (see ``Member.gating``)."""
    declared = {m.name: tuple(m.gating) for m in members}
    if not any(declared.values()):
        return lambda metric: True

    def gates(metric: str) -> bool:
        patterns = declared.get(metric.split("/", 1)[0], ())
        return any(fnmatch.fnmatchcase(metric, p) for p in patterns)
    return gates


def threshold_for(metric: str, member: Member | None, overrides: dict[str, float], default: float) -> float:
    """Per-metric threshold: command-line overrides, then the member's suite entry, then the default."""
    for table in (overrides, member.thresholds if member else {}):
        for pattern, value in table.items():
            if fnmatch.fnmatchcase(metric, pattern):
                return float(value)
    return default


def normalize(member: Member, sample: Sample, calibration_ns: float) -> None:
    """Fill ``sample.normalized``: each percentile over the in-run reference; ratios as they are."""
    ref_prefix = f"{member.name}/{member.reference}." if member.reference else ""
    for mid, v in sample.values.items():
        if mid.startswith(f"{member.name}/ratio."):
            sample.normalized[mid] = v
            continue
        if ref_prefix:
            ref_id = ref_prefix + mid.rsplit(".", 1)[1]
            if mid == ref_id:
                continue  # the reference over itself is always 1
            ref = sample.values.get(ref_id)
            if ref:
                sample.normalized[mid] = v / ref
            continue
        if calibration_ns > 0:
            sample.normalized[mid] = v / calibration_ns
    sample.reference = (f"{member.name}/{member.reference} (same stat, same run)" if member.reference
                        else "calibration loop (ns) measured next to the run")


def _find_summary(out_dir: Path) -> Path | None:
    found = sorted(out_dir.rglob("summary.json"), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def _group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` is still running (zombies waiting for a reaper do not count)."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if fields[0] != "Z" and int(fields[2]) == pgid:
            return True
    return False


def _stop_group(proc: subprocess.Popen, grace_s: float = 5.0) -> None:
    """SIGTERM the member's own process group (it was started in a new session), SIGKILL after ``grace_s``;
    returns once every process of the group is gone (bounded: the SIGKILL pass waits at most 5 s more).

    A session member starts a whole fleet; killing only its top process would leave the fleet running, and
    returning when the top process exits would leave its children dying (or not) after the caller moved on.
    """
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if proc.poll() is not None and not _group_alive(proc.pid):
                return
            time.sleep(0.05)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(1.0)


def run_member(member: Member, *, root: Path, side: str, repetition: int, quick: bool, work: Path,
               log_dir: Path) -> RunOutcome:
    """Run ``member`` once from the tree at ``root`` (its own PYTHONPATH and cwd) and extract its sample."""
    tag = f"{side}-{member.name}-{repetition:02d}"
    log = log_dir / f"{tag}.log"
    output = work / (f"{tag}.json" if member.kind == "benchmark" else tag)
    if member.kind == "session":
        output.mkdir(parents=True, exist_ok=True)
    argv = member.argv(quick, output)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(root)
    env["PYTHONHASHSEED"] = "0"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    t0 = time.monotonic()

    def fail(msg: str) -> RunOutcome:
        return RunOutcome(member.name, side, repetition, False, time.monotonic() - t0, error=msg, log=str(log))

    with open(log, "wb") as fh:
        fh.write(("$ " + " ".join(argv) + f"\n# cwd={root}\n").encode())
        fh.flush()
        proc = subprocess.Popen(argv, cwd=root, env=env, stdout=fh, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            returncode = proc.wait(member.timeout_s)
        except BaseException as exc:  # timeout or Ctrl-C: stop the member and whatever it started
            _stop_group(proc)
            if isinstance(exc, subprocess.TimeoutExpired):
                return fail(f"timed out after {member.timeout_s:g} s (log {log})")
            raise
    if returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-3:]
        return fail(f"exited {returncode}: {' | '.join(tail)} (log {log})")
    try:
        if member.kind == "benchmark":
            if not output.is_file():
                return fail(f"exited 0 but wrote no JSON at {output} (log {log})")
            raw = output.read_text()
            sample = extract_benchmark(member, json.loads(raw))
        else:
            summary = _find_summary(output)
            if summary is None:
                return fail(f"exited 0 but no summary.json under {output} (log {log})")
            raw = summary.read_text()
            sample = extract_session(member, json.loads(raw))
    except (ValueError, OSError) as exc:
        return fail(f"unreadable output: {exc} (log {log})")
    finally:
        if member.kind == "session":  # 18 session folders (hlogs, capture store) would pile up in /tmp
            shutil.rmtree(output, ignore_errors=True)
    # what the numbers came from, next to the run's log (a benchmark JSON or a summary.json: small)
    log.with_suffix(".json").write_text(raw)
    apply_overrides(member, sample)
    return RunOutcome(member.name, side, repetition, True, time.monotonic() - t0, sample=sample, log=str(log))
