"""The strategy's instruments: one decision object per instrument, indexed by the records' instrument id.

The loop picks the decision object of each book by ``BOOK.symbol`` (a list index) and routes each EXEC record to
its instrument's order table by ``EXEC.symbol``. Everything else here is housekeeping: totals over instruments for
the process's counters, and per-instrument counters (``inst.<NAME>.books``, ``.orders``, ``.position`` ...) for
the session's report.
"""

from __future__ import annotations

from caerus.instruments import InstrumentSet
from caerus.records.exec import EXEC_SYMBOL
from caerus.runtime.counters import Counters
from caerus.strategy.bench import BenchFireEveryBook
from caerus.strategy.config import StrategyConfig
from caerus.strategy.latency_arb import GUARD_NAMES, LatencyArb
from caerus.strategy.model_signal import ModelArb, load_model

Decider = LatencyArb | ModelArb | BenchFireEveryBook

#: per-instrument integer counters (``inst.<ID>.<what>``, the id as in BOOK.symbol) and float ones
INSTRUMENT_INTS = ("books", "decisions", "orders", "guards")
INSTRUMENT_FLOATS = ("position", "signal_bps", "order_qty")


class Desk:
    """One decision object per instrument, in instrument-id order."""

    def __init__(self, cfg: StrategyConfig, instruments: InstrumentSet) -> None:
        """Raises caerus.strategy.model_signal.ModelError (one line) for an unusable model file."""
        self.instruments = instruments
        # signal = "model" / "ab": one model file, read and checked once, evaluated by every instrument's ModelArb
        self.model = load_model(cfg.model, cfg.model_sha256) if cfg.uses_model else None
        model = self.model
        self.arbs: list[Decider] = [
            BenchFireEveryBook(cfg, inst) if cfg.mode == "bench"
            else ModelArb(cfg, model, inst) if model is not None else LatencyArb(cfg, inst) for inst in instruments
        ]
        self.books = [0] * len(instruments)  # records read per instrument (the loop counts them)
        self.fires = [0] * len(instruments)

    @property
    def multi(self) -> bool:
        return len(self.arbs) > 1

    def halt(self) -> None:
        for arb in self.arbs:
            arb.halted = True

    def use_model(self, on: bool) -> None:
        """Decide with the model (True) or the naive rule (False) from now on: the A/B's window turned. Every
        ModelArb keeps updating its features either way, so neither arm starts cold."""
        for arb in self.arbs:
            if isinstance(arb, ModelArb):
                arb.use_model = on

    def on_exec(self, rec: tuple) -> None:
        """An EXEC record to its instrument's order table (records for an id we do not trade are ignored)."""
        i = rec[EXEC_SYMBOL]
        if 0 <= i < len(self.arbs):
            self.arbs[i].on_exec(rec)

    @property
    def decisions(self) -> int:
        return sum(a.decisions for a in self.arbs)

    def guards(self) -> list[int]:
        return [sum(a.guards[g] for a in self.arbs) for g in range(len(GUARD_NAMES))]

    @property
    def position(self) -> float:
        """The first instrument's position (the single-instrument counter; per instrument: inst.<ID>.position)."""
        return self.arbs[0].position

    def counter_names(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(int names, float names) of the per-instrument counters (none for a single instrument)."""
        if not self.multi:
            return (), ()
        return (tuple(f"inst.{i.id}.{w}" for i in self.instruments for w in INSTRUMENT_INTS),
                tuple(f"inst.{i.id}.{w}" for i in self.instruments for w in INSTRUMENT_FLOATS))

    def write_counters(self, counters: Counters, i0: int, f0: int) -> None:
        """Per-instrument counters into a counter block from positions ``i0`` / ``f0`` (housekeeping)."""
        if not self.multi:
            return
        ints, floats = counters.ints, counters.floats
        ni, nf = len(INSTRUMENT_INTS), len(INSTRUMENT_FLOATS)
        for k, arb in enumerate(self.arbs):
            base = i0 + k * ni
            ints[base] = self.books[k]
            ints[base + 1] = arb.decisions
            ints[base + 2] = self.fires[k]
            ints[base + 3] = sum(arb.guards)
            fb = f0 + k * nf
            floats[fb] = arb.position
            floats[fb + 1] = arb.signal
            floats[fb + 2] = arb.order_qty
