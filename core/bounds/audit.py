"""ε lower bounds from a one-run privacy audit (Steinke, Nasr & Jagielski, "Privacy Auditing
with One (1) Training Run", NeurIPS 2023): pure numpy / scipy, instant.

The auditor includes each of m canaries independently with probability ½, runs the algorithm
once, scores every canary, guesses "in" for the k₊ highest scores and "out" for the k₋ lowest,
and abstains on the rest. With r = k₊ + k₋ guesses of which v are correct, Theorem 3.1 bounds,
for an (ε, δ)-DP algorithm,

    P[V ≥ v] ≤ p(ε, δ) = P[W ≥ v] + 2mδ · max_{1≤i≤v} P[v − i ≤ W < v] / i,
    W ~ Binomial(r, e^ε / (1 + e^ε)),

so every ε with p(ε, δ) ≤ β = 1 − confidence is rejected and the audited ε is the supremum of
the rejected ε (p grows with ε): at that ε the run would have been a β-rare event. At δ = 0 the
bound is the tail of the randomised-response binomial alone; δ > 0 only adds to p, so it only
lowers the audited ε: the δ = 0 form is the aggressive one, and an (ε, δ) claim is audited with
its own δ (all guesses correct at 95 %, δ = 1e-5 and m = r: 5.81 → 5.78 for 1,000 canaries,
8.11 → 7.83 for 10,000).

With all r guesses correct the largest provable ε at 95 % solves (e^ε/(1+e^ε))^r = 0.05:
about 3.5 / 5.1 / 5.8 / 8.1 for r = 100 / 500 / 1,000 / 10,000 (:func:`max_provable_epsilon`).
Several audits (a grid of G settings, or several guess counts tried on one run) are corrected
with :func:`bonferroni`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, stats

from core.foundation.checks import check_int, check_range

__all__ = ["bonferroni", "epsilon_lower_bound", "max_provable_epsilon", "p_value"]

#: ε searched up to this value (q = e^ε/(1+e^ε) is 1 to double precision beyond ~37)
EPS_MAX = 36.0


def _check_counts(correct: int, guesses: int, canaries: int | None) -> None:
    check_int("guesses", guesses, 0)
    check_int("correct", correct, 0, guesses, note="at most the number of guesses")
    if canaries is not None:
        check_int("canaries", canaries, guesses, note="at least the number of guesses")


def p_value(correct: int, guesses: int, epsilon: float, *, delta: float = 0.0,
            canaries: int | None = None) -> float:
    """Theorem 3.1's bound on P[V ≥ ``correct``] for an (ε, δ)-DP algorithm audited with
    ``guesses`` guesses over ``canaries`` canaries (m; needed only when δ > 0)."""
    _check_counts(correct, guesses, canaries)
    check_range("epsilon", epsilon, 0.0)
    check_range("delta", delta, 0.0, 1.0)
    if delta > 0 and canaries is None:
        raise ValueError("canaries: got None; the δ > 0 term of Theorem 3.1 needs m")
    v, r = int(correct), int(guesses)
    if v == 0:
        return 1.0
    q = 1.0 / (1.0 + math.exp(-float(epsilon)))  # e^ε/(1+e^ε), stable for large ε
    tail = float(stats.binom.sf(v - 1, r, q))  # P[W ≥ v]
    if delta == 0:
        return min(1.0, tail)
    # α = max_i P[v − i ≤ W < v] / i over i = 1..v (a running sum of the pmf below v)
    below = np.cumsum(stats.binom.pmf(np.arange(v - 1, -1, -1), r, q))
    alpha = float(np.max(below / np.arange(1, v + 1)))
    return min(1.0, tail + 2.0 * int(canaries) * float(delta) * alpha)


def epsilon_lower_bound(correct: int, guesses: int, *, confidence: float = 0.95,
                        delta: float = 0.0, canaries: int | None = None) -> float:
    """The audited ε: the largest ε that ``correct`` of ``guesses`` guesses reject at
    ``confidence`` (p(ε, δ) ≤ 1 − confidence, Theorem 3.1); 0 when even ε = 0 is not rejected."""
    check_range("confidence", confidence, 0.0, 1.0, lo_open=True, hi_open=True)
    beta = 1.0 - float(confidence)
    if p_value(correct, guesses, 0.0, delta=delta, canaries=canaries) > beta:
        return 0.0
    if p_value(correct, guesses, EPS_MAX, delta=delta, canaries=canaries) <= beta:
        return EPS_MAX

    def gap(eps: float) -> float:
        return p_value(correct, guesses, eps, delta=delta, canaries=canaries) - beta

    return float(optimize.brentq(gap, 0.0, EPS_MAX, xtol=1e-9, rtol=1e-10))


def max_provable_epsilon(guesses: int, *, confidence: float = 0.95, delta: float = 0.0,
                         canaries: int | None = None) -> float:
    """The audited ε when all ``guesses`` guesses are correct: the most an audit of this size
    can prove (3.5 / 5.1 / 5.8 / 8.1 at 95 % for 100 / 500 / 1,000 / 10,000 guesses)."""
    return epsilon_lower_bound(guesses, guesses, confidence=confidence, delta=delta,
                               canaries=canaries)


def bonferroni(confidence: float, tests: int) -> float:
    """Per-test confidence 1 − (1 − ``confidence``)/G so that G audits hold jointly at
    ``confidence`` (union bound)."""
    check_range("confidence", confidence, 0.0, 1.0, lo_open=True, hi_open=True)
    check_int("tests", tests, 1)
    return 1.0 - (1.0 - float(confidence)) / int(tests)
