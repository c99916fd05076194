"""`invoke deploy`: build the caerus wheel, upload it with the wheelhouse of the fleet lock, install both into the
host's venv without a package index, verify the venv against the lock, and install one systemd unit per fleet
process pinned (CPUAffinity) per the fleet plan.

Reproducible: the host installs ``locks/fleet.txt`` with ``pip install --no-index --require-hashes`` from wheels
downloaded here (:mod:`infra.wheelhouse`), and a changed lock gets a fresh venv, so the venv holds exactly the
locked versions and nothing else; ``python -m caerus.metrics.deps`` then checks that on the host, and the result
goes into the deploy summary and the host record (every session's ``env.json`` repeats the check).
Idempotent: the wheel is identified by a digest of its contents, the dependencies by the lock digest and target,
wheels already on the host are not uploaded again, units are rewritten only when their text changes.

Remote layout (host coordinates; a test host's prefix is prepended)::

    /opt/caerus/wheels/caerus-*.whl    uploaded caerus wheel (the ``caerus`` package only)
    /opt/caerus/wheelhouse/            the lock's wheels + fleet.txt (the lock)
    /opt/caerus/venv/                  the virtualenv (``.caerus-wheel`` = digest of the installed wheel,
                                       ``.caerus-deps`` = lock digest + target, ``caerus-lock.txt`` = the lock)
    /etc/caerus/fleet.env              session id + metrics folder for the units
    /etc/systemd/system/caerus-<process>.service, caerus-fleet.target
    /var/lib/caerus/sessions/          bench output (collected back by ``invoke collect``)
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

from caerus.instruments import InstrumentError, parse_symbols
from caerus.metrics.deps import DEPLOYED_LOCK_NAME
from caerus.plan import MAX_FEED_BOOKS_PER_S, FleetPlan, feed_venue, format_cpu_list
from caerus.session.launch import feed_rings
from infra.configure import decide_live
from infra.facts import HostFacts, gather
from infra.fleetplan import host_plan, unit_plan
from infra.hosts import HostRecord, HostStore
from infra.locks import FLEET_LOCK
from infra.remote import RemoteHost, open_host
from infra.safenames import UnsafeValue, session_name, unix_user
from infra.steps import Command, FileSpec, Step, apply
from infra.wheelhouse import LOCK_IN_WHEELHOUSE, Target, WheelhouseError, build_wheelhouse, lock_digest, wheel_files

APP_DIR = "/opt/caerus"
SESSIONS_DIR = "/var/lib/caerus/sessions"
EXPORTER_UNIT = "caerus-exporter.service"
EXPORTER_PORT = 9465  # caerus.monitoring.app.DEFAULT_PORT, on 127.0.0.1
METRICS_DIR = "/var/lib/caerus/metrics"
ENV_FILE = "/etc/caerus/fleet.env"
UNIT_DIR = "/etc/systemd/system"
REPO_ROOT = Path(__file__).resolve().parent.parent
# Processes that run as units (the emulator and the session runner are started by `caerus session` instead).
INSTRUMENTS_UNIT = "caerus-instruments.service"
INSTRUMENTS_FILE = f"{METRICS_DIR}/instruments.json"
_SYMBOLS = re.compile(r"^[A-Za-z0-9=/,]+$")


class DeployError(RuntimeError):
    """Building, uploading or installing failed."""


@dataclass(frozen=True)
class DeployOptions:
    wheel: Path | None = None  # prebuilt wheel; default: build one from this checkout
    lock: Path = FLEET_LOCK  # the fleet's runtime dependencies, pinned with hashes
    wheelhouse_cache: Path | None = None  # where wheelhouses are kept (default: the state folder's wheelhouse/)
    mode: str = "auto"
    session: str = "live"  # CAERUS_SESSION in the units' environment file: a safe name (infra.safenames)
    symbols: str = "BTC"  # CAERUS_SYMBOLS: the instruments the units trade (caerus.instruments.parse_symbols)
    # books/s one feed process carries (caerus.plan): a venue whose estimate is above it gets a unit per share
    max_books_per_feed_process: float = MAX_FEED_BOOKS_PER_S
    host_key: str = ""  # first-contact host key policy: verified | tofu ("" = verified for an EC2 instance)


def build_wheel(out_dir: Path, repo: Path = REPO_ROOT) -> Path:
    """Build the caerus wheel from a clean copy of the package sources (keeps build/ out of the checkout). It holds
    the ``caerus`` package only: the automation suite (``infra``) and the benchmarks never go to a host."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="caerus-wheel-") as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        for name in ("pyproject.toml", "README.md", "LICENSE"):
            if (repo / name).exists():
                (src / name).write_bytes((repo / name).read_bytes())
        subprocess.run(["cp", "-r", str(repo / "caerus"), str(src / "caerus")], check=True)
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


def unit_processes(plan: FleetPlan) -> tuple[str, ...]:
    """The fleet processes that get a unit: every hot process of the plan (each share of a split venue) and
    capture."""
    return (*plan.hot_processes, "capture")


def process_command(process: str, caerus: str, plan: FleetPlan) -> str:
    """ExecStart for one fleet process, per the process CLI contract (segments named from $CAERUS_SESSION; a
    split venue's share reads its run of instrument ids into its own rings, as a local session's does)."""
    p = plan.placement(process)
    s = "${CAERUS_SESSION}"
    common = (f"--stats-segment {s}.stats.{process} --metrics-dir ${{CAERUS_METRICS_DIR}} "
              f"--wait-policy {p.wait_policy} --cpus {format_cpu_list(p.cpus)}")
    inst = f"--instruments {INSTRUMENTS_FILE}"  # written by the caerus-instruments unit at every fleet start
    rings = feed_rings(plan)
    books = " ".join(f"--segment {s}.book.{r.key}" for r in rings)
    if feed_venue(process) is not None and process in plan.hot_processes:
        r = next(r for r in rings if r.process == process)
        share = f" --share {r.share[0]}:{r.share[1]} --process-name {process}" if r.share is not None else ""
        warm = f" --warm-every-us {p.feed_warm_every_us:g}" if p.feed_warm_every_us else ""
        args = (f"feed --venue {r.venue} --segment {s}.book.{r.key} --events-segment {s}.events.{r.key} "
                f"--client {p.feed_client} {inst}{share}{warm}")
    elif process == "strategy":
        args = f"strategy {books} --order-segment {s}.orders {inst}"
    elif process == "execution":
        args = (f"execution --segment {s}.orders --transport paper --exec-segment {s}.exec "
                f"{' '.join(f'--book-segment {s}.book.{r.key}' for r in rings)} {inst}")
    elif process == "capture":
        args = f"capture {books} --segment {s}.exec --store {METRICS_DIR}/capture"
    else:
        raise DeployError(f"no unit command for process {process!r}")
    return f"{caerus} {args} {common}"


def _unit_line_safe(what: str, value: str) -> str:
    """A value that goes into a unit or environment file on one line: a newline would start another directive
    (``Environment=LD_PRELOAD=...``, a second ``ExecStart``). The named values are checked by their grammar
    first; this catches anything rendered from elsewhere (the fleet plan in the state folder)."""
    if any(ch in value for ch in "\n\r\0"):
        raise DeployError(f"{what} {value!r} holds a line break or NUL: refusing to write it into a unit file")
    return value


def check_unit_values(session: str, user: str, symbols: str = "BTC") -> str:
    """Refuse, before anything is done, a session, user or symbol list that cannot go into the units' files as it
    is; the symbol list in its canonical form (what CAERUS_SYMBOLS holds)."""
    try:
        session_name(session, "--session")
        unix_user(user, "the host record's login user")
        requests = parse_symbols(symbols)
    except (UnsafeValue, InstrumentError) as exc:
        raise DeployError(str(exc)) from None
    canonical = ",".join(r.name if (r.binance_symbol, r.hl_coin) == (f"{r.name}USDT", r.name)
                         else f"{r.name}={r.binance_symbol}/{r.hl_coin}" for r in requests)
    if not _SYMBOLS.match(canonical):  # it goes into an environment file and a command line: letters, digits,
        raise DeployError(f"--symbols {symbols!r}: only letters, digits and , = / can go into the units")  # , = /
    return canonical


def units_step(plan: FleetPlan, user: str, session: str, symbols: str = "BTC") -> Step:
    symbols = check_unit_values(session, user, symbols)
    caerus = f"{APP_DIR}/venv/bin/caerus"
    step = Step("units")
    env = _template("fleet.env.tmpl", session=_unit_line_safe("--session", session),
                    metrics_dir=_unit_line_safe("metrics folder", METRICS_DIR), symbols=symbols)
    step.files.append(FileSpec(ENV_FILE, env, notify=("reload",)))
    # the instrument list from the venues' listings at every fleet start, before any process that reads it
    step.files.append(FileSpec(f"{UNIT_DIR}/{INSTRUMENTS_UNIT}", _template(
        "caerus-instruments.service.tmpl", user=_unit_line_safe("user", user), env_file=ENV_FILE,
        exec_start=f"{caerus} instruments --symbols ${{CAERUS_SYMBOLS}} --out-dir {METRICS_DIR}"),
        notify=("reload",)))
    names = [INSTRUMENTS_UNIT]
    for process in unit_processes(plan):
        p = plan.placement(process)
        unit = f"caerus-{process}.service"
        names.append(unit)
        values = {
            "process": process,
            "user": user,
            "env_file": ENV_FILE,
            "exec_start": process_command(process, caerus, plan),
            "after": INSTRUMENTS_UNIT if process != "capture" else "",
            "requires": f"Requires={INSTRUMENTS_UNIT}" if process != "capture" else "",
            "cpus": " ".join(str(c) for c in p.cpus),
            "placement_note": f"cpus {format_cpu_list(p.cpus)}, wait policy {p.wait_policy}, "
                              f"{'dedicated' if p.dedicated else 'shared'}",
        }
        text = _template("caerus-process.service.tmpl",
                         **{k: _unit_line_safe(f"{unit} {k}", v) for k, v in values.items()})
        step.files.append(FileSpec(f"{UNIT_DIR}/{unit}", text, notify=("reload",)))
    # caerus exporter (issue 31): follows the newest session folder, loopback only, on the housekeeping CPUs
    names.append(EXPORTER_UNIT)
    step.files.append(FileSpec(f"{UNIT_DIR}/{EXPORTER_UNIT}", _template(
        "caerus-exporter.service.tmpl", user=_unit_line_safe("user", user),
        exec_start=f"{caerus} exporter --latest-in {SESSIONS_DIR} --port {EXPORTER_PORT} --chrony "
                   f"--host-expiry-file /etc/caerus/expiry",
        cpus=" ".join(str(c) for c in plan.housekeeping)), notify=("reload",)))
    step.files.append(FileSpec(f"{UNIT_DIR}/caerus-fleet.target",
                               _template("caerus-fleet.target.tmpl", units=" ".join(names)), notify=("reload",)))
    step.handlers["reload"] = Command("systemctl daemon-reload", "unit files changed", "service")
    return step


def python_install_command(facts: HostFacts) -> str:
    """How to get an interpreter caerus can run on (>= 3.11 with venv support) on this distribution."""
    if facts.os_id in ("debian", "ubuntu"):
        return "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3 python3-venv"
    return "dnf install -y -q python3.11 python3.11-pip"


def ensure_python(host: RemoteHost, facts: HostFacts, live: bool, say: Callable[[str], None]) -> HostFacts:
    """The host's facts with a suitable interpreter, installing one in live mode; a clear error otherwise."""
    if facts.python3:
        return facts
    cmd = python_install_command(facts)
    if not live:
        raise DeployError(f"no Python >= 3.11 with venv support on the host (python3 is "
                          f"{facts.python3_system or 'missing'}); install it (`{cmd}`) or deploy in live mode")
    say(f"  installing Python: {cmd}")
    host.run(cmd, sudo=True, timeout=900)
    found = gather(host)
    if not found.python3:
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


def _pip(venv: str) -> str:
    """pip in the venv, blind to the host's pip configuration and environment (no index, find-links or
    constraints can come from there), with the index unreachable even if a flag were forgotten."""
    q = shlex.quote
    return (f"env PIP_CONFIG_FILE=/dev/null {q(venv)}/bin/python -m pip --isolated --disable-pip-version-check "
            f"install -q --no-index --index-url http://127.0.0.1:9/unreachable/")


def _pip_errors(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    picked = [ln for ln in lines if ln.startswith("ERROR") or "Expected sha256" in ln
              or ("==" in ln and " from " in ln)]
    return "; ".join((picked or lines)[-4:])


def prepare_app_dir(host: RemoteHost) -> str:
    """The app folder, created with sudo and handed to the login user (who then writes everything below it)."""
    app = host.path(APP_DIR)
    q = shlex.quote
    host.run(f"mkdir -p {q(app)}/wheels {q(app)}/wheelhouse", sudo=True)
    if not host.root:
        # The login user's name, asked *outside* sudo: inside `sudo sh -c '...'` a `$(id -un)` is root.
        host.run(f"chown -R {q(host.login_user())} {q(app)}", sudo=True)
    return app


def sync_wheelhouse(host: RemoteHost, wheelhouse: Path, say: Callable[[str], None]) -> int:
    """Make the host's wheelhouse folder hold exactly the local one: upload what is missing or differs, remove
    what the lock no longer names. Returns the number of files uploaded."""
    remote = f"{host.path(APP_DIR)}/wheelhouse"
    q = shlex.quote
    listing = host.run(f"cd {q(remote)} && for f in *.whl {LOCK_IN_WHEELHOUSE}; do [ -f \"$f\" ] && "
                       f"sha256sum \"$f\"; done; true").stdout
    have = {}
    for line in listing.splitlines():
        digest, _, name = line.partition("  ")
        if name:
            have[name.strip()] = digest.strip()
    want = wheel_files(wheelhouse)
    want[LOCK_IN_WHEELHOUSE] = lock_digest(wheelhouse / LOCK_IN_WHEELHOUSE)
    stale = sorted(set(have) - set(want))
    if stale:
        host.run(f"cd {q(remote)} && rm -f " + " ".join(q(n) for n in stale))
    uploaded = 0
    for name, digest in sorted(want.items()):
        if have.get(name) != digest:
            host.conn.put(str(wheelhouse / name), f"{remote}/{name}")
            uploaded += 1
    say(f"  wheelhouse: {uploaded} of {len(want)} file(s) uploaded, {len(stale)} stale removed")
    return uploaded


def install_dependencies(host: RemoteHost, target: Target, lock_sha: str, python3: str,
                         say: Callable[[str], None], force: bool = False) -> bool:
    """A venv holding exactly the lock, installed from the uploaded wheelhouse with no index and every hash
    checked. A changed lock or target gets a fresh venv (nothing left over from the previous lock). Returns True
    when it installed."""
    app = host.path(APP_DIR)
    venv = f"{app}/venv"
    q = shlex.quote
    stamp = f"{lock_sha} {target.key}"
    if not force and (host.read_text(f"{APP_DIR}/venv/.caerus-deps") or "").strip() == stamp:
        say(f"  dependencies already installed (lock {lock_sha[:12]}, {target.key})")
        return False
    host.run(f"rm -rf {q(venv)} && {q(python3)} -m venv {q(venv)}")
    wheelhouse = f"{app}/wheelhouse"
    res = host.run(f"{_pip(venv)} --require-hashes --only-binary=:all: --find-links {q(wheelhouse)} "
                   f"-r {q(wheelhouse)}/{LOCK_IN_WHEELHOUSE}", check=False, timeout=1800)
    if res.exited != 0:
        raise DeployError(f"installing the locked dependencies on the host failed (no index: only the uploaded "
                          f"wheelhouse): {_pip_errors(res.stderr + res.stdout)}")
    host.run(f"cp {q(wheelhouse)}/{LOCK_IN_WHEELHOUSE} {q(venv)}/{DEPLOYED_LOCK_NAME}")
    host.write_text(f"{APP_DIR}/venv/.caerus-deps", stamp + "\n")
    say(f"  installed the locked dependencies into {venv} ({target.key})")
    return True


def install_wheel(host: RemoteHost, wheel: Path, say: Callable[[str], None]) -> bool:
    """Upload + install the caerus wheel (no dependencies: the lock brought them) unless the same contents are
    installed already. Returns True if it changed."""
    digest = wheel_digest(wheel)
    marker = f"{APP_DIR}/venv/.caerus-wheel"
    if (host.read_text(marker) or "").strip() == digest:
        say(f"  wheel {wheel.name} already installed (digest {digest[:12]})")
        return False
    app = host.path(APP_DIR)
    remote_wheel = f"{app}/wheels/{wheel.name}"
    host.conn.put(str(wheel), remote_wheel)
    host.run(f"{_pip(app + '/venv')} --force-reinstall --no-deps {shlex.quote(remote_wheel)}", timeout=900)
    host.write_text(marker, digest + "\n")
    say(f"  installed {wheel.name} into {app}/venv")
    return True


def verify_venv(host: RemoteHost) -> dict[str, Any]:
    """The host venv checked against its lock by the fleet's own check (exact versions, nothing unlocked)."""
    venv = f"{host.path(APP_DIR)}/venv"
    q = shlex.quote
    res = host.run(f"{q(venv)}/bin/python -m caerus.metrics.deps {q(venv)}/{DEPLOYED_LOCK_NAME}", check=False)
    try:
        check: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError) as exc:
        raise DeployError(f"verifying the host venv against its lock failed (exit {res.exited}): "
                          f"{(res.stderr or res.stdout).strip()[-500:]}") from exc
    return check


def lock_problems(check: dict[str, Any]) -> list[str]:
    return [*check.get("mismatched", []), *(f"missing {m}" for m in check.get("missing", [])),
            *(f"not in the lock: {u}" for u in check.get("unlocked", []))]


def deploy(record: HostRecord, store: HostStore, opts: DeployOptions,
           say: Callable[[str], None] = print) -> dict[str, Any]:
    check_unit_values(opts.session, record.user, opts.symbols)  # before any build, upload or connection
    if not opts.lock.is_file():
        raise DeployError(f"no lock file {opts.lock}: run `invoke lock`")
    wheel = opts.wheel or build_wheel(store.root / "dist")
    host = open_host(record, store.known_hosts, say, host_key=opts.host_key)
    try:
        facts = gather(host)
        live = decide_live(opts.mode, facts, record)
        # the units' instruments may need a venue split across feed processes (one unit per share)
        plan = unit_plan(host_plan(store, record.name, facts), facts, len(parse_symbols(opts.symbols)),
                         opts.max_books_per_feed_process)
        say(f"deploy {record.name}: {'live' if live else 'plan-only'} units; wheel {wheel.name}")
        facts = ensure_python(host, facts, live, say)
        try:
            target = Target.of(facts)
            say(f"  wheelhouse for {target.key} from {opts.lock.name}")
            wheelhouse = build_wheelhouse(opts.lock, target, opts.wheelhouse_cache or store.root / "wheelhouse")
        except WheelhouseError as exc:
            raise DeployError(str(exc)) from exc
        dirs_changed = ensure_writable_dirs(host, (SESSIONS_DIR, METRICS_DIR), say)
        prepare_app_dir(host)
        uploaded = sync_wheelhouse(host, wheelhouse, say)
        lock_sha = lock_digest(opts.lock)
        deps_changed = install_dependencies(host, target, lock_sha, facts.python3, say)
        wheel_changed = install_wheel(host, wheel, say)  # a fresh venv has no wheel marker: installs again
        verified = verify_venv(host)
        if not verified.get("matches") and not deps_changed:
            # Someone changed the venv since the last deploy: rebuild it from the lock rather than trust it.
            say(f"  the venv drifted from its lock ({'; '.join(lock_problems(verified)[:3])}): reinstalling")
            deps_changed = install_dependencies(host, target, lock_sha, facts.python3, say, force=True)
            wheel_changed = install_wheel(host, wheel, say)
            verified = verify_venv(host)
        if not verified.get("matches"):
            raise DeployError(f"the host venv does not match its lock: {'; '.join(lock_problems(verified)[:8])}")
        result = apply(host, [units_step(plan, record.user, opts.session, opts.symbols)], live, say)
    finally:
        host.close()
    deployed = {
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "wheel": wheel.name,
        "wheel_digest": wheel_digest(wheel),
        "lock": opts.lock.name,
        "lock_sha256": verified["lock_sha256"],
        "target": target.key,
        "packages": verified["pinned"],
        "verified": verified["matches"],
    }
    record.deployed = deployed
    store.save(record)
    summary = {
        "host": record.name,
        "wheel": wheel.name,
        "wheel_digest": deployed["wheel_digest"],
        "wheel_changed": wheel_changed,
        "dependencies": {**verified, "target": target.key, "changed": deps_changed, "uploaded": uploaded},
        "dirs_changed": dirs_changed,
        "python": facts.python3,
        "mode": "live" if live else "plan",
        "result": result.to_dict(),
        "plan": plan.to_dict(),
    }
    store.save_json(record.name, "deploy", summary)
    say(f"deploy: {verified['pinned']} locked packages verified on the host (lock {deployed['lock_sha256'][:12]})")
    say(f"deploy: wheel {'installed' if wheel_changed else 'unchanged'}, {len(result.changed)} unit file(s) "
        f"changed, {len(result.planned)} command(s) planned only")
    return summary
