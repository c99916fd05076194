"""`invoke deploy`: build the wheel, upload it, (re)create the venv, install one systemd unit per fleet process
pinned (CPUAffinity) per the fleet plan. Idempotent: the installed wheel is identified by a digest of its
contents, units are rewritten only when their text changes.

Remote layout (host coordinates; a test host's prefix is prepended)::

    /opt/caerus/wheels/caerus-*.whl    uploaded wheel
    /opt/caerus/venv/                  the virtualenv (``.caerus-wheel`` = digest of the installed wheel)
    /etc/caerus/fleet.env              session id + metrics folder for the units
    /etc/systemd/system/caerus-<process>.service, caerus-fleet.target
    /var/lib/caerus/sessions/          bench output (collected back by ``invoke collect``)
"""

from __future__ import annotations

import hashlib
import shlex
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

from caerus.plan import FleetPlan, format_cpu_list
from infra.configure import decide_live
from infra.facts import HostFacts, gather
from infra.fleetplan import host_plan
from infra.hosts import HostRecord, HostStore
from infra.remote import RemoteHost, open_host
from infra.steps import Command, FileSpec, Step, apply

APP_DIR = "/opt/caerus"
SESSIONS_DIR = "/var/lib/caerus/sessions"
METRICS_DIR = "/var/lib/caerus/metrics"
ENV_FILE = "/etc/caerus/fleet.env"
UNIT_DIR = "/etc/systemd/system"
REPO_ROOT = Path(__file__).resolve().parent.parent
# Processes that run as units (the emulator and the session runner are started by `caerus session` instead).
UNIT_PROCESSES = ("feed-binance", "feed-hyperliquid", "strategy", "execution", "capture")


class DeployError(RuntimeError):
    """Building, uploading or installing failed."""


@dataclass(frozen=True)
class DeployOptions:
    wheel: Path | None = None  # prebuilt wheel; default: build one from this checkout
    system_site_packages: bool = False  # venv sees the host's site-packages (test hosts without a registry)
    mode: str = "auto"
    session: str = "live"


def build_wheel(out_dir: Path, repo: Path = REPO_ROOT) -> Path:
    """Build the caerus wheel from a clean copy of the package sources (keeps build/ out of the checkout)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="caerus-wheel-") as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        for name in ("pyproject.toml", "README.md", "LICENSE"):
            if (repo / name).exists():
                (src / name).write_bytes((repo / name).read_bytes())
        for pkg in ("caerus", "infra"):
            subprocess.run(["cp", "-r", str(repo / pkg), str(src / pkg)], check=True)
        dist = Path(tmp) / "dist"
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist),
             str(src)],
            capture_output=True, text=True,
        )
        if proc.returncode != 0:
            raise DeployError(f"building the wheel failed:\n{proc.stderr.strip()[-2000:]}")
        wheels = sorted(dist.glob("caerus-*.whl"))
        if not wheels:
            raise DeployError("pip wheel produced no caerus wheel")
        target = out_dir / wheels[0].name
        target.write_bytes(wheels[0].read_bytes())
    return target


def wheel_digest(path: Path) -> str:
    """sha256 over member names and contents (zip timestamps differ between identical builds)."""
    h = hashlib.sha256()
    with zipfile.ZipFile(path) as z:
        for name in sorted(z.namelist()):
            if name.endswith(".dist-info/RECORD"):
                continue
            h.update(name.encode() + b"\0" + z.read(name) + b"\0")
    return h.hexdigest()


def _template(name: str, **values: str) -> str:
    return Template(resources.files("infra").joinpath(f"templates/{name}").read_text()).substitute(**values)


def process_command(process: str, caerus: str, plan: FleetPlan) -> str:
    """ExecStart for one fleet process, per the process CLI contract (segments named from $CAERUS_SESSION)."""
    p = plan.placement(process)
    s = "${CAERUS_SESSION}"
    common = (f"--stats-segment {s}.stats.{process} --metrics-dir ${{CAERUS_METRICS_DIR}} "
              f"--wait-policy {p.wait_policy} --cpus {format_cpu_list(p.cpus)}")
    if process.startswith("feed-"):
        venue = process.removeprefix("feed-")
        args = (f"feed --venue {venue} --segment {s}.book.{venue} --events-segment {s}.events.{venue} "
                f"--client {p.feed_client}")
    elif process == "strategy":
        args = f"strategy --segment {s}.book.binance --segment {s}.book.hyperliquid --order-segment {s}.orders"
    elif process == "execution":
        args = (f"execution --segment {s}.orders --transport paper --exec-segment {s}.exec "
                f"--book-segment {s}.book.binance --book-segment {s}.book.hyperliquid")
    elif process == "capture":
        args = (f"capture --segment {s}.book.binance --segment {s}.book.hyperliquid --segment {s}.exec "
                f"--store {METRICS_DIR}/capture")
    else:
        raise DeployError(f"no unit command for process {process!r}")
    return f"{caerus} {args} {common}"


def units_step(plan: FleetPlan, user: str, session: str) -> Step:
    caerus = f"{APP_DIR}/venv/bin/caerus"
    step = Step("units")
    step.files.append(FileSpec(ENV_FILE, _template("fleet.env.tmpl", session=session, metrics_dir=METRICS_DIR),
                               notify=("reload",)))
    names = []
    for process in UNIT_PROCESSES:
        p = plan.placement(process)
        unit = f"caerus-{process}.service"
        names.append(unit)
        text = _template(
            "caerus-process.service.tmpl",
            process=process,
            user=user,
            env_file=ENV_FILE,
            exec_start=process_command(process, caerus, plan),
            cpus=" ".join(str(c) for c in p.cpus),
            placement_note=f"cpus {format_cpu_list(p.cpus)}, wait policy {p.wait_policy}, "
                           f"{'dedicated' if p.dedicated else 'shared'}",
        )
        step.files.append(FileSpec(f"{UNIT_DIR}/{unit}", text, notify=("reload",)))
    step.files.append(FileSpec(f"{UNIT_DIR}/caerus-fleet.target",
                               _template("caerus-fleet.target.tmpl", units=" ".join(names)), notify=("reload",)))
    step.handlers["reload"] = Command("systemctl daemon-reload", "unit files changed", "service")
    return step


def python_install_command(facts: HostFacts) -> str:
    """How to get an interpreter caerus can run on (>= 3.11 with venv support) on this distribution."""
    if facts.os_id in ("debian", "ubuntu"):
        return "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3 python3-venv"
    return "dnf install -y -q python3.11 python3.11-pip"


def ensure_python(host: RemoteHost, facts: HostFacts, live: bool, say: Callable[[str], None]) -> str:
    """Path of a suitable interpreter, installing one in live mode; a clear error otherwise."""
    if facts.python3:
        return facts.python3
    cmd = python_install_command(facts)
    if not live:
        raise DeployError(f"no Python >= 3.11 with venv support on the host (python3 is "
                          f"{facts.python3_system or 'missing'}); install it (`{cmd}`) or deploy in live mode")
    say(f"  installing Python: {cmd}")
    host.run(cmd, sudo=True, timeout=900)
    found = gather(host).python3
    if not found:
        raise DeployError(f"`{cmd}` ran but still no Python >= 3.11 with ensurepip on the host")
    return found


def ensure_writable_dirs(host: RemoteHost, dirs: tuple[str, ...], say: Callable[[str], None]) -> list[str]:
    """Create the data folders owned by the login user (the session writes there); returns those changed."""
    changed = []
    for d in dirs:
        path = host.path(d)
        if host.run(f"test -d {shlex.quote(path)} -a -w {shlex.quote(path)}", check=False).exited != 0:
            owner = host.login_user()
            host.run(f"install -d -o {shlex.quote(owner)} {shlex.quote(path)}", sudo=True)
            say(f"  created {path} (owner {owner})")
            changed.append(d)
    return changed


def install_wheel(host: RemoteHost, wheel: Path, system_site_packages: bool, python3: str,
                  say: Callable[[str], None]) -> bool:
    """Upload + install the wheel unless the same contents are installed already. Returns True if it changed."""
    digest = wheel_digest(wheel)
    marker = f"{APP_DIR}/venv/.caerus-wheel"
    if (host.read_text(marker) or "").strip() == digest:
        say(f"  wheel {wheel.name} already installed (digest {digest[:12]})")
        return False
    app = host.path(APP_DIR)
    q = shlex.quote
    host.run(f"mkdir -p {q(app)}/wheels", sudo=True)
    if not host.root:
        # The login user's name, asked *outside* sudo: inside `sudo sh -c '...'` a `$(id -un)` is root.
        host.run(f"chown -R {q(host.login_user())} {q(app)}", sudo=True)
    remote_wheel = f"{app}/wheels/{wheel.name}"
    host.conn.put(str(wheel), remote_wheel)
    if not host.exists(f"{APP_DIR}/venv/bin/python"):
        flags = " --system-site-packages" if system_site_packages else ""
        host.run(f"{q(python3)} -m venv{flags} {q(app)}/venv")
        say(f"  created venv {app}/venv")
    pip = f"{q(app)}/venv/bin/python -m pip install -q --disable-pip-version-check"
    host.run(f"{pip} --force-reinstall --no-deps {q(remote_wheel)}", timeout=900)
    host.run(f"{pip} {q(remote_wheel)}", timeout=1800)  # dependencies (no-op when already satisfied)
    host.write_text(marker, digest + "\n")
    say(f"  installed {wheel.name} into {app}/venv")
    return True


def deploy(record: HostRecord, store: HostStore, opts: DeployOptions,
           say: Callable[[str], None] = print) -> dict[str, Any]:
    wheel = opts.wheel or build_wheel(store.root / "dist")
    host = open_host(record, store.known_hosts, say)
    try:
        facts = gather(host)
        live = decide_live(opts.mode, facts, record)
        plan = host_plan(store, record.name, facts)
        say(f"deploy {record.name}: {'live' if live else 'plan-only'} units; wheel {wheel.name}")
        python3 = ensure_python(host, facts, live, say)
        dirs_changed = ensure_writable_dirs(host, (SESSIONS_DIR, METRICS_DIR), say)
        wheel_changed = install_wheel(host, wheel, opts.system_site_packages, python3, say)
        result = apply(host, [units_step(plan, record.user, opts.session)], live, say)
    finally:
        host.close()
    summary = {
        "host": record.name,
        "wheel": wheel.name,
        "wheel_digest": wheel_digest(wheel),
        "wheel_changed": wheel_changed,
        "dirs_changed": dirs_changed,
        "python": python3,
        "mode": "live" if live else "plan",
        "result": result.to_dict(),
        "plan": plan.to_dict(),
    }
    store.save_json(record.name, "deploy", summary)
    say(f"deploy: wheel {'installed' if wheel_changed else 'unchanged'}, {len(result.changed)} unit file(s) "
        f"changed, {len(result.planned)} command(s) planned only")
    return summary
