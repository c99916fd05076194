"""Invoke tasks for the benchmark host: provision, configure, deploy, collect, teardown, status.

Thin wrappers: parse arguments, call the library modules in infra/, print. (``bench --host`` lives in tasks.py
and calls infra.remote_bench.) Every task accepts ``--state-dir`` (default ./.state or $CAERUS_STATE_DIR);
AWS tasks accept ``--region`` and ``--endpoint-url`` (or $CAERUS_AWS_ENDPOINT) so tests can point at moto.
"""

from __future__ import annotations

import sys
from pathlib import Path

from invoke import Context, task

from caerus.plan import parse_cpu_list


def _fail(exc: BaseException) -> None:
    print(f"error: {exc}", file=sys.stderr)
    sys.exit(1)


@task(
    help={
        "name": "host/session name (default tokyo)",
        "region": "AWS region (default ap-northeast-1)",
        "instance_type": "instance type (default c7i.2xlarge)",
        "endpoint_url": "AWS endpoint override (tests: moto); also $CAERUS_AWS_ENDPOINT",
        "ami_param": "SSM public parameter holding the AMI id (default: Amazon Linux 2023)",
        "cidr": "your address as A.B.C.D/32 (default: detected via checkip.amazonaws.com)",
        "one_thread_per_core": "launch with ThreadsPerCore=1 (no SMT siblings)",
        "ttl_hours": "time-to-live: the instance powers off (= terminates) after this many hours",
        "volume_gb": "gp3 root volume size",
        "owner": "owner tag (default: your login name)",
        "placement": "cluster placement group policy: preferred (default) | required | off",
        "hourly_usd": "override the hourly price estimate",
        "user": "SSH login user (default from the AMI family)",
        "dry_run": "print the plan without calling AWS",
        "state_dir": "local state folder (default ./.state)",
    }
)
def provision(c: Context, name: str = "tokyo", region: str = "", instance_type: str = "c7i.2xlarge",
              endpoint_url: str = "", ami_param: str = "", cidr: str = "", one_thread_per_core: bool = False,
              ttl_hours: float = 6.0, volume_gb: int = 30, owner: str = "", placement: str = "preferred",
              hourly_usd: float = -1.0, user: str = "", dry_run: bool = False, state_dir: str = "") -> None:
    """Launch (or find) the benchmark instance: key pair, /32 security group, IMDSv2, gp3, TTL, tags."""
    from infra.aws.ami import DEFAULT_AMI_PARAM
    from infra.aws.clients import AwsError
    from infra.hosts import HostStore
    from infra.provision import ProvisionRequest
    from infra.provision import provision as run

    req = ProvisionRequest(
        name=name, region=region, endpoint_url=endpoint_url, instance_type=instance_type,
        ami_param=ami_param or DEFAULT_AMI_PARAM, cidr=cidr, one_thread_per_core=one_thread_per_core,
        ttl_hours=float(ttl_hours), volume_gb=int(volume_gb), owner=owner, placement=placement,
        hourly_usd=None if float(hourly_usd) < 0 else float(hourly_usd), user=user, dry_run=dry_run,
    )
    try:
        run(req, HostStore(state_dir or None))
    except AwsError as exc:
        _fail(exc)


@task(
    help={
        "host": "host name from provision",
        "mode": "auto (live only on EC2 with systemd) | live | plan (render files, plan commands)",
        "no_reboot": "never reboot, even when the kernel command line changed (verification says pending)",
        "housekeeping": "CPUs kept for the OS, e.g. 0,4 (default: CPU 0 and its SMT siblings)",
        "wait_policy": "force a wait policy into the plan: spin | hybrid | sleep",
        "chronyc": "chronyc command used for verification (default: chronyc)",
        "host_key": "first contact: verified (key must match the instance's console fingerprints; default for an "
                    "EC2 instance) | tofu (trust on first use when there is nothing to compare)",
        "state_dir": "local state folder (default ./.state)",
    }
)
def configure(c: Context, host: str = "tokyo", mode: str = "auto", no_reboot: bool = False,
              housekeeping: str = "", wait_policy: str = "", chronyc: str = "", host_key: str = "",
              state_dir: str = "") -> None:
    """Tune the host for the fleet plan: chrony, kernel isolation args, irqbalance ban, THP/ENA/governor."""
    from infra.configure import ConfigureError
    from infra.configure import configure as run
    from infra.hosts import HostStore, StateError
    from infra.kernel import PlanError
    from infra.remote import HostKeyMismatch, RemoteError

    store = HostStore(state_dir or None)
    try:
        run(store.load(host), store, mode=mode, allow_reboot=not no_reboot,
            housekeeping=parse_cpu_list(housekeeping) or None, wait_policy=wait_policy or None, chronyc=chronyc,
            host_key=host_key)
    except (ConfigureError, StateError, PlanError, HostKeyMismatch, RemoteError, ValueError) as exc:
        _fail(exc)


@task(
    help={
        "host": "host name from provision",
        "hours": "hours added to the host's time-to-live (beyond its current expiry)",
        "mode": "auto (live only on EC2 with systemd) | live | plan (render files, plan commands)",
        "host_key": "first contact: verified (key must match the instance's console fingerprints; default for an "
                    "EC2 instance) | tofu (trust on first use when there is nothing to compare)",
        "state_dir": "local state folder (default ./.state)",
    }
)
def extend(c: Context, host: str = "tokyo", hours: float = 2.0, mode: str = "auto", host_key: str = "",
           state_dir: str = "") -> None:
    """Give a host more time-to-live: re-arm its power-off timer, update its expiry tag and the local record."""
    from infra.aws.clients import AwsError, AwsTarget
    from infra.configure import ConfigureError, decide_live
    from infra.facts import gather
    from infra.hosts import HostStore, StateError
    from infra.remote import HostKeyMismatch, RemoteError, open_host
    from infra.ttl import extend as run

    store = HostStore(state_dir or None)
    try:
        record = store.load(host)
        rh = open_host(record, store.known_hosts, print, host_key=host_key)
        try:
            live = decide_live(mode, gather(rh), record)

            def tag(iso: str) -> None:
                ec2 = AwsTarget.resolve(record.region, record.endpoint_url).client("ec2")
                ec2.create_tags(Resources=[record.instance_id], Tags=[{"Key": "expiry", "Value": iso}])

            new = run(rh, record, float(hours), live, tag if record.instance_id else None)
        finally:
            rh.conn.close()
        store.save(record)
        print(f"extend {host}: expires at {record.expires_at} ({new:%Y-%m-%d %H:%M} UTC)")
    except (StateError, HostKeyMismatch, RemoteError, ConfigureError, AwsError, ValueError) as exc:
        _fail(exc)
    except Exception as exc:  # botocore errors: one line naming the step, never a traceback
        if type(exc).__module__.startswith("botocore"):
            _fail(AwsError(f"extend {host}: updating the expiry tag failed: {exc}"))
        raise


@task(
    help={
        "host": "host name from provision",
        "wheel": "install this wheel instead of building one from the checkout",
        "lock": "the hashed lock of the fleet's dependencies (default locks/fleet.txt)",
        "mode": "auto | live | plan (units rendered, daemon-reload planned)",
        "session": "session id written to /etc/caerus/fleet.env for the units (letters, digits, '.', '_', '-')",
        "host_key": "first contact: verified (key must match the instance's console fingerprints; default for an "
                    "EC2 instance) | tofu (trust on first use when there is nothing to compare)",
        "state_dir": "local state folder (default ./.state)",
        "symbols": "instruments the units trade, comma-separated (default BTC); resolved against both venues' "
                   "listings at every fleet start by the caerus-instruments unit",
        "max_books_per_feed_process": "books/s one feed process carries (default: caerus.plan's measured 10000); a "
                                      "venue whose estimate (instruments x its rate) is above it gets one feed unit "
                                      "per share",
    }
)
def deploy(c: Context, host: str = "tokyo", wheel: str = "", lock: str = "",
           mode: str = "auto", session: str = "live", host_key: str = "", state_dir: str = "",
           symbols: str = "BTC", max_books_per_feed_process: float = 0.0) -> None:
    """Build + upload the wheel and the lock's wheelhouse, install both into the host venv with no index and every
    hash checked, verify the venv against the lock, install pinned systemd units for every fleet process (trading
    --symbols, resolved against the venues' listings at every fleet start)."""
    from infra.deploy import DeployError, DeployOptions
    from infra.deploy import deploy as run
    from infra.hosts import HostStore, StateError
    from infra.remote import HostKeyMismatch, RemoteError
    from infra.safenames import UnsafeValue, session_name

    try:  # before anything is built, read or sent: the session goes into every unit's environment file
        session_name(session, "--session")
    except UnsafeValue as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    store = HostStore(state_dir or None)
    if lock and not Path(lock).is_file():
        print(f"error: --lock {lock}: no such file", file=sys.stderr)
        sys.exit(2)
    if max_books_per_feed_process < 0:
        print(f"error: --max-books-per-feed-process {max_books_per_feed_process:g}: must be > 0 books/s",
              file=sys.stderr)
        sys.exit(2)
    opts = DeployOptions(wheel=Path(wheel) if wheel else None, mode=mode, session=session, host_key=host_key,
                         symbols=symbols,
                         **({"lock": Path(lock)} if lock else {}),
                         **({"max_books_per_feed_process": max_books_per_feed_process}
                            if max_books_per_feed_process else {}))
    try:
        run(store.load(host), store, opts)
    except (DeployError, StateError, HostKeyMismatch, RemoteError, ValueError) as exc:
        _fail(exc)


@task(
    iterable=["session"],
    help={
        "host": "host name from provision",
        "session": "session folder name(s) on the host (default: all)",
        "out": "local sessions folder (default ./sessions)",
        "host_key": "first contact: verified (key must match the instance's console fingerprints; default for an "
                    "EC2 instance) | tofu (trust on first use when there is nothing to compare)",
        "state_dir": "local state folder (default ./.state)",
    },
)
def collect(c: Context, host: str = "tokyo", session: list[str] | None = None, out: str = "sessions",
            host_key: str = "", state_dir: str = "") -> None:
    """Pull session folders from the host into the local sessions folder (skips files already there)."""
    from infra.collect import collect as run
    from infra.hosts import HostStore, StateError
    from infra.remote import HostKeyMismatch, RemoteError

    store = HostStore(state_dir or None)
    try:
        run(store.load(host), store, Path(out), session or None, host_key=host_key)
    except (StateError, HostKeyMismatch, RemoteError, FileNotFoundError, ValueError) as exc:
        _fail(exc)


@task(
    help={
        "name": "host/session whose resources to delete (default tokyo)",
        "all": "delete every one of your project-tagged resources in the region, not just one session's",
        "region": "AWS region (default: the host's, else ap-northeast-1)",
        "endpoint_url": "AWS endpoint override (tests: moto); also $CAERUS_AWS_ENDPOINT",
        "state_dir": "local state folder (default ./.state)",
        "owner": "owner tag whose resources are deleted (default: your login name, as provision tags them)",
        "owner_arn": "owner-arn tag whose resources are deleted (default: your AWS identity, sts get-caller-identity)",
    }
)
def teardown(c: Context, name: str = "tokyo", all: bool = False, region: str = "", endpoint_url: str = "",
             state_dir: str = "", owner: str = "", owner_arn: str = "") -> None:
    """Terminate the instance and delete what provision made (tagged project=caerus, owner=your login and
    owner-arn=your AWS identity, in one region); verify nothing is left; forget locally only the hosts of that
    region that are verified gone."""
    import getpass

    from infra.aws.clients import API_ERRORS, AwsError, AwsTarget
    from infra.aws.identity import caller_identity
    from infra.aws.teardown import teardown as run
    from infra.hosts import HostStore
    from infra.remote import forget_host

    store = HostStore(state_dir or None)
    record = store.load(name) if (not all and name in store.names()) else None
    target = AwsTarget.resolve(region or (record.region if record else ""),
                               endpoint_url or (record.endpoint_url if record else ""))
    who = owner or getpass.getuser()  # the owner tag provision wrote (its default is the same login name)
    try:
        arn = owner_arn or caller_identity(target.client("sts")).arn  # and the AWS identity it tagged
        run(target.client("ec2"), None if all else name, owner=who, owner_arn=arn)
    except (AwsError, *API_ERRORS) as exc:
        _fail(exc)
    # Verified gone: this owner's project resources of these names in this region. Records of other regions (or a
    # host this teardown did not look for) keep their state and keys.
    for n in store.names() if all else [name]:
        if n not in store.names():
            continue
        r = store.load(n)
        if r.region and r.region != target.region:
            print(f"kept local state for {n} (region {r.region}, not {target.region})")
            continue
        forget_host(store.known_hosts, r.host, r.port)
        store.delete(n)
        print(f"removed local state for {n}")


@task(help={"endpoint_url": "AWS endpoint override", "offline": "do not ask AWS, local state only",
            "state_dir": "local state folder (default ./.state)"})
def status(c: Context, endpoint_url: str = "", offline: bool = False, state_dir: str = "") -> None:
    """List hosts in the state folder: EC2 state, age, hourly price and cost so far."""
    from infra.hosts import HostStore
    from infra.status import host_statuses

    rows = host_statuses(HostStore(state_dir or None), endpoint_url, offline)
    if not rows:
        print("no hosts in the state folder")
    for row in rows:
        print(row.line())
    if rows:
        print(f"total ~${sum(r.cost_usd for r in rows):.2f} so far, ~${sum(r.hourly_usd for r in rows):.3f}/h")
