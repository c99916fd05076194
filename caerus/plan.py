"""The fleet plan: which CPU each fleet process runs on, which wait policy it uses, and how many feed processes
carry each venue.

One plan serves the local session (``invoke bench``) and the tuned host (``invoke configure`` derives
isolcpus/nohz_full/irqaffinity from it, ``invoke deploy`` derives systemd CPUAffinity from it), so the cores a
host was tuned for are the cores the fleet is pinned to. Measured on 2 cores (see DESIGN.md): spinners sharing a
core cost milliseconds, so a process spins only when it has a core to itself; otherwise it uses the hybrid policy.

A venue whose estimated book rate is above what one feed process takes (:data:`MAX_FEED_BOOKS_PER_S`) is split
across feed processes (:func:`feed_shares`): each share is a contiguous run of instrument ids with its own process
(``feed-binance-1`` ... ``-K``), ring and placement. Unsplit, a venue's feed keeps its one name (``feed-binance``).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from caerus.ipc.wait import POLICIES, WaitPolicy

FEEDS = ("feed-binance", "feed-hyperliquid")
HOT_PROCESSES = (*FEEDS, "strategy", "execution")
COLD_PROCESSES = ("capture", "venue-sim", "session")
WAIT_POLICIES = POLICIES  # the names of caerus.ipc.wait.WaitPolicy (kept for the session CLI's choices)


#: Books per second one feed process is planned to carry: the highest Binance rate one feed process was measured to
#: carry cleanly in a whole-fleet session on the 2-vCPU VM (docs/instruments.md, "Feed processes per venue": 16
#: instruments at 1,000 Hz each, 10,135-11,636 books/s delivered, no ring loss, feed_internal p99 6-8 us, 18-26 us
#: of feed CPU per message). The emulator, not the feed, capped that rate, and the CPU per message puts one core's
#: saturation above 38,000 books/s, so the limit is what was shown to work, not an extrapolation. Above it the
#: plan splits the venue (benchmarks/feed_split: processes scale onto free cores, 1.93x with two; threads do not).
MAX_FEED_BOOKS_PER_S = 10000.0
#: Books per second per instrument when nothing better is known (live venues): a Binance bookTicker outside bursts
#: (the emulator's default market, caerus/sim/markets/default.toml) and one Hyperliquid bbo per ~70 ms block.
BOOK_RATE_HZ: dict[str, float] = {"binance": 75.0, "hyperliquid": 1000.0 / 70.0}
_SHARE_NAME = re.compile(r"^feed-([a-z0-9_]+?)(?:-(\d+))?$")


def feed_shares(instruments: int, rate_hz: float, max_books_per_s: float = MAX_FEED_BOOKS_PER_S
                ) -> tuple[tuple[int, int], ...]:
    """The plan's split of one venue: ``(first id, end id)`` of each share, contiguous, in id order, covering
    ``0 .. instruments - 1`` once; one share while ``instruments * rate_hz`` (the venue's estimated books/s) is at
    most ``max_books_per_s``, else K = ceil(rate / max) shares (at most one per instrument), sizes within one."""
    if instruments < 1:
        raise ValueError(f"feed_shares needs at least one instrument, got {instruments}")
    if not (rate_hz >= 0 and math.isfinite(rate_hz)):
        raise ValueError(f"feed_shares: book rate per instrument must be a finite number >= 0 Hz, got {rate_hz}")
    if not max_books_per_s > 0:
        raise ValueError(f"feed_shares: books per feed process must be > 0, got {max_books_per_s}")
    k = min(instruments, max(1, math.ceil(instruments * rate_hz / max_books_per_s)))
    size, extra = divmod(instruments, k)
    out: list[tuple[int, int]] = []
    start = 0
    for i in range(k):
        end = start + size + (1 if i < extra else 0)
        out.append((start, end))
        start = end
    return tuple(out)


def feed_process(venue: str, share: int = 1, shares: int = 1) -> str:
    """A feed process's name: ``feed-<venue>`` for an unsplit venue, ``feed-<venue>-<share>`` (1-based) in a split."""
    return f"feed-{venue}" if shares == 1 else f"feed-{venue}-{share}"


def feed_venue(process: str) -> str | None:
    """The venue a feed process reads (``feed-binance`` and ``feed-binance-2`` -> ``binance``); None for another
    process."""
    m = _SHARE_NAME.match(process)
    return m.group(1) if m else None


#: the WebSocket clients a feed can read with (caerus.net.ws.WsSession, caerus.net.busy.BusyWsSession)
FEED_CLIENTS = ("asyncio", "busy")
# How often a quiet busy-client feed reads its shadow connection (caerus.feed.warm), where it has one. 100 us is
# benchmarks.rx_idle's interval; benchmarks.wire_to_decision on 2 vCPUs, 4 alternating pairs: stack p50 13.6-16.6 us
# with it vs 17.6-30.8 us without, p90 27-32 vs 47-116 us.
FEED_WARM_EVERY_US = 100.0


#: where the local venue emulator runs (plan_fleet's ``emulator``): the plan's choice, the housekeeping CPU(s) or the
#: strategy's CPU(s)
EMULATOR_PLACES = ("auto", "housekeeping", "strategy")
#: where the execution engine runs when no CPU is left for it alone (plan_fleet's ``execution``): the same choices
EXECUTION_PLACES = EMULATOR_PLACES


def warm_path_applies(client: str, wait_policy: str) -> bool:
    """A feed's warm path needs the busy client (the shadow is a busy session) on a busy-polling loop (a sleeping
    loop would be woken for every rehearsal)."""
    return client == "busy" and wait_policy != WaitPolicy.SLEEP.value


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

    @property
    def feed_warm_every_us(self) -> float:
        """The warm-path interval a feed placed here runs with by default (0: none)."""
        return FEED_WARM_EVERY_US if warm_path_applies(self.feed_client, self.wait_policy) else 0.0


@dataclass(frozen=True)
class FleetPlan:
    housekeeping: tuple[int, ...]
    hot: tuple[int, ...]
    placements: dict[str, Placement] = field(default_factory=dict)
    isolated: bool = False  # the hot CPUs are isolated by the kernel (isolcpus/nohz_full)
    notes: tuple[str, ...] = ()
    # venue -> its shares' (first id, end id), for split venues only (an unsplit venue has one feed-<venue>)
    feed_split: dict[str, tuple[tuple[int, int], ...]] = field(default_factory=dict)

    def feeds(self, venue: str) -> tuple[str, ...]:
        """The feed processes of ``venue`` in share order (one, ``feed-<venue>``, unless the plan split it)."""
        shares = self.feed_split.get(venue, ((0, 0),))
        return tuple(feed_process(venue, i, len(shares)) for i in range(1, len(shares) + 1))

    @property
    def hot_processes(self) -> tuple[str, ...]:
        """HOT_PROCESSES with each split venue's feed replaced by its shares."""
        feeds = [f for venue in (feed_venue(p) for p in FEEDS) if venue is not None for f in self.feeds(venue)]
        return (*feeds, *HOT_PROCESSES[len(FEEDS):])

    @property
    def emulator_shares_hot_cpu(self) -> bool:
        """The local venue emulator runs on a CPU some hot process is placed on (on 1-2 CPUs the strategy's; with
        three hot cores the housekeeping CPU, where the Hyperliquid feed sleeps): the emulator then gives the CPU
        up after each top-of-book frame it sends (``venue-sim --yield-after-top``, caerus.sim.core.driver), so the
        process that reads the frame runs before the emulator's own bookkeeping, as it would with the venue on its
        own hardware."""
        sim = self.placements.get("venue-sim")
        if sim is None:
            return False
        hot = {c for name in self.hot_processes if name in self.placements for c in self.placements[name].cpus}
        return bool(hot.intersection(sim.cpus))

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
            feed_split={venue: tuple((int(a), int(b)) for a, b in shares)
                        for venue, shares in data.get("feed_split", {}).items()},
        )

    def to_dict(self) -> dict:
        out: dict = {
            "housekeeping": list(self.housekeeping),
            "hot": list(self.hot),
            "isolated": self.isolated,
            "notes": list(self.notes),
            "placements": {
                name: {"cpus": list(p.cpus), "wait_policy": p.wait_policy, "dedicated": p.dedicated}
                for name, p in self.placements.items()
            },
        }
        if self.feed_split:  # absent unless a venue is split: an unsplit plan's document (and hash) is unchanged
            out["feed_split"] = {venue: [list(s) for s in shares] for venue, shares in self.feed_split.items()}
        return out


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
    instruments: int = 1,
    book_rate_hz: Mapping[str, float] | None = None,
    max_feed_books_per_s: float = MAX_FEED_BOOKS_PER_S,
    emulator: str = "auto",
    execution: str = "auto",
) -> FleetPlan:
    """Assign every fleet process a CPU set and a wait policy.

    ``cpus``: the CPUs the fleet may use (default: this process's affinity). ``isolated``: the subset the kernel
    isolated (default: read from sysfs); when given, hot processes go there and everything else stays off it.
    ``wait_policy`` forces one policy on every hot process (still recorded per process). ``siblings`` maps each
    CPU to its SMT thread siblings (default: read from sysfs when ``cpus`` is not given); hot processes get one
    thread per physical core and the spare siblings stay idle.

    ``instruments`` (how many the session trades) and ``book_rate_hz`` (venue -> estimated books/s per instrument;
    a venue not in it is never split) decide the feed split (:func:`feed_shares` against ``max_feed_books_per_s``).
    A split venue's first share takes the place its one feed would have had; every further share gets a hot core
    nobody else uses when there is one, else shares the first one's CPUs (then none of them spins).

    ``emulator`` (:data:`EMULATOR_PLACES`) places the local venue emulator: ``auto`` the plan's choice (below),
    ``housekeeping`` the housekeeping CPU(s), ``strategy`` the strategy's CPU(s) (to compare placements by numbers).
    ``execution`` (:data:`EXECUTION_PLACES`) likewise places the execution engine where it has no CPU of its own
    (fewer than three hot CPUs); with one, it keeps it.
    """
    if wait_policy is not None:
        WaitPolicy.parse(wait_policy)  # ValueError naming the allowed policies
    if emulator not in EMULATOR_PLACES:
        raise ValueError(f"emulator placement {emulator!r} is not one of {', '.join(EMULATOR_PLACES)}")
    if execution not in EXECUTION_PLACES:
        raise ValueError(f"execution placement {execution!r} is not one of {', '.join(EXECUTION_PLACES)}")
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
    emulator_cpus = housekeeping  # the local venue emulator: off every hot core it can be

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
        if execution == "housekeeping":
            put("execution", housekeeping, False, WaitPolicy.SLEEP.value)  # never busy-poll the housekeeping CPU
            other = ("the strategy the other, the execution sleeps on housekeeping CPU "
                     f"{format_cpu_list(housekeeping)} (execution placement housekeeping)")
        else:
            put("execution", (cores[1],), False)
            other = "strategy+execution share the other (hybrid wait policy)"
        put("feed-hyperliquid", housekeeping, False, WaitPolicy.SLEEP.value)
        notes.append(f"2 hot CPUs: Binance feed owns one, {other}; Hyperliquid feed on housekeeping")
    else:
        # Small machine (this 2-core VM): measured best layout is feed(s) with the housekeeping work on one core
        # and strategy + execution yielding on the other. The Hyperliquid feed sleeps (a book per ~70 ms block) and
        # the venue emulator runs on the strategy's CPU, off the Binance feed's: a yielding Hyperliquid feed and the
        # emulator on the feeds' CPU kept the Binance feed from its socket (benchmarks/wire_to_decision --quick,
        # 2 rounds, quiet 2-vCPU VM: kernel stamp -> our code p50 258 -> 38 us, wire to decision 342 -> 149 us;
        # the strategy's tick-to-decision, which starts after that, 26 -> 95 us, as it now shares its CPU).
        # The execution sleeps between orders rather than yield: two yielding pollers on one CPU hand it to each
        # other a scheduler slice at a time, while a sleeper woken by its timer gets it at once. Same benchmark,
        # 3 runs each, alternating: decision_to_wire p50 1.33-1.66 ms -> 0.49-0.58 ms, wire_to_decision
        # 183-214 -> 143-166 us, tick_to_decision (busy client) 106-137 -> 79-84 us. The emulator, sharing the
        # strategy's CPU, yields it after each top-of-book frame it sends (emulator_shares_hot_cpu): tick_to_decision
        # 44-61 -> 7.8-9.4 us, wire_to_decision 73-103 -> 27-34 us p50. The sleeping execution's thread has a 1 ns
        # timer slack (caerus.ipc.wait): wire_to_wire 271-280 -> 191-212 us p50.
        # The execution stays on the strategy's CPU (`--execution-cpu housekeeping` moves it, to compare): there
        # its ~14,000 sleep wakes a second switch the strategy's CPU to another process, and a fire's decision
        # runs cold after each (its thread's CPU time 40-90 us on this VM against ~1 us in a loop); on the feeds'
        # CPU tick-to-eval p50 fell 16.3-16.8 -> 13.4-14.2 us and tick-to-decision 135-146 -> 72-84 us (README
        # command 1, quiet, 3 rounds alternating), but the order's pickup waited behind the feeds: queue transit
        # p90 110-212 us -> 2.4-2.6 ms. The order path decides.
        put("feed-binance", housekeeping, False)
        put("feed-hyperliquid", housekeeping, False, WaitPolicy.SLEEP.value)
        put("strategy", cores, False)
        exec_cpus = housekeeping if execution == "housekeeping" else cores
        put("execution", exec_cpus, False, WaitPolicy.SLEEP.value)
        if not iso:  # an isolated CPU takes hot processes only
            emulator_cpus = cores
        shared = (
            "feeds and the execution share the housekeeping CPU (Hyperliquid's feed and the execution sleeping; "
            f"execution placement housekeeping), the strategy and the venue emulator share CPU {format_cpu_list(cores)}"
            "; hybrid wait policy" if execution == "housekeeping" else
            "feeds share the housekeeping CPU (Hyperliquid's sleeping), strategy+execution and the venue emulator "
            f"share CPU {format_cpu_list(cores)}; hybrid wait policy, the execution sleeps"
        )
        notes.append(f"only {len(cpus)} CPU(s): {shared}; numbers are not comparable to an isolated host")
    split: dict[str, tuple[tuple[int, int], ...]] = {}
    for venue, rate in sorted((book_rate_hz or {}).items()):
        shares = feed_shares(instruments, rate, max_feed_books_per_s)
        if len(shares) > 1 and feed_process(venue) in placements:
            split[venue] = shares
            _place_shares(placements, venue, len(shares), cores, wait_policy, put)
            notes.append(f"{venue} split across {len(shares)} feed processes: {instruments} instruments x "
                         f"{rate:g} books/s estimated > {max_feed_books_per_s:g} books/s per feed process")
    if execution != "auto" and placements["execution"].dedicated:
        notes.append(f"execution placement {execution} not applied: the execution has a CPU of its own")
    for process in COLD_PROCESSES:
        placements[process] = Placement(process, housekeeping, WaitPolicy.SLEEP.value, False)
    planned = emulator_cpus
    if emulator == "housekeeping":
        emulator_cpus = housekeeping
    elif emulator == "strategy":
        emulator_cpus = placements["strategy"].cpus
    if tuple(emulator_cpus) != tuple(planned):  # the notes above name the plan's place: say where it really runs
        notes.append(f"venue emulator on CPU {format_cpu_list(emulator_cpus)} (emulator placement {emulator}), "
                     f"not the plan's CPU {format_cpu_list(planned)}")
    placements["venue-sim"] = Placement("venue-sim", emulator_cpus, WaitPolicy.SLEEP.value, False)
    return FleetPlan(
        housekeeping=housekeeping,
        hot=hot,
        placements=placements,
        isolated=bool(iso) and len(iso) < len(cpus),
        notes=tuple(notes),
        feed_split=split,
    )


def _place_shares(placements: dict[str, Placement], venue: str, k: int, cores: tuple[int, ...],
                  wait_policy: str | None, put: Callable[..., None]) -> None:
    """Replace ``feed-<venue>`` by its ``k`` shares (see plan_fleet)."""
    base = placements.pop(feed_process(venue))
    used = {c for p in placements.values() for c in p.cpus}
    spare = [c for c in cores if c not in used and c not in base.cpus]
    own = [(spare.pop(0),) if spare else None for _ in range(k - 1)]
    crowded = any(cpus is None for cpus in own)  # some share shares the first one's CPUs
    sleep = base.wait_policy == WaitPolicy.SLEEP.value and not base.dedicated  # on the housekeeping CPU: never poll
    first_policy = WaitPolicy.SLEEP.value if sleep else None
    put(feed_process(venue, 1, k), base.cpus, base.dedicated and not crowded, first_policy)
    for i, cpus in enumerate(own, 2):
        put(feed_process(venue, i, k), cpus or base.cpus, cpus is not None, None if cpus else first_policy)


def pin_current_process(cpus: Sequence[int]) -> None:
    """Pin this process to ``cpus`` (no-op for an empty set)."""
    if cpus:
        os.sched_setaffinity(0, set(cpus))
