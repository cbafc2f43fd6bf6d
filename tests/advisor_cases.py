"""Synthetic comparisons for the defense advisor (tests/test_advisor.py and
benchmarks/advisor_bench.py): each case builds a :class:`core.runs.compare.Comparison` from made-up
seed × knob arrays, states a threat and a floor, and checks the advice against numbers worked
out by hand in its docstring."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from core.foundation import metric_schema as S
from core.foundation.parts import DEFENSES, baseline_for
from core.report import advisor as A
from core.runs import compare as C

SEEDS = (0, 1, 2)


def curve(d: C.DefenseSpec | None, knobs: Sequence[float], utility: Sequence[Sequence[float]],
          leakage: Sequence[Sequence[float]], family: str = "membership") -> C.Curve:
    """A curve of ``d`` (None: the family's undefended point) with rows per knob value and
    columns per seed."""
    u, a = np.array(utility, dtype=float), np.array(leakage, dtype=float)
    assert u.shape == a.shape == (len(knobs), len(SEEDS))
    nan = np.full(u.shape, np.nan)
    if d is None:
        return C.Curve("no defense", baseline_for(family), {}, None, None, None,
                       np.array([np.nan]), list(SEEDS), u, a, nan, nan, nan, [[""] * 3])
    knob = DEFENSES.get(d.defense).knob
    return C.Curve(d.name, d.defense, dict(d.params), knob.symbol, knob.field, None,
                   np.array(knobs, dtype=float), list(SEEDS), u, a, nan, nan, nan,
                   [[""] * 3 for _ in knobs])


def comparison(curves: Sequence[tuple[C.DefenseSpec, Sequence[float], list, list]],
               undefended: tuple[list, list], *, family: str = "membership",
               privacy: str = "mia_auc_best") -> C.Comparison:
    specs = tuple(d for d, *_ in curves)
    spec = C.ComparisonSpec(family=family, data="digits", utility="utility_acc",
                            privacy=privacy, defenses=specs, seeds=SEEDS)
    chance = S.get(privacy).chance
    return C.Comparison(spec=spec, curves=[curve(None, [math.nan], *undefended, family=family),
                                           *(curve(d, k, u, a, family) for d, k, u, a in curves)],
                        refused=[], chance_leakage=chance if isinstance(chance, float) else None,
                        chance_utility=0.1, points_run=0, points_cached=0, seconds=0.0)


def rows(*vals: float) -> list[list[float]]:
    """One value per knob, the same on every seed."""
    return [[v] * len(SEEDS) for v in vals]


DP = C.DefenseSpec.of("dp_sgd", (1.0, 8.0))
I2G = C.DefenseSpec.of("inf2guard", (0.5, 0.9))
NAT = C.DefenseSpec.of("channel", (1.0, 64.0), channel="natural")
BASE = ([[0.90, 0.91, 0.92]], rows(0.70))


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[], tuple[C.Comparison, A.Threat, A.Floor]]
    check: Callable[[A.Advice], None]


def _winner() -> tuple[C.Comparison, A.Threat, A.Floor]:
    """AUC ≤ 0.6, floor 80 % of 0.91 = 0.728: DP-SGD ε = 8 (0.86 at 0.58) beats Inf2Guard
    λ = 0.9 (0.81 at 0.59) by 0.05 on every seed (se 0: significant); Inf2Guard's λ 0.5 →
    0.9 segment crosses 0.6 but its less private end keeps 0.84 < 0.86: nothing to run."""
    cmp = comparison([(DP, (1, 8), [[.50, .52, .51], [.85, .86, .87]], rows(.52, .58)),
                      (I2G, (.5, .9), [[.83, .84, .85], [.80, .81, .82]], rows(.62, .59))], BASE)
    return cmp, A.Threat("membership", "mia_auc_best", 0.6), A.Floor(0.8)


def _check_winner(a: A.Advice) -> None:
    assert a.status == "met"
    assert (a.chosen.curve, a.chosen.knob) == (DP.name, 8.0)
    assert math.isclose(a.chosen.utility, 0.86) and math.isclose(a.floor_utility, 0.8 * 0.91)
    assert (a.runner_up.curve, a.runner_up.knob) == (I2G.name, 0.9)
    assert a.test.verdict == "A" and a.test.significant and a.test.seeds == 3
    assert math.isclose(a.test.mean_diff, 0.05)
    assert a.missing is None and a.crossings == ()
    assert "Use DP-SGD at ε = 8" in a.sentence and "survives the paired-seed" in a.sentence


def _tie() -> tuple[C.Comparison, A.Threat, A.Floor]:
    """As the winner, but DP-SGD ε = 8 keeps 0.80 / 0.90 / 0.86 and Inf2Guard λ = 0.9
    0.85 / 0.83 / 0.85: differences −0.05, 0.07, 0.01 (mean 0.01, se 0.035): a tie."""
    cmp = comparison([(DP, (1, 8), [[.50, .52, .51], [.80, .90, .86]], rows(.52, .58)),
                      (I2G, (.5, .9), [[.83, .84, .84], [.85, .83, .85]], rows(.62, .59))], BASE)
    return cmp, A.Threat("membership", "mia_auc_best", 0.6), A.Floor(0.8)


def _check_tie(a: A.Advice) -> None:
    assert a.status == "met" and a.chosen.curve == DP.name and a.runner_up.curve == I2G.name
    assert a.test.verdict == "tie" and not a.test.significant
    assert math.isclose(a.test.mean_diff, 0.01, abs_tol=1e-12)
    assert math.isclose(a.test.se, float(np.std([-.05, .07, .01], ddof=1) / math.sqrt(3)))
    assert "does not survive" in a.sentence and "tie within seed noise" in a.sentence


def _unreachable() -> tuple[C.Comparison, A.Threat, A.Floor]:
    """AUC ≤ 0.55 while the most private point is DP-SGD ε = 1 at 0.58: unreachable, closest
    +0.03 from the level; no segment crosses it: nothing to run."""
    cmp = comparison([(DP, (1, 8), rows(.50, .86), rows(.58, .62)),
                      (I2G, (.5, .9), rows(.84, .81), rows(.65, .60))], BASE)
    return cmp, A.Threat("membership", "mia_auc_best", 0.55), A.Floor(0.8)


def _check_unreachable(a: A.Advice) -> None:
    assert a.status == "level_unreached" and a.chosen is None and a.runner_up is None
    assert (a.closest.curve, a.closest.knob) == (DP.name, 1.0)
    assert math.isclose(a.closest.privacy, 0.58)
    assert "No setting reaches the level" in a.sentence and "+0.030 from the level" in a.sentence
    assert a.missing is None and "widen the knob grids" in a.sentence


def _missing() -> tuple[C.Comparison, A.Threat, A.Floor]:
    """AUC ≤ 0.6, floor 0.728: the points at the level (κ = 1: 0.60 utility, ε = 1: 0.50) keep
    too little; κ 1 → 64 crosses at t = (0.6 − 0.55) / 0.13 (log knob: κ = 64^t ≈ 4.95, linear
    utility 0.715) and ε 1 → 8 at t = 0.8 (ε = 8^0.8 ≈ 5.28, utility 0.78): two settings
    × 3 seeds to run, the best interpolated one ε ≈ 5.28."""
    cmp = comparison([(DP, (1, 8), rows(.50, .85), rows(.52, .62)),
                      (NAT, (1, 64), rows(.60, .90), rows(.55, .68))], BASE)
    return cmp, A.Threat("membership", "mia_auc_best", 0.6), A.Floor(0.8)


def _check_missing(a: A.Advice) -> None:
    assert a.status == "floor_unmet" and a.chosen is None
    assert (a.closest.curve, a.closest.knob) == (NAT.name, 1.0)
    knobs = {c.curve: c.knob for c in a.crossings}
    assert knobs == {DP.name: 5.28, NAT.name: 4.95}, knobs
    assert math.isclose(a.best_crossing.utility, 0.5 + 0.8 * 0.35)
    grids = {d.name: d.grid for d in a.missing.defenses}
    assert grids == {DP.name: (5.28,), NAT.name: (4.95,)}
    assert a.missing.seeds == SEEDS and a.missing_points == 6
    assert dict(next(d for d in a.missing.defenses if d.defense == "channel").params) == \
        {"channel": "natural"}
    assert "run this point to confirm" in a.sentence and "= 6 runs in one comparison job" in \
        a.sentence
    # the job is a valid comparison the executor can run: one sweep per curve, plus the
    # (stored) undefended point
    sweeps, refused = C.comparison_sweeps(a.missing)
    assert not refused and len(sweeps) == 3
    assert sorted(v for _, s in sweeps for g in s["grid"].values() for v in g) == [4.95, 5.28]


def _higher_private() -> tuple[C.Comparison, A.Threat, A.Floor]:
    """Reconstruction MSE must stay ≥ 0.05 (lower = leakier: the schema's description), an
    absolute floor of 0.4: κ = 10 (MSE 0.08, utility 0.5) is chosen; κ 10 → 1000 crosses
    0.05 at t = 3/7 (κ = 10 · 100^t ≈ 72)."""
    nat = C.DefenseSpec.of("channel", (10.0, 1000.0), channel="natural")
    cmp = comparison([(nat, (10, 1000), rows(.5, .9), rows(.08, .01))], ([[.92] * 3], rows(.005)),
                     family="gradient_leakage", privacy="recon_mse")
    return cmp, A.Threat("gradient_leakage", "recon_mse", 0.05), A.Floor(0.4, share=False)


def _check_higher_private(a: A.Advice) -> None:
    assert a.threat.higher_is_private and a.status == "met"
    assert a.chosen.knob == 10.0 and a.runner_up is None and a.floor_utility == 0.4
    assert [c.knob for c in a.crossings] == [72.0]
    assert "≥ 0.05" in a.sentence and "No other curve meets both" in a.sentence


def _undefended() -> tuple[C.Comparison, A.Threat, A.Floor]:
    """AUC ≤ 0.75: the undefended model (0.70, utility 0.91) already meets it, above every
    defense's utility: no defense needed; the runner-up DP-SGD ε = 8 (0.86 at 0.62)."""
    cmp = comparison([(DP, (1, 8), rows(.50, .86), rows(.58, .62)),
                      (I2G, (.5, .9), rows(.84, .81), rows(.65, .60))], BASE)
    return cmp, A.Threat("membership", "mia_auc_best", 0.75), A.Floor(0.5)


def _check_undefended(a: A.Advice) -> None:
    assert a.status == "met" and a.chosen.baseline and a.chosen.knob is None
    assert a.runner_up.curve == DP.name and a.runner_up.knob == 8.0
    assert "No defense is needed" in a.sentence


CASES: tuple[Case, ...] = (
    Case("clear winner", _winner, _check_winner),
    Case("runner-up within seed noise", _tie, _check_tie),
    Case("no defense reaches the level", _unreachable, _check_unreachable),
    Case("missing points to run", _missing, _check_missing),
    Case("higher is more private (MSE), absolute floor", _higher_private, _check_higher_private),
    Case("the undefended model already meets the threat", _undefended, _check_undefended),
)


def run_case(case: Case) -> A.Advice:
    cmp, threat, floor = case.build()
    advice = A.advise(cmp, threat=threat, floor=floor)
    case.check(advice)
    return advice
