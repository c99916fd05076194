"""The fleet plan: which CPU each fleet process runs on and which wait policy it uses.

One plan serves the local session (``invoke bench``) and the tuned host (``invoke configure`` derives
isolcpus/nohz_full/irqaffinity from it, ``invoke deploy`` derives systemd CPUAffinity from it), so the cores a
host was tuned for are the cores the fleet is pinned to. Measured on 2 cores (see DESIGN.md): spinners sharing a
core cost milliseconds, so a process spins only when it has a core to itself; otherwise it uses the hybrid policy.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from caerus.ipc.wait import POLICIES, WaitPolicy

FEEDS = ("feed-binance", "feed-hyperliquid")
HOT_PROCESSES = (*FEEDS, "strategy", "execution")
COLD_PROCESSES = ("capture", "venue-sim", "session")
WAIT_POLICIES = POLICIES  # the names of caerus.ipc.wait.WaitPolicy (kept for the session CLI's choices)


#: the WebSocket clients a feed can read with (caerus.net.ws.WsSession, caerus.net.busy.BusyWsSession)
FEED_CLIENTS = ("asyncio", "busy")


@dataclass(frozen=True)
class Placement:
    """Where one process runs: its CPU set and the wait policy it idles with."""

    process: str
    cpus: tuple[int, ...]
    wait_policy: str
    dedicated: bool  # the process has its CPU to itself

    @property
    def feed_client(self) -> str:
        """The WebSocket client a feed placed here reads with: the busy one (caerus.net.busy: our own read path,
        kernel receive stamps) when it has a core to itself, websockets' asyncio client when it shares one."""
        return "busy" if self.dedicated else "asyncio"


@dataclass(frozen=True)
class FleetPlan:
    housekeeping: tuple[int, ...]
    hot: tuple[int, ...]
    placements: dict[str, Placement] = field(default_factory=dict)
    isolated: bool = False  # the hot CPUs are isolated by the kernel (isolcpus/nohz_full)
    notes: tuple[str, ...] = ()

    def placement(self, process: str) -> Placement:
        try:
            return self.placements[process]
        except KeyError:
            raise KeyError(f"no placement for process {process!r}; plan has {sorted(self.placements)}") from None

    @classmethod
    def from_dict(cls, data: dict) -> FleetPlan:
        """Inverse of to_dict (plans recorded by `invoke configure` are read back by deploy and bench)."""
        return cls(
            housekeeping=tuple(data["housekeeping"]),
            hot=tuple(data["hot"]),
            placements={
                name: Placement(name, tuple(p["cpus"]), p["wait_policy"], bool(p["dedicated"]))
                for name, p in data["placements"].items()
            },
            isolated=bool(data.get("isolated", False)),
            notes=tuple(data.get("notes", ())),
        )

    def to_dict(self) -> dict:
        return {
            "housekeeping": list(self.housekeeping),
            "hot": list(self.hot),
            "isolated": self.isolated,
            "notes": list(self.notes),
            "placements": {
                name: {"cpus": list(p.cpus), "wait_policy": p.wait_policy, "dedicated": p.dedicated}
                for name, p in self.placements.items()
            },
        }


def available_cpus() -> tuple[int, ...]:
    return tuple(sorted(os.sched_getaffinity(0)))


def isolated_cpus(path: str = "/sys/devices/system/cpu/isolated") -> tuple[int, ...]:
    try:
        with open(path) as f:
            return parse_cpu_list(f.read())
    except OSError:
        return ()


def cpu_siblings(cpus: Sequence[int], root: str = "/sys/devices/system/cpu") -> dict[int, tuple[int, ...]]:
    """Each CPU's SMT thread siblings (itself included), from sysfs; CPUs without topology info map to themselves."""
    out: dict[int, tuple[int, ...]] = {}
    for cpu in cpus:
        try:
            with open(f"{root}/cpu{cpu}/topology/thread_siblings_list") as f:
                out[cpu] = parse_cpu_list(f.read())
        except OSError:
            out[cpu] = (cpu,)
    return out


def one_thread_per_core(cpus: Sequence[int], siblings: Mapping[int, Sequence[int]]) -> tuple[int, ...]:
    """The lowest-numbered CPU of each physical core among ``cpus``: a spinner on one hyperthread slows its
    sibling, so hot processes never get two threads of one core."""
    chosen: list[int] = []
    taken: set[int] = set()
    for cpu in sorted(cpus):
        if cpu in taken:
            continue
        chosen.append(cpu)
        taken.update(siblings.get(cpu, (cpu,)))
    return tuple(chosen)


def parse_cpu_list(text: str) -> tuple[int, ...]:
    """Parse the kernel's CPU list syntax ("0-2,5,7-8")."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            cpus.extend(range(int(lo), int(hi) + 1))
        else:
            cpus.append(int(part))
    return tuple(sorted(set(cpus)))


def format_cpu_list(cpus: Sequence[int]) -> str:
    """Inverse of parse_cpu_list, compressing runs ("0-2,5")."""
    out: list[str] = []
    run: list[int] = []
    for cpu in sorted(set(cpus)):
        if run and cpu == run[-1] + 1:
            run.append(cpu)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [cpu]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


def plan_fleet(
    cpus: Sequence[int] | None = None,
    isolated: Sequence[int] | None = None,
    wait_policy: str | None = None,
    siblings: Mapping[int, Sequence[int]] | None = None,
) -> FleetPlan:
    """Assign every fleet process a CPU set and a wait policy.

    ``cpus``: the CPUs the fleet may use (default: this process's affinity). ``isolated``: the subset the kernel
    isolated (default: read from sysfs); when given, hot processes go there and everything else stays off it.
    ``wait_policy`` forces one policy on every hot process (still recorded per process). ``siblings`` maps each
    CPU to its SMT thread siblings (default: read from sysfs when ``cpus`` is not given); hot processes get one
    thread per physical core and the spare siblings stay idle.
    """
    if wait_policy is not None:
        WaitPolicy.parse(wait_policy)  # ValueError naming the allowed policies
    cpus_given = cpus
    cpus = tuple(sorted(set(available_cpus() if cpus is None else cpus)))
    if not cpus:
        raise ValueError("plan_fleet needs at least one CPU")
    iso = tuple(c for c in (isolated_cpus() if isolated is None else isolated) if c in cpus)
    if siblings is None and cpus_given is None:
        siblings = cpu_siblings(cpus)
    notes: list[str] = []
    if iso and len(iso) < len(cpus):
        housekeeping = tuple(c for c in cpus if c not in iso)
        hot = iso
    else:
        housekeeping, hot = cpus[:1], cpus[1:] or cpus[:1]
        notes.append("not isolated: no kernel-isolated CPUs, hot processes share the scheduler with everything")
    cores = hot  # CPUs hot processes are placed on; `hot` stays the whole isolated set
    if siblings and len(hot) > 1:
        hk_threads = {s for c in housekeeping for s in siblings.get(c, (c,))}
        cores = tuple(c for c in one_thread_per_core(hot, siblings) if c not in hk_threads) or hot[:1]
        if len(cores) < len(hot):
            spare = tuple(c for c in hot if c not in cores)
            notes.append(f"one thread per physical core: SMT siblings {format_cpu_list(spare)} stay idle")
    placements: dict[str, Placement] = {}

    def put(process: str, cpu_set: tuple[int, ...], dedicated: bool, policy: str | None = None) -> None:
        # Default per placement: a process with a core to itself spins; one sharing a core yields (hybrid).
        policy = wait_policy or policy or (WaitPolicy.SPIN if dedicated else WaitPolicy.HYBRID).value
        placements[process] = Placement(process, cpu_set, policy, dedicated)

    if len(cores) >= 4:
        for process, cpu in zip(HOT_PROCESSES, cores, strict=False):
            put(process, (cpu,), True)
    elif len(cores) == 3:
        # The critical path is Binance feed -> strategy -> execution: each gets a core. Hyperliquid's book moves
        # once per ~70 ms block and is ~285 ms old on arrival, so its feed waits on the housekeeping CPU.
        put("feed-binance", (cores[0],), True)
        put("strategy", (cores[1],), True)
        put("execution", (cores[2],), True)
        put("feed-hyperliquid", housekeeping, False, WaitPolicy.SLEEP.value)  # never busy-poll the housekeeping CPU
        notes.append("3 hot CPUs: Binance feed, strategy and execution each own one; Hyperliquid feed on housekeeping")
    elif len(cores) == 2:
        put("feed-binance", (cores[0],), True)
        put("strategy", (cores[1],), False)
        put("execution", (cores[1],), False)
        put("feed-hyperliquid", housekeeping, False, WaitPolicy.SLEEP.value)
        notes.append("2 hot CPUs: Binance feed owns one, strategy+execution share the other (hybrid wait policy); "
                     "Hyperliquid feed on housekeeping")
    else:
        # Small machine (this 2-core VM): measured best layout is feed(s) with the housekeeping work on one core
        # and strategy + execution yielding on the other.
        put("feed-binance", housekeeping, False)
        put("feed-hyperliquid", housekeeping, False)
        put("strategy", cores, False)
        put("execution", cores, False)
        notes.append(
            f"only {len(cpus)} CPU(s): feeds share the housekeeping CPU, strategy+execution share CPU "
            f"{format_cpu_list(cores)}; hybrid wait policy, numbers are not comparable to an isolated host"
        )
    for process in COLD_PROCESSES:
        placements[process] = Placement(process, housekeeping, WaitPolicy.SLEEP.value, False)
    return FleetPlan(
        housekeeping=housekeeping,
        hot=hot,
        placements=placements,
        isolated=bool(iso) and len(iso) < len(cpus),
        notes=tuple(notes),
    )


def pin_current_process(cpus: Sequence[int]) -> None:
    """Pin this process to ``cpus`` (no-op for an empty set)."""
    if cpus:
        os.sched_setaffinity(0, set(cpus))
