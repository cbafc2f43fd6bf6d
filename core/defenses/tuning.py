"""Match a baseline's attack level to a target (TAPPFL Fig. 4: "the noise variance and the pruning
rate are tuned so that the attribute-inference accuracy matches TAPPFL's; test accuracy is then
compared"). Bisection on one knob (ε for DP, rate for pruning). Pure Python.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class TuneResult:
    """``knob`` reaching the target (the closest evaluation found), its ``attack`` and ``utility``;
    ``history`` = every (knob, attack, utility) evaluated, in order; ``bracketed`` = the target
    lay between the attack levels at ``lo`` and ``hi``; ``converged`` = |attack − target| ≤ tol."""

    knob: float
    attack: float
    utility: float
    target: float
    bracketed: bool
    converged: bool
    history: list[tuple[float, float, float]] = field(default_factory=list)

    @property
    def n_evals(self) -> int:
        return len(self.history)


def match_attack_level(
    evaluate: Callable[[float], tuple[float, float]],
    *,
    target: float,
    lo: float,
    hi: float,
    increasing: bool,
    tol: float = 0.01,
    max_evals: int = 8,
    log_scale: bool = False,
) -> TuneResult:
    """Bisect ``knob`` ∈ [lo, hi] until ``evaluate(knob)[0]`` (the attack metric) is within ``tol``
    of ``target``. ``increasing``: whether the attack level grows with the knob (True for DP ε,
    False for the pruning rate). ``log_scale`` bisects at geometric means (for ε).

    ``lo`` and ``hi`` are evaluated first; if the target is outside their attack levels the
    result is the closer end with ``bracketed=False`` (no further evaluations). The attack is
    assumed monotone in the knob; with a noisy evaluation the closest point found is returned."""
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"lo, hi: got {lo!r}, {hi!r}; expected finite lo < hi")
    if log_scale and lo <= 0:
        raise ValueError(f"lo: got {lo!r}; log_scale needs 0 < lo")
    if max_evals < 2:
        raise ValueError(
            f"max_evals: got {max_evals}; allowed range >= 2 (both ends are evaluated)"
        )
    if not tol >= 0:
        raise ValueError(f"tol: got {tol!r}; allowed range 0 <= value")

    history: list[tuple[float, float, float]] = []

    def ev(x: float) -> float:
        a, u = evaluate(x)
        history.append((float(x), float(a), float(u)))
        return float(a)

    def result(bracketed: bool) -> TuneResult:
        best = min(history, key=lambda h: abs(h[1] - target))
        return TuneResult(
            knob=best[0],
            attack=best[1],
            utility=best[2],
            target=float(target),
            bracketed=bracketed,
            converged=abs(best[1] - target) <= tol,
            history=history,
        )

    a_lo = ev(lo)
    if abs(a_lo - target) <= tol:
        return result(True)
    a_hi = ev(hi)
    if abs(a_hi - target) <= tol:
        return result(True)
    if not (min(a_lo, a_hi) <= target <= max(a_lo, a_hi)):
        return result(False)
    sign = 1.0 if increasing else -1.0
    x_lo, x_hi = lo, hi
    while len(history) < max_evals:
        mid = math.sqrt(x_lo * x_hi) if log_scale else 0.5 * (x_lo + x_hi)
        a = ev(mid)
        if abs(a - target) <= tol:
            break
        # attack too low (in the increasing orientation) -> move up
        if sign * (a - target) < 0:
            x_lo = mid
        else:
            x_hi = mid
    return result(True)
