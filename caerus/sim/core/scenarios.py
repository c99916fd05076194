"""Named fault scenarios: small declarative objects the emulator's servers consult.

A scenario says *what* goes wrong, *on which venues*, *when* and *how often*; the servers decide how to do it.
Faults that happen on a connection (drop, stall, slow-drip, malformed-json, oversized-frame, error-frames,
hostile-frames, wrong-route) hit the first ``times`` data connections per venue, ``after_s`` seconds after the
connection's first subscription; later connections are healthy, so a supervised feed can be seen to recover by
reconnecting.
Handshake faults (http-429, http-503, tls-failure) hit the first ``times`` handshakes per venue. ``refused``
keeps the ports bound but not listening for ``duration_s`` from start-up. ``early-close`` compresses Binance's
24 h connection limit to ``after_s`` seconds for every connection (``times`` = 0 means all).
``lost-reply`` hits order entry instead: the first ``times`` orders per venue are executed and never answered.
Binance order entry (``/ws-fapi/v1``) is exempt from connection and HTTP faults; a Hyperliquid connection is
armed by its first subscription, so a post-only connection escapes connection faults.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

VENUES = ("binance", "hyperliquid")


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    venues: tuple[str, ...] = VENUES
    after_s: float = 1.5  # delay from a connection's first subscription to the fault
    duration_s: float = 3.0  # how long a timed fault lasts (stall, slow-drip, refused)
    times: int = 1  # connections / handshakes hit per venue; 0 = every one
    count: int = 3  # frames injected (malformed-json, error-frames)
    size_bytes: int = 2 * 1024 * 1024  # oversized-frame payload (websockets clients default to max_size 1 MiB)
    chunk_bytes: int = 16  # slow-drip: fragment size
    chunk_gap_s: float = 0.05  # slow-drip: pause between fragments

    def applies(self, venue: str) -> bool:
        return self.name != "none" and venue in self.venues

    def with_overrides(self, **changes: object) -> Scenario:
        """A copy with the given fields replaced (None values ignored); validated."""
        clean = {k: v for k, v in changes.items() if v is not None}
        unknown = set(clean) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise ValueError(f"unknown scenario setting(s): {', '.join(sorted(unknown))}")
        if "venues" in clean and isinstance(clean["venues"], str):
            clean["venues"] = VENUES if clean["venues"] == "both" else (clean["venues"],)
        out = dataclasses.replace(self, **clean)  # type: ignore[arg-type]
        out.validate()
        return out

    def validate(self) -> None:
        for v in self.venues:
            if v not in VENUES:
                raise ValueError(f"scenario {self.name}: unknown venue {v!r} (choose from {', '.join(VENUES)})")
        if self.after_s < 0 or self.duration_s < 0:
            raise ValueError(f"scenario {self.name}: after_s and duration_s must be >= 0")
        if self.times < 0 or self.count < 1:
            raise ValueError(f"scenario {self.name}: times must be >= 0 and count >= 1")
        if self.size_bytes < 1024 or self.chunk_bytes < 1 or self.chunk_gap_s < 0:
            raise ValueError(f"scenario {self.name}: size_bytes >= 1024, chunk_bytes >= 1, chunk_gap_s >= 0")


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario("none", "healthy venues"),
        Scenario("drop", "abort the TCP connection (no close frame) mid-stream"),
        Scenario("stall", "hold every frame for duration_s without closing, then flush the backlog"),
        Scenario("slow-drip", "for duration_s send each frame in tiny fragments with pauses; a backlog builds"),
        Scenario("malformed-json", "inject `count` truncated JSON frames into the stream, then carry on"),
        Scenario("oversized-frame", "send one frame of size_bytes (default 2 MiB), over the clients' 1 MiB limit"),
        Scenario("error-frames", "inject `count` venue error frames (Binance error shape, HL error channel)"),
        Scenario("hostile-frames", "inject adversarial data frames shaped like the last quote: id/time past int64, "
                 "another instrument, 100k-deep nesting, a depth diff (Binance), a withdrawn side (HL), a crossed "
                 "book; the feed must count each and keep the connection"),
        Scenario("wrong-route", "acknowledge subscriptions and stay silent, like Binance's wrong route",
                 venues=("binance",)),
        Scenario("refused", "ports bound but not listening (connection refused) for duration_s after start"),
        Scenario("http-429", "reject the first `times` handshakes with HTTP 429 Too Many Requests", times=2),
        Scenario("http-503", "reject the first `times` handshakes with HTTP 503 Service Unavailable", times=2),
        Scenario("tls-failure", "serve a certificate from an untrusted CA on the first `times` handshakes"),
        Scenario("early-close", "Binance's 24 h connection limit compressed to after_s seconds (every connection)",
                 venues=("binance",), after_s=5.0, times=0),
        Scenario("silent-instrument", "from after_s seconds into the market, the last of --symbols sends no more "
                 "book frames on either venue while the connection and the other instruments carry on"),
        Scenario("greeting", "Hyperliquid sends the non-JSON text 'Websocket connection established.' on connect",
                 venues=("hyperliquid",), times=0),
        Scenario("lost-reply", "order entry executes the first `times` orders per venue and never answers them, "
                 "nor streams their account events (the client must find out with a status query, without sending "
                 "the order again)"),
    )
}


def get_scenario(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        raise ValueError(f"unknown scenario {name!r}; choose from: {', '.join(SCENARIOS)}") from None


def describe_scenarios() -> str:
    """One line per scenario (what `caerus venue-sim --list-scenarios` prints)."""
    width = max(len(n) for n in SCENARIOS)
    lines = []
    for s in SCENARIOS.values():
        when = "" if s.name == "none" else f"  [venues={','.join(s.venues)} times={s.times or 'all'}]"
        lines.append(f"{s.name:<{width}}  {s.summary}{when}")
    return "\n".join(lines)


class FaultBudget:
    """How many more connections/handshakes per venue a scenario may still hit (event-loop confined)."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self._used: dict[str, int] = dict.fromkeys(VENUES, 0)

    def claim(self, venue: str) -> bool:
        """True when this connection/handshake on ``venue`` gets the fault (and counts it)."""
        s = self.scenario
        if not s.applies(venue):
            return False
        if s.times and self._used[venue] >= s.times:
            return False
        self._used[venue] += 1
        return True

    def used(self, venue: str) -> int:
        return self._used[venue]
