"""Environment metadata for a session's ``env.json``: small single-purpose probes (pyperf style).

Each probe reads one thing and returns its value, or ``{"unavailable": "<reason>"}`` -- a probe never raises and
never guesses. Chrony tracking comes from ``chronyc -c tracking`` (taken at session start and end). EC2 identity
comes from IMDSv2, but only when the DMI tables say this is an EC2 machine: no packet goes to 169.254.169.254
otherwise (this workplace flags traffic to non-loopback addresses, and a local run must not wait on a timeout).
"""

from __future__ import annotations

import glob
import importlib.metadata
import os
import platform
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from caerus.metrics import deps

Unavailable = dict[str, str]

CHRONY_FIELDS = (
    "refid", "refname", "stratum", "reftime", "correction_s", "last_offset_s", "rms_offset_s", "freq_ppm",
    "resid_freq_ppm", "skew_ppm", "root_delay_s", "root_dispersion_s", "update_interval_s", "leap",
)
PACKAGES = (
    "msgspec", "websockets", "numpy", "hdrhistogram", "rich", "chdb", "confluent-kafka", "psutil",
    "cryptography", "eth-account", "msgpack", "matplotlib",  # the last one only where reports are rendered
)
IMDS = "http://169.254.169.254"


def unavailable(reason: str) -> Unavailable:
    return {"unavailable": reason}


def _read(path: str) -> str | Unavailable:
    try:
        return Path(path).read_text().strip()
    except OSError as exc:
        return unavailable(f"{path}: {exc.strerror or exc}")


def cpu_model(cpuinfo: str = "/proc/cpuinfo") -> str | Unavailable:
    text = _read(cpuinfo)
    if isinstance(text, dict):
        return text
    for line in text.splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return unavailable(f"no 'model name' line in {cpuinfo}")


def cpu_topology(sys_cpu: str = "/sys/devices/system/cpu") -> dict[str, Any]:
    """Logical CPUs, physical cores and threads per core from sysfs topology."""
    cpus = sorted(glob.glob(f"{sys_cpu}/cpu[0-9]*"))
    cores: set[tuple[str, str]] = set()
    siblings: set[str] = set()
    for cpu in cpus:
        pkg = _read(f"{cpu}/topology/physical_package_id")
        core = _read(f"{cpu}/topology/core_id")
        sib = _read(f"{cpu}/topology/thread_siblings_list")
        if isinstance(pkg, str) and isinstance(core, str):
            cores.add((pkg, core))
        if isinstance(sib, str):
            siblings.add(sib)
    logical = len(cpus) or (os.cpu_count() or 0)
    out: dict[str, Any] = {"logical_cpus": logical, "affinity": sorted(os.sched_getaffinity(0))}
    if cores:
        out["physical_cores"] = len(cores)
        out["threads_per_core"] = logical // len(cores) if len(cores) else 1
    else:
        out["physical_cores"] = unavailable("no sysfs topology")
        out["threads_per_core"] = unavailable("no sysfs topology")
    return out


def kernel() -> dict[str, Any]:
    return {"release": platform.release(), "version": platform.version(), "cmdline": _read("/proc/cmdline")}


def isolation(sys_cpu: str = "/sys/devices/system/cpu") -> dict[str, Any]:
    return {"isolated": _read(f"{sys_cpu}/isolated"), "nohz_full": _read(f"{sys_cpu}/nohz_full")}


def governors(sys_cpu: str = "/sys/devices/system/cpu") -> dict[str, Any] | Unavailable:
    """Scaling governor per CPU (VMs often have no cpufreq at all)."""
    found = {}
    for path in sorted(glob.glob(f"{sys_cpu}/cpu[0-9]*/cpufreq/scaling_governor")):
        cpu = Path(path).parts[-3]
        found[cpu] = _read(path)
    return found or unavailable("no cpufreq scaling_governor in sysfs (VM or cpufreq disabled)")


def thp(path: str = "/sys/kernel/mm/transparent_hugepage/enabled") -> str | Unavailable:
    """The selected transparent-hugepage mode (the bracketed word)."""
    text = _read(path)
    if isinstance(text, dict):
        return text
    for word in text.split():
        if word.startswith("[") and word.endswith("]"):
            return word[1:-1]
    return text


def clocksource(path: str = "/sys/devices/system/clocksource/clocksource0/current_clocksource") -> Any:
    return _read(path)


def parse_chrony_tracking(csv_line: str) -> dict[str, Any]:
    """Parse one line of ``chronyc -c tracking`` into named fields (numbers as floats)."""
    parts = csv_line.strip().split(",")
    if len(parts) != len(CHRONY_FIELDS):
        raise ValueError(f"chronyc -c tracking gave {len(parts)} fields, expected {len(CHRONY_FIELDS)}: {csv_line!r}")
    out: dict[str, Any] = {}
    for name, raw in zip(CHRONY_FIELDS, parts, strict=True):
        if name in ("refid", "refname", "leap"):
            out[name] = raw
        else:
            try:
                out[name] = float(raw)
            except ValueError:
                out[name] = raw
    return out


def chrony_tracking(socket: str | None = None, timeout: float = 2.0) -> dict[str, Any]:
    """chronyd's tracking state, or why it is unavailable (no chronyc, no daemon, unparseable output)."""
    chronyc = shutil.which("chronyc") or ("/usr/bin/chronyc" if os.path.exists("/usr/bin/chronyc") else None)
    if not chronyc:
        return unavailable("chronyc is not installed")
    argv = [chronyc, *(["-h", socket] if socket else []), "-c", "tracking"]
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return unavailable(f"chronyc failed: {exc}")
    if res.returncode != 0 or not res.stdout.strip():
        msg = (res.stderr or res.stdout).strip().splitlines()
        return unavailable(f"chronyc exit {res.returncode}: {msg[-1] if msg else 'no output'}")
    try:
        out = parse_chrony_tracking(res.stdout.strip().splitlines()[-1])
    except ValueError as exc:
        return unavailable(str(exc))
    out["taken_ns"] = time.time_ns()
    return out


def python_info(packages: Sequence[str] = PACKAGES) -> dict[str, Any]:
    versions: dict[str, str] = {}
    for name in packages:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return {
        "version": platform.python_version(),
        "implementation": platform.python_implementation(),
        "executable": sys.executable,
        "gil_disabled": bool(getattr(sys, "_is_gil_enabled", lambda: True)() is False),
        "packages": versions,
        "lock": deps.environment_record(),  # a deployed venv: does it still hold exactly the locked versions?
    }


def git_revision(repo: Path | None = None) -> dict[str, Any] | Unavailable:
    repo = repo or Path(__file__).resolve().parents[2]
    git = shutil.which("git")
    if not git:
        return unavailable("git is not installed")
    try:
        rev = subprocess.run([git, "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5, check=False)
        if rev.returncode != 0:
            return unavailable(f"not a git checkout: {rev.stderr.strip()}")
        dirty = subprocess.run([git, "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return unavailable(f"git failed: {exc}")
    return {"revision": rev.stdout.strip(), "dirty": bool(dirty.stdout.strip())}


def is_ec2(dmi: str = "/sys/devices/virtual/dmi/id") -> bool:
    """True only when DMI says Amazon EC2 (board_asset_tag is the instance id, sys_vendor 'Amazon EC2')."""
    vendor = _read(f"{dmi}/sys_vendor")
    tag = _read(f"{dmi}/board_asset_tag")
    return (isinstance(vendor, str) and "Amazon EC2" in vendor) or (isinstance(tag, str) and tag.startswith("i-"))


def ec2_identity(timeout: float = 0.3, dmi: str = "/sys/devices/virtual/dmi/id",
                 opener: Callable[..., Any] = urllib.request.urlopen, base: str = IMDS) -> dict[str, Any]:
    """Instance id/type/AZ via IMDSv2 -- attempted only on EC2 (see module docstring)."""
    if not is_ec2(dmi):
        return unavailable("not an EC2 machine (DMI); IMDS not queried")
    try:
        req = urllib.request.Request(f"{base}/latest/api/token", method="PUT",
                                     headers={"X-aws-ec2-metadata-token-ttl-seconds": "60"})
        with opener(req, timeout=timeout) as resp:
            token = resp.read().decode()
        out: dict[str, Any] = {}
        for key, path in (("instance_id", "instance-id"), ("instance_type", "instance-type"),
                          ("availability_zone", "placement/availability-zone")):
            r = urllib.request.Request(f"{base}/latest/meta-data/{path}",
                                       headers={"X-aws-ec2-metadata-token": token})
            with opener(r, timeout=timeout) as resp:
                out[key] = resp.read().decode()
        return out
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        return unavailable(f"IMDSv2 did not answer: {exc}")


def collect_env(
    *,
    plan: dict[str, Any] | None = None,
    chrony_socket: str | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Everything env.json holds at session start (call ``chrony_tracking`` again at the end)."""
    env: dict[str, Any] = {
        "schema": 1,
        "taken_ns": time.time_ns(),
        "hostname": platform.node(),
        "cpu_model": cpu_model(),
        "topology": cpu_topology(),
        "kernel": kernel(),
        "isolation": isolation(),
        "governor": governors(),
        "thp": thp(),
        "clocksource": clocksource(),
        "chrony": {"start": chrony_tracking(chrony_socket)},
        "python": python_info(),
        "git": git_revision(),
        "ec2": ec2_identity(),
    }
    if plan is not None:
        env["plan"] = plan
    if extra:
        env.update(extra)
    return env
