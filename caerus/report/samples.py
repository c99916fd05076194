"""How many samples a percentile needs: the rank rule, the flag on a percentile that is only a maximum, and how long
a session must run to collect enough samples at the rate it collected them.

Every percentile in Caerus is the HdrHistogram one (``caerus.metrics.hdr.percentiles``, the Java/JS rule): the
p-th percentile of n samples is the sample at rank ``ceil(p/100 * n)``. That rank is n -- the percentile *is* the
largest sample -- while ``n < 1 / (1 - p/100)``. So a p99 needs n >= 100 samples to be anything but the maximum
(at n = 100 it is the second largest), a p99.9 n >= 1,000, a p50 n >= 2. A percentile below its threshold is shown
flagged, never silently as if it were a tail estimate: "p99 of 21 fires is their maximum".
"""

from __future__ import annotations

import math
from fractions import Fraction

#: what a flagged cell carries after its value
MAX_MARK = "(= max)"


def rank(pct: float, n: int) -> int:
    """The rank (1-based) of the sample the ``pct`` percentile of ``n`` samples is: ``caerus.metrics.hdr``'s rule
    (round the fractional count up, forgiving a 1-ulp float error; at least 1)."""
    fp = min(pct, 100.0) / 100.0 * n
    return max(1, math.ceil(fp - math.ulp(fp)))


def is_max(pct: float, n: int) -> bool:
    """Whether the ``pct`` percentile of ``n`` samples is their largest sample (n = 0: nothing to flag)."""
    return n > 0 and rank(pct, n) >= n


def min_samples(pct: float) -> int:
    """The fewest samples whose ``pct`` percentile is not their maximum: the smallest n with n >= 1 / (1 - p/100)
    (p99: 100, p99.9: 1,000, p50: 2). Exact: the percentile is read as the decimal it is written as."""
    if not 0 < pct < 100:
        raise ValueError(f"percentile must be in (0, 100), got {pct}")
    tail = 1 - Fraction(str(pct)) / 100
    return math.ceil(1 / tail)


def pct_name(pct: float) -> str:
    """99.0 -> "p99", 99.9 -> "p99.9"."""
    return f"p{pct:g}"


def cell(text: str, pct: float, n: int) -> str:
    """A table cell holding the ``pct`` percentile of ``n`` samples: marked :data:`MAX_MARK` when it is their max."""
    return f"{text} {MAX_MARK}" if is_max(pct, n) else text


def flag(pcts: tuple[float, ...], n: int, what: str = "samples") -> str | None:
    """One phrase naming which of ``pcts`` of ``n`` ``what`` are only their maximum ("p99 of 21 fires is their
    maximum", "p99, p99.9 of 21 fires are their maximum"); None when none is (or there are no samples)."""
    flagged = [pct_name(p) for p in pcts if is_max(p, n)]
    if not flagged:
        return None
    verb = "is" if len(flagged) == 1 else "are"
    if n == 1:
        return f"{', '.join(flagged)} of 1 {what.rstrip('s')} {verb} that one sample"
    return f"{', '.join(flagged)} of {n:,} {what} {verb} their maximum"


def rule_sentence() -> str:
    """The rule, stated once wherever flags appear."""
    return (f"A percentile p of n samples is the sample at rank ceil(p/100 x n) (the HdrHistogram rule every number "
            f"here uses), so it is the largest sample while n < 1/(1 - p/100): a p99 needs n >= {min_samples(99):,} "
            f"samples not to be the maximum, a p99.9 n >= {min_samples(99.9):,}; a cell marked \"{MAX_MARK}\" is the "
            "maximum of its samples, not a tail estimate.")


def seconds_for(need: int, have: int, seconds: float) -> float | None:
    """How long a session collecting ``have`` samples in ``seconds`` runs to collect ``need`` (None: no rate)."""
    if have <= 0 or not seconds > 0:
        return None
    return need * seconds / have


def duration_text(seconds: float) -> str:
    """137.2 -> "2.3 min (--duration 138)"; a whole hour and more in hours."""
    whole = math.ceil(seconds)
    if seconds < 120:
        human = f"{whole} s"
    elif seconds < 7200:
        human = f"{seconds / 60:.1f} min"
    else:
        human = f"{seconds / 3600:.1f} h"
    return f"{human} (--duration {whole})"
