"""Facts about a host, gathered in one SSH round trip: the inputs every configure step plans from.

The probe is a POSIX shell script printing ``key=value`` lines; :func:`parse_facts` turns them into
:class:`HostFacts`. Keeping the parser pure lets unit tests feed it an EC2 host's output (PHC present, ENA NIC)
that this machine cannot produce.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from caerus.plan import parse_cpu_list

PROBE = r"""
kv() { printf '%s=%s\n' "$1" "$2"; }
rd() { [ -r "$1" ] && tr '\n' ' ' < "$1" | sed 's/ *$//'; }
kv uid "$(id -u)"
. /etc/os-release 2>/dev/null; kv os_id "${ID:-unknown}"; kv os_version "${VERSION_ID:-}"
kv kernel "$(uname -r)"
kv machine "$(uname -m)"
kv glibc "$(getconf GNU_LIBC_VERSION 2>/dev/null | sed 's/^glibc //')"
kv cpus_online "$(rd /sys/devices/system/cpu/online)"
kv cpu0_siblings "$(rd /sys/devices/system/cpu/cpu0/topology/thread_siblings_list)"
kv isolated "$(rd /sys/devices/system/cpu/isolated)"
sib=""
for c in /sys/devices/system/cpu/cpu[0-9]*; do
  [ -r "$c/topology/thread_siblings_list" ] && sib="$sib${c##*cpu}:$(cat "$c/topology/thread_siblings_list");"
done
kv siblings "$sib"
kv nohz_full "$(rd /sys/devices/system/cpu/nohz_full)"
kv cmdline "$(rd /proc/cmdline)"
[ -e /dev/ptp0 ] && kv ptp0 yes || kv ptp0 no
kv ptp0_name "$(rd /sys/class/ptp/ptp0/clock_name)"
[ -d /run/systemd/system ] && kv systemd yes || kv systemd no
kv sys_vendor "$(rd /sys/devices/virtual/dmi/id/sys_vendor)"
kv asset_tag "$(rd /sys/devices/virtual/dmi/id/board_asset_tag)"
kv thp "$(rd /sys/kernel/mm/transparent_hugepage/enabled)"
kv governor "$(rd /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor)"
kv cpuidle_driver "$(rd /sys/devices/system/cpu/cpuidle/current_driver)"
names=""
for s in /sys/devices/system/cpu/cpu0/cpuidle/state*; do
  [ -r "$s/name" ] && names="$names$(cat "$s/name"):$(cat "$s/disable" 2>/dev/null),"
done
kv cstates "$names"
for n in /sys/class/net/*; do d=$(basename "$n"); [ "$d" = lo ] && continue
  drv=$(basename "$(readlink "$n/device/driver" 2>/dev/null)" 2>/dev/null); kv "nic.$d" "${drv:-virtual}"
  if [ "$drv" = ena ] && command -v ethtool >/dev/null; then
    kv "coalesce.$d" "$(ethtool -c "$d" 2>/dev/null | grep -E '^(Adaptive RX|rx-usecs|tx-usecs):' | tr '\n' ';')"
  fi
done
case "${ID:-}" in debian|ubuntu) kv chrony_conf /etc/chrony/chrony.conf;; *) kv chrony_conf /etc/chrony.conf;; esac
SUDO=""; [ "$(id -u)" != 0 ] && command -v sudo >/dev/null && SUDO="sudo -n"
command -v chronyd >/dev/null || [ -x /usr/sbin/chronyd ] && kv chrony yes || kv chrony no
if command -v grubby >/dev/null; then
  kv bootloader grubby
  kv grubby_args "$($SUDO grubby --info=DEFAULT 2>/dev/null | sed -n 's/^args=//p' | tr -d '"')"
elif [ -d /etc/default/grub.d ] || command -v update-grub >/dev/null; then kv bootloader grub.d
else kv bootloader none; fi
[ -d /etc/sysconfig ] && kv irqbalance_conf /etc/sysconfig/irqbalance || kv irqbalance_conf /etc/default/irqbalance
command -v irqbalance >/dev/null || [ -x /usr/sbin/irqbalance ] && kv irqbalance yes || kv irqbalance no
[ -d /run/systemd/system ] && kv irqbalance_active "$(systemctl is-active irqbalance 2>/dev/null)"
# the first interpreter new enough for caerus (>= 3.11) that can create a venv (ensurepip present)
py=""
for p in python3 python3.13 python3.12 python3.11; do
  c=$(command -v "$p") || continue
  if "$c" -c 'import sys, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then py=$c; break; fi
done
kv python3 "$py"
[ -n "$py" ] && kv python3_version "$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
kv python3_system "$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)"
"""


@dataclass
class HostFacts:
    uid: int = 0
    os_id: str = "unknown"
    os_version: str = ""
    kernel: str = ""
    machine: str = ""  # uname -m: x86_64 on a c7i, aarch64 on Graviton (the wheelhouse's platform)
    glibc: str = ""  # e.g. "2.34" on AL2023: the newest manylinux tag the host's wheels may carry
    cpus: tuple[int, ...] = ()
    cpu0_siblings: tuple[int, ...] = ()
    isolated: tuple[int, ...] = ()
    siblings: dict[int, tuple[int, ...]] = field(default_factory=dict)  # cpu -> its SMT thread siblings
    nohz_full: tuple[int, ...] = ()
    cmdline: str = ""
    ptp0: bool = False
    ptp0_name: str = ""
    systemd: bool = False
    ec2: bool = False
    thp: str = ""  # the selected mode, e.g. "never"
    governor: str = ""
    cpuidle_driver: str = ""
    cstates: dict[str, bool] = field(default_factory=dict)  # state name -> disabled
    nics: dict[str, str] = field(default_factory=dict)  # interface -> driver
    coalesce: dict[str, dict[str, str]] = field(default_factory=dict)  # ENA interface -> settings
    chrony: bool = False
    chrony_conf: str = "/etc/chrony/chrony.conf"
    bootloader: str = "none"  # grubby | grub.d | none
    grubby_args: str = ""
    irqbalance: bool = False
    irqbalance_conf: str = "/etc/default/irqbalance"
    irqbalance_active: str = ""
    python3: str = ""  # an interpreter >= 3.11 with ensurepip ("" = none on the host)
    python3_version: str = ""
    python3_system: str = ""  # version of plain `python3` (AL2023 ships 3.9)

    @property
    def chrony_service(self) -> str:
        return "chrony" if self.os_id in ("debian", "ubuntu") else "chronyd"

    @property
    def ena_nics(self) -> list[str]:
        return sorted(n for n, d in self.nics.items() if d == "ena")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _selected(text: str) -> str:
    """The bracketed choice of a sysfs selector ("always madvise [never]" -> "never")."""
    if "[" in text and "]" in text:
        return text[text.index("[") + 1 : text.index("]")]
    return text.strip()


def _coalesce(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in text.split(";"):
        if ":" not in part:
            continue
        k, v = part.split(":", 1)
        v = v.strip()
        if k.strip() == "Adaptive RX":
            v = v.split()[0] if v else v
            out["adaptive-rx"] = v
        else:
            out[k.strip()] = v
    return out


def parse_facts(text: str) -> HostFacts:
    raw: dict[str, str] = {}
    for line in text.splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            raw[k.strip()] = v.strip()
    f = HostFacts()
    f.uid = int(raw.get("uid", "0") or 0)
    f.os_id = raw.get("os_id", "unknown")
    f.os_version = raw.get("os_version", "")
    f.kernel = raw.get("kernel", "")
    f.machine = raw.get("machine", "")
    f.glibc = raw.get("glibc", "")
    f.cpus = parse_cpu_list(raw.get("cpus_online", ""))
    f.cpu0_siblings = parse_cpu_list(raw.get("cpu0_siblings", ""))
    f.isolated = parse_cpu_list(raw.get("isolated", ""))
    for item in raw.get("siblings", "").split(";"):
        if ":" in item:
            cpu, sibs = item.split(":", 1)
            f.siblings[int(cpu)] = parse_cpu_list(sibs)
    f.nohz_full = parse_cpu_list(raw.get("nohz_full", "").replace("(null)", ""))
    f.cmdline = raw.get("cmdline", "")
    f.ptp0 = raw.get("ptp0") == "yes"
    f.ptp0_name = raw.get("ptp0_name", "")
    f.systemd = raw.get("systemd") == "yes"
    f.ec2 = raw.get("sys_vendor", "") == "Amazon EC2" or raw.get("asset_tag", "").startswith("i-")
    f.thp = _selected(raw.get("thp", ""))
    f.governor = raw.get("governor", "")
    f.cpuidle_driver = raw.get("cpuidle_driver", "")
    for item in raw.get("cstates", "").split(","):
        if ":" in item:
            name, disabled = item.split(":", 1)
            f.cstates[name] = disabled.strip() == "1"
    f.nics = {k[4:]: v for k, v in raw.items() if k.startswith("nic.")}
    f.coalesce = {k[9:]: _coalesce(v) for k, v in raw.items() if k.startswith("coalesce.")}
    f.chrony = raw.get("chrony") == "yes"
    f.chrony_conf = raw.get("chrony_conf", f.chrony_conf)
    f.bootloader = raw.get("bootloader", "none")
    f.grubby_args = raw.get("grubby_args", "")
    f.irqbalance = raw.get("irqbalance") == "yes"
    f.irqbalance_conf = raw.get("irqbalance_conf", f.irqbalance_conf)
    f.irqbalance_active = raw.get("irqbalance_active", "")
    f.python3 = raw.get("python3", "")
    f.python3_version = raw.get("python3_version", "")
    f.python3_system = raw.get("python3_system", "")
    return f


def gather(host: Any) -> HostFacts:
    """Run the probe on a :class:`infra.remote.RemoteHost` and parse it."""
    result = host.run(PROBE, check=True)
    return parse_facts(result.stdout)
