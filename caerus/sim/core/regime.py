"""Volatility regimes of the market model: a two-state continuous-time Markov chain (calm 0, volatile 1) shared by
every instrument, and the two clocks it induces.

In the volatile state the fair price's diffusion volatility is ``regime_vol_mult`` times the calm one and every jump
rate (information jumps, Binance flickers, Hyperliquid's own moves) ``regime_jump_mult`` times. Rather than
changing rates at each switch, the model runs on two time-changed clocks:

* ``var_s(t0, t1)``: the diffusion variance time between t0 and t1, in seconds (the integral of vol_mult(t)^2), so
  a Gaussian increment over [t0, t1] has variance sigma^2 * var_s;
* ``jump_ns(t)``: the jump clock (the integral of jump_mult(t), in ns), so a Poisson process with exponential
  gaps on this clock has the regime's rate at every moment.

Calm spells last Exp(``regime_calm_s``), volatile ones Exp(``regime_volatile_s``); the chain starts calm. With
both multipliers 1 the clocks are the identity and nothing is drawn (the fixed-lag model, draw for draw).
"""

from __future__ import annotations

import bisect
import random

from caerus.sim.core.market_config import MarketConfig


class Regime:
    """The regime path, drawn lazily (switch times from its own random stream) as time is asked about."""

    __slots__ = ("_jump", "_jump_mult", "_mean_ns", "_rng", "_seg", "_state", "_t", "_var", "_vol2", "on")

    def __init__(self, cfg: MarketConfig, rng: random.Random) -> None:
        self.on = cfg.regimes_on
        self._rng = rng
        self._vol2 = (1.0, cfg.regime_vol_mult**2)
        self._jump_mult = (1.0, cfg.regime_jump_mult)
        self._mean_ns = (cfg.regime_calm_s * 1e9, cfg.regime_volatile_s * 1e9)
        # switch k: from time _t[k] the state is _state[k]; _var/_jump are the clocks' values at _t[k]
        self._t: list[int] = [0]
        self._state: list[int] = [0]
        self._var: list[float] = [0.0]
        self._jump: list[float] = [0.0]
        # the segment last asked about: (start, end, var at start, jump clock at start, vol mult^2, jump mult);
        # most questions fall in it (times only grow), so they cost no search
        self._seg = (0, 0, 0.0, 0.0, 1.0, 1.0)

    def _segment(self, t_ns: int) -> tuple[int, int, float, float, float, float]:
        while self._t[-1] <= t_ns:
            s = self._state[-1]
            length = max(1, int(self._rng.expovariate(1.0) * self._mean_ns[s]))
            t = self._t[-1]
            self._var.append(self._var[-1] + length / 1e9 * self._vol2[s])
            self._jump.append(self._jump[-1] + length * self._jump_mult[s])
            self._t.append(t + length)
            self._state.append(1 - s)
        i = bisect.bisect_right(self._t, t_ns) - 1
        s = self._state[i]
        self._seg = (self._t[i], self._t[i + 1], self._var[i], self._jump[i], self._vol2[s], self._jump_mult[s])
        return self._seg

    def state(self, t_ns: int) -> int:
        """0 calm, 1 volatile, at ``t_ns``."""
        if not self.on:
            return 0
        self._segment(t_ns)
        return self._state[bisect.bisect_right(self._t, t_ns) - 1]

    def var_s(self, t0_ns: int, t1_ns: int) -> float:
        """Diffusion variance time over [t0, t1] in seconds (t1 - t0 when regimes are off)."""
        if not self.on:
            return (t1_ns - t0_ns) / 1e9
        return self._var_at(t1_ns) - self._var_at(t0_ns)

    def _var_at(self, t_ns: int) -> float:
        seg = self._seg
        if not seg[0] <= t_ns < seg[1]:
            seg = self._segment(t_ns)
        return seg[2] + (t_ns - seg[0]) / 1e9 * seg[4]

    def jump_ns(self, t_ns: int) -> float:
        """The jump clock at ``t_ns`` (``t_ns`` itself when regimes are off)."""
        if not self.on:
            return t_ns
        seg = self._seg
        if not seg[0] <= t_ns < seg[1]:
            seg = self._segment(t_ns)
        return seg[3] + (t_ns - seg[0]) * seg[5]
