"""A session against its own replay as observed (caerus.research.backtest.observed): order by order, with the one
unknown a session leaves -- when its strategy was held up and skipped books -- searched for within what the
session measured. The consistency check of the backtest against the fleet
(tests/integration/research/test_backtest_consistency.py) is built on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from caerus.research.backtest.latency import LatencyError
from caerus.research.backtest.runner import BacktestOptions, run_backtest
from caerus.research.backtest.sources import Loaded
from caerus.wire import OrderReason

#: what must be identical, order by order, between a session and its replay as observed
COMPARED = ("trigger_venue", "symbol", "trigger_seq", "reason", "side", "px", "qty", "outcome", "fill_px", "fill_qty")


@dataclass(frozen=True)
class Reconciled:
    """A replay as observed against its session: the result document (of the last replay), the stalls and the
    draw of other books' reads (None: the quickest hop) the session's timing had to explain, and the first
    divergence no such timing explains (None: every order identical)."""

    doc: dict[str, object]
    orders: list[dict[str, object]]
    stalls: list[tuple[int, int]]
    divergence: int | None
    jitter_seed: int | None = None
    relabelled: list[int] = field(default_factory=list)  # exits found identical but for their exit reason


#: exits: which threshold an exit crossed first changes nothing after it (the same IOC closes the same position)
EXITS = frozenset({int(OrderReason.EXIT_THRESHOLD), int(OrderReason.EXIT_REVERSAL), int(OrderReason.EXIT_MAX_HOLD)})


def relabelled(a: dict[str, object], b: dict[str, object]) -> bool:
    """The same exit order under another exit reason: the same triggering book, side, limit, quantity and fill."""
    return (a["reason"] != b["reason"] and a["reason"] in EXITS and b["reason"] in EXITS
            and all(a[k] == b[k] for k in COMPARED if k != "reason"))


def first_divergence(replay: list[dict[str, object]], live: list[dict[str, object]],
                     relabels: frozenset[int] = frozenset()) -> int | None:
    """Index of the first order that differs in any ``COMPARED`` field (or is missing on one side), or None;
    indices in ``relabels`` may differ in their exit reason only (:func:`relabelled`)."""
    for i, (a, b) in enumerate(zip(replay, live, strict=False)):
        if any(a[k] != b[k] for k in COMPARED) and not (i in relabels and relabelled(a, b)):
            return i
    return None if len(replay) == len(live) else min(len(replay), len(live))


def reconcile(loaded: Loaded, opts: BacktestOptions, live: list[dict[str, object]], end_ns: int,
              max_hop_ns: int, jitter_seeds: int = 8) -> Reconciled:
    """Replay ``loaded`` as observed (``opts.latency`` from :func:`model_from_session`) and compare its orders sent
    before ``end_ns`` with the session's ``live`` ones (dicts with ``COMPARED`` and t_seen, in sequence order).

    The one thing a session does not capture is when its strategy read the books that triggered nothing. Under CPU
    load the strategy is held up for milliseconds at a time, and a latest-value read then skips every book published
    meanwhile; which ones, the session cannot say. So at the first divergence (order i, live trigger T read at
    t_seen(T)) the shortest stall that explains it is searched for: the strategy held up from the publish time of a
    book published after the previous live order was read, for at most ``max_hop_ns`` (the longest book hop the
    session measured: it was held up that long at least once), until it read T, or -- when the replay fired on an
    earlier book B -- until the next book of B's venue replaced B. Nor does it capture exactly when the other books
    were read, and the EWMA weighs each book by the time since the previous read: an entry or exit a hundredth of a
    bps from its threshold can depend on it. So the search also tries the other books' reads drawn from the
    session's own book hop histogram (``jitter_seeds`` draws, each with and without one more stall). The first
    timing that makes orders 0..i identical is kept and the comparison goes on. A divergence no such timing explains
    is returned: a consistency failure. One thing is let through and listed (``relabelled``): an exit identical in
    book, side, limit, quantity and fill whose reason differs (threshold vs reversal: the signal a hair from the
    reversal threshold, where those unrecorded read times decide which was crossed first); nothing after an exit
    depends on its reason."""
    obs = opts.latency.observed
    if obs is None:
        raise LatencyError("reconcile needs a replay as observed (observed.model_from_session)")
    pub_sorted = np.unique(loaded.events.t_publish)
    stalls: list[tuple[int, int]] = list(obs.stalls)
    relabels: set[int] = set()

    def replay(st: list[tuple[int, int]], k: int | None
               ) -> tuple[dict[str, object], list[dict[str, object]], int | None]:
        lat = replace(opts.latency, observed=replace(obs, stalls=tuple(st), jitter_seed=k))
        doc, _ = run_backtest(loaded, replace(opts, latency=lat))
        orders = [o for o in doc["orders"] if o["t_seen"] < end_ns]  # type: ignore[attr-defined]
        return doc, orders, first_divergence(orders, live, frozenset(relabels))

    doc, orders, i = replay(stalls, None)
    ev = loaded.events
    seed: int | None = None
    while i is not None and i < len(live):  # (an extra replay order at the end: no later read explains it)
        if i < len(orders) and relabelled(orders[i], live[i]):
            relabels.add(i)  # the state after it is the same: go on from the next order
            i = first_divergence(orders, live, frozenset(relabels))
            continue
        seen_t = int(live[i]["t_seen"])  # type: ignore[call-overload]
        lo = int(live[i - 1]["t_seen"]) + 1 if i else 0  # type: ignore[call-overload]
        ends = [seen_t]
        if i < len(orders):  # the replay fired on a book B: held up until the next book of B's venue replaced it
            b = orders[i]
            same = np.nonzero((ev.venue == b["trigger_venue"]) & (ev.symbol == b["symbol"])
                              & (ev.seq > int(b["trigger_seq"])))[0]  # type: ignore[call-overload]
            if len(same):
                ends.append(int(ev.t_publish[same].min()))
        cands = sorted({(e - t0, t0, e) for e in ends if e <= seen_t
                        for t0 in pub_sorted[(pub_sorted >= max(lo, e - max_hop_ns)) & (pub_sorted < e)].tolist()})
        found = None
        for k in (seed, *(s for s in range(1, jitter_seeds + 1) if s != seed)):
            # read times first (the same stalls, another draw), then one more stall, the shortest first
            for trial in ([*stalls], *([*stalls, (t0, e)] for _, t0, e in cands)):
                d2, o2, j = replay(trial, k)
                if j is None or j > i:
                    found = trial, k, d2, o2, j
                    break
            if found is not None:
                break
        if found is None:
            break
        stalls, seed, doc, orders, i = found
    return Reconciled(doc, orders, stalls, i, seed, sorted(relabels))
