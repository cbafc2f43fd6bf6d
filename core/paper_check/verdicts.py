"""Verdicts decided by intervals: a claim about a difference (test − base) holds, does not hold,
or is not resolved, from the 95 % interval of that difference, read at the largest scale
measured.

- Per-seed values at both ends: the Student-t interval of the mean paired difference over
  seeds (:func:`paired`).
- One stored 95 % interval per end (one run, or a seed mean with its interval): the interval of
  the difference of two independent estimates, each side's half-widths added in quadrature
  (:func:`from_ends`; the normal approximation).
- A stored interval of the compared quantity itself (a bootstrap of Spearman ρ, a t-interval
  of a per-seed difference): used as it is.

A point with no interval is never a verdict: it reads "not resolved" and says why.

Pure numpy/scipy; no torch, no streamlit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

HOLDS = "holds"
FAILS = "does not hold"
UNRESOLVED = "not resolved"
VERDICTS = (HOLDS, FAILS, UNRESOLVED)
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Interval:
    """A 95 % interval of the compared difference (test − base) and how it was obtained."""

    estimate: float
    lo: float
    hi: float
    method: str
    n: int | None = None  # seeds (or pairs) behind it, where it is a t-interval

    def text(self, fmt=lambda v: f"{v:.3g}") -> str:
        return f"{fmt(self.estimate)} [{fmt(self.lo)}, {fmt(self.hi)}]"

    def as_dict(self) -> dict:
        return {"estimate": self.estimate, "lo": self.lo, "hi": self.hi, "method": self.method,
                "n": self.n}


def _finite(values: Sequence[float | None]) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(v)]


def t_interval(values: Sequence[float], method: str = "") -> Interval | None:
    """Student-t 95 % interval of the mean of ``values``; None with fewer than two values."""
    from scipy import stats

    v = _finite(values)
    n = len(v)
    if n < 2:
        return None
    mean = sum(v) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in v) / (n - 1))
    half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, n - 1)) * sd / math.sqrt(n)
    return Interval(mean, mean - half, mean + half,
                    method or f"Student-t over {n} seeds (paired differences)", n)


def paired(base: Sequence[float | None], test: Sequence[float | None],
           method: str = "") -> Interval | None:
    """The t-interval of test − base over pairs (same seed at both ends); pairs with a missing
    end are dropped; None with fewer than two complete pairs."""
    diffs = [t - b for b, t in zip(base, test, strict=False)
             if b is not None and t is not None and math.isfinite(b) and math.isfinite(t)]
    return t_interval(diffs, method)


def from_ends(b: float, b_lo: float, b_hi: float, t: float, t_lo: float, t_hi: float,
              method: str = "") -> Interval:
    """Interval of t − b for two independent estimates, each with its own 95 % interval: the
    lower (upper) half-widths of the difference are the quadrature sums of the matching sides
    (normal approximation)."""
    d = t - b
    lo = d - math.hypot(t - t_lo, b_hi - b)
    hi = d + math.hypot(t_hi - t, b - b_lo)
    return Interval(d, lo, hi, method or "independent ends, 95 % intervals in quadrature")


def decide(interval: Interval | None, relation: str) -> str:
    """The verdict on a claimed sign of the difference: ``relation`` "<" claims test − base < 0,
    ">" claims > 0. Holds when the whole interval is on the claimed side, does not hold when
    the whole interval is on the other side, otherwise (or with no interval) not resolved."""
    if relation not in ("<", ">"):
        raise ValueError(f"relation: got {relation!r}; allowed: '<', '>'")
    if interval is None:
        return UNRESOLVED
    below, above = interval.hi < 0, interval.lo > 0
    if relation == "<":
        return HOLDS if below else FAILS if above else UNRESOLVED
    return HOLDS if above else FAILS if below else UNRESOLVED


def deciding_cell(cells: Sequence[dict]) -> dict | None:
    """The cell that decides a claim: the largest-scale cell that was measured (``cells`` are
    ordered smallest scale first; a cell is measured when it has ``measured`` true). A smaller
    cell never overrides a larger one, whatever either reads."""
    measured = [c for c in cells if c.get("measured")]
    return measured[-1] if measured else None


def fmt_value(v: float | None) -> str:
    """A measured number as the paper check prints it (three decimals, three significant
    digits below 0.01)."""
    if v is None:
        return "—"
    if v == 0:
        return "0"
    return f"{v:.3g}" if abs(v) < 1e-2 else f"{v:.3f}"
