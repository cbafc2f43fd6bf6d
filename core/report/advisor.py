"""The defense advisor: given a stated threat and a utility floor, which defense and setting of a
stored comparison to use (DESIGN: Architecture, "the view no other tool has", read backwards).

A :class:`Threat` names an attack family, a privacy metric of :mod:`core.foundation.metric_schema` and a
level the metric must stay at or below (or at or above, for a metric where *less* means more
leakage, such as a reconstruction's MSE: read from the schema). A :class:`Floor` is the least
utility to keep, absolute or as a share of the undefended utility (the family's registered
baseline, :attr:`core.foundation.parts.DefensePart.baseline`). :func:`advise` reads the comparison's
seed-mean points (:class:`core.runs.compare.Comparison`) and answers with an :class:`Advice`:

- the measured setting that meets both with the most utility, and the runner-up (the best
  point of another curve);
- whether their difference survives the paired-seed test: :func:`core.runs.compare.dominance` on
  the two points' per-seed utilities over the seeds both share (mean of the paired
  differences beyond two standard errors);
- where no point meets both, the closest point (its metric against the level, or its utility
  against the floor);
- the knob values between two measured settings whose segment crosses the level
  (:func:`core.runs.compare.utility_at_level`, linear interpolation: marked, never chosen) and
  whose less private end keeps more utility than the best answer: the missing points, as ONE
  :class:`core.runs.compare.ComparisonSpec` (those values only, the comparison's seeds) that the
  page's executor runs.

Pure functions over the comparison's arrays: nothing runs, nothing is stored.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from core.foundation import metric_schema as S
from core.foundation.checks import check_range, range_error
from core.foundation.parts import DEFENSES, FAMILIES
from core.foundation.wording import counted
from core.runs.compare import (
    Comparison,
    ComparisonSpec,
    Curve,
    DefenseSpec,
    dominance,
    pareto_front,
    utility_at_level,
)

__all__ = ["Advice", "Crossing", "Floor", "PairedTest", "Pick", "Threat", "advise",
           "default_threat", "higher_is_private", "metric_range"]

#: a metric's natural range by unit (the schema's units); any other unit: [0, inf]
UNIT_RANGES: dict[str, tuple[float, float]] = {
    "AUC": (0.0, 1.0), "fraction": (0.0, 1.0), "probability": (0.0, 1.0),
    "SSIM": (-1.0, 1.0), "score": (-math.inf, math.inf),
}
#: z of the paired test (:func:`core.runs.compare.dominance`'s default: two standard errors)
Z = 2.0


def metric_range(name: str) -> tuple[float, float]:
    """[low, high] of metric ``name``: its schema span where it declares one (a difference of
    two fractions spans [-1, 1]), else its unit's range."""
    spec = S.get(name)
    return spec.span if spec.span is not None else UNIT_RANGES.get(spec.unit, (0.0, math.inf))


def higher_is_private(name: str) -> bool:
    """Whether more of privacy metric ``name`` means less leakage, read from its schema
    direction: False for a ``leakage`` metric, True for a ``protection`` metric (an attacker's
    MSE or cross-entropy); any other metric is no privacy metric (one-line ValueError)."""
    spec = S.get(name)
    if spec.direction in S.PRIVACY_DIRECTIONS:
        return spec.direction == "protection"
    raise ValueError(f"threat.metric: got {name!r}, a metric of direction {spec.direction!r}; "
                     "expected a privacy metric (an attack's success, or an error where lower "
                     "is leakier)")


def _words(name: str) -> str:
    """A metric as a sentence names it: its schema description up to the first ':', ';' or
    parenthesis."""
    text = S.get(name).description
    for stop in (":", ";", " ("):
        text = text.split(stop)[0]
    return text.strip()


@dataclass(frozen=True)
class Threat:
    """The threat to defend against: an attack ``family`` (a registered family), its privacy
    ``metric`` (a registered name) and the ``level`` it must not pass (at most ``level``, or
    at least for a metric where higher is more private)."""

    family: str
    metric: str
    level: float

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"threat.family: got {self.family!r}; allowed: "
                             f"{', '.join(FAMILIES.names())}")
        higher_is_private(self.metric)  # registered and a privacy metric
        lo, hi = metric_range(self.metric)
        object.__setattr__(self, "level", check_range(
            "threat.level", self.level, lo, hi, note=f"{S.get(self.metric).unit} of {self.metric}"))

    @property
    def higher_is_private(self) -> bool:
        return higher_is_private(self.metric)

    @property
    def sign(self) -> float:
        """+1 when less is more private, -1 otherwise: ``sign · value <= sign · level``."""
        return -1.0 if self.higher_is_private else 1.0

    @property
    def relation(self) -> str:
        return "≥" if self.higher_is_private else "≤"

    def meets(self, value: float) -> bool:
        return bool(math.isfinite(value) and self.sign * value <= self.sign * self.level)


@dataclass(frozen=True)
class Floor:
    """The least utility to keep: ``value`` as a ``share`` of the undefended utility (in
    [0, 1]) or, with ``share=False``, absolute (in the utility metric's range, checked by
    :func:`advise`, which knows the metric)."""

    value: float
    share: bool = True

    def __post_init__(self) -> None:
        if self.share:
            v = check_range("floor", self.value, 0.0, 1.0, note="a share of the undefended "
                            "utility")
        else:
            v = check_range("floor", self.value, note="an absolute utility")
            if not math.isfinite(v):
                raise range_error("floor", self.value, -math.inf, math.inf, lo_open=True,
                                  hi_open=True, note="an absolute utility")
        object.__setattr__(self, "value", v)


@dataclass(frozen=True)
class Pick:
    """One measured (seed-mean) point of a comparison: its curve, knob value (None for an
    unswept curve), utility and privacy metric with their standard deviations over seeds."""

    curve: str
    defense: str
    symbol: str | None
    knob: float | None
    index: int
    utility: float
    utility_std: float
    privacy: float
    privacy_std: float
    seeds: int
    on_front: bool
    baseline: bool = False

    @property
    def setting(self) -> str:
        return "" if self.knob is None or self.symbol is None else f"{self.symbol} = {self.knob:g}"

    @property
    def label(self) -> str:
        return self.curve + (f" at {self.setting}" if self.setting else "")


@dataclass(frozen=True)
class Crossing:
    """A segment of a curve, between two measured knob values, that crosses the level: the
    knob value where the seed-mean line crosses it (linear in the privacy metric, on the
    knob's scale: geometric for a log knob), the linearly ``interpolated`` utility there, and
    the utility of the segment's less private end (what the setting could keep at most if the
    curve is monotone). Interpolated, never measured: run it to confirm."""

    curve: str
    defense: str
    symbol: str | None
    between: tuple[float, float]
    knob: float
    utility: float
    upper: float

    @property
    def label(self) -> str:
        return f"{self.curve} at {self.symbol} ≈ {self.knob:g}"


@dataclass(frozen=True)
class PairedTest:
    """The chosen point against the runner-up over the seeds both share:
    :func:`core.runs.compare.dominance` (``verdict`` ``A``: the chosen keeps more utility beyond
    ``Z`` standard errors of the paired differences; ``B``: the runner-up does; ``tie``;
    ``n/a``) with the mean difference and its standard error."""

    verdict: str
    seeds: int
    mean_diff: float
    se: float
    method: str = f"paired-seed dominance (core.runs.compare.dominance, {Z:g} standard errors)"

    @property
    def significant(self) -> bool:
        return self.seeds > 1 and self.verdict in ("A", "B")


Status = Literal["met", "level_unreached", "floor_unmet"]


@dataclass(frozen=True)
class Advice:
    """:func:`advise`'s answer. ``status``: ``met`` (``chosen`` meets both), ``level_unreached``
    (no point reaches the level: ``closest`` is the most private point) or ``floor_unmet``
    (points reach the level, none above the floor: ``closest`` is the most useful of them).
    ``missing``: the one comparison job of the crossing settings worth running (None: none);
    ``sentence``: the answer in words, every number read from the fields."""

    threat: Threat
    floor: Floor
    utility_metric: str
    floor_utility: float
    baseline_utility: float | None
    baseline_privacy: float | None
    status: Status
    chosen: Pick | None
    runner_up: Pick | None
    test: PairedTest | None
    closest: Pick | None
    crossings: tuple[Crossing, ...]
    missing: ComparisonSpec | None
    seeds: int
    sentence: str = field(default="")

    @property
    def missing_points(self) -> int:
        """Points the ``missing`` job runs (knob values × seeds; its baseline is stored)."""
        if self.missing is None:
            return 0
        return sum(len(d.grid or ()) for d in self.missing.defenses) * len(self.missing.seeds)

    @property
    def best_crossing(self) -> Crossing | None:
        return max(self.crossings, key=lambda c: c.utility, default=None)

    def rows(self) -> list[dict[str, str | float | int]]:
        """The points the sentence names, one row each (role, curve, setting, both metrics,
        how it was read); the metrics named in words, as the sentence names them."""
        metric = _words(self.threat.metric)
        out: list[dict[str, str | float | int]] = []
        for role, p in (("chosen", self.chosen), ("runner-up", self.runner_up),
                        ("closest", self.closest)):
            if p is not None:
                out.append({"role": role, "defense": p.curve, "setting": p.setting or "—",
                            "utility": round(p.utility, 4), metric: round(p.privacy, 4),
                            "seeds": p.seeds,
                            "how": "measured"})
        for c in self.crossings:
            out.append({"role": "to run", "defense": c.curve,
                        "setting": f"{c.symbol} ≈ {c.knob:g}",
                        "utility": round(c.utility, 4), metric: round(self.threat.level, 4),
                        "seeds": self.seeds,
                        "how": "interpolated: run this point to confirm"})
        return out

    def report_section(self) -> dict[str, Any]:
        """The privacy report's section: ``{"title", "sentences", "rows", "figure"}`` (no
        figure: the engine draws none; the page's plane shows the picks)."""
        return {"title": "Defense advisor", "sentences": [self.sentence], "rows": self.rows(),
                "figure": None}

    def to_dict(self) -> dict[str, Any]:
        def pick(p: Pick | None) -> dict[str, Any] | None:
            return None if p is None else {"curve": p.curve, "knob": p.knob,
                                           "utility": p.utility, "privacy": p.privacy}

        return {"threat": {"family": self.threat.family, "metric": self.threat.metric,
                           "level": self.threat.level},
                "floor": {"value": self.floor.value, "share": self.floor.share,
                          "utility": self.floor_utility},
                "status": self.status, "chosen": pick(self.chosen),
                "runner_up": pick(self.runner_up), "closest": pick(self.closest),
                "test": None if self.test is None else {
                    "verdict": self.test.verdict, "seeds": self.test.seeds,
                    "mean_diff": self.test.mean_diff, "se": self.test.se,
                    "significant": self.test.significant, "method": self.test.method},
                "crossings": [{"curve": c.curve, "knob": c.knob, "utility": c.utility}
                              for c in self.crossings],
                "missing_points": self.missing_points, "sentence": self.sentence}


# ---------------------------------------------------------------------------------------------


def default_threat(comparison: Comparison, metric: str | None = None) -> Threat:
    """A threat worth asking about on ``comparison``: its privacy metric at a level a quarter
    of the way from the undefended point towards chance (towards the most private point
    measured where the metric has no chance level), to two decimals."""
    metric = metric or comparison.spec.privacy
    sign = -1.0 if higher_is_private(metric) else 1.0
    vals = [v for c in comparison.curves for v in c.leakage_mean if math.isfinite(v)]
    if not vals:
        raise ValueError("comparison: no point reports its privacy metric")
    base = comparison.undefended
    top = float(base.leakage_mean[0]) if base is not None and math.isfinite(
        base.leakage_mean[0]) else max(vals, key=lambda v: sign * v)
    ref = comparison.chance_leakage if comparison.chance_leakage is not None else \
        min(vals, key=lambda v: sign * v)
    level = round(top - 0.25 * (top - ref), 2)
    lo, hi = metric_range(metric)
    return Threat(comparison.spec.family, metric, min(max(level, lo), hi))


def _picks(comparison: Comparison, threat: Threat) -> list[Pick]:
    curves = comparison.curves
    pts = [(c, j) for c in curves for j in range(len(c.knob))]
    u = np.array([c.utility_mean[j] for c, j in pts], dtype=float)
    a = np.array([c.leakage_mean[j] for c, j in pts], dtype=float)
    front = pareto_front(u, threat.sign * a)
    base = comparison.undefended
    return [Pick(curve=c.name, defense=c.defense, symbol=c.symbol,
                 knob=None if c.knob_field is None else float(c.knob[j]), index=j,
                 utility=float(u[i]), utility_std=float(c.utility_std[j]),
                 privacy=float(a[i]), privacy_std=float(c.leakage_std[j]),
                 seeds=int(np.isfinite(c.utility[j]).sum()), on_front=bool(front[i]),
                 baseline=c is base)
            for i, (c, j) in enumerate(pts)]


def _paired(comparison: Comparison, a: Pick, b: Pick) -> PairedTest:
    """:func:`core.runs.compare.dominance` on the two points' utilities over the seeds both
    curves share (paired by seed)."""
    ca = next(c for c in comparison.curves if c.name == a.curve)
    cb = next(c for c in comparison.curves if c.name == b.curve)
    common = [s for s in ca.seeds if s in cb.seeds]
    xa = [float(ca.utility[a.index, ca.seeds.index(s)]) for s in common]
    xb = [float(cb.utility[b.index, cb.seeds.index(s)]) for s in common]
    verdict = dominance(xa, xb, z=Z)
    d = np.array([x - y for x, y in zip(xa, xb, strict=True)
                  if math.isfinite(x) and math.isfinite(y)])
    se = float(d.std(ddof=1) / math.sqrt(len(d))) if len(d) > 1 else float("nan")
    return PairedTest(verdict, len(d), float(d.mean()) if len(d) else float("nan"), se)


def _knob_between(curve: Curve, k0: float, k1: float, k_lin: float) -> float:
    """The crossing's knob value on the knob's own scale (``utility_at_level`` interpolates
    linearly in the knob; a log knob such as ε or κ is crossed at the geometric point),
    rounded to three significant digits while that stays strictly between the ends."""
    t = (k_lin - k0) / (k1 - k0)
    knob = DEFENSES.get(curve.defense).knob
    if knob is not None and knob.scale == "log" and k0 > 0 and k1 > 0:
        k = math.exp(math.log(k0) + t * (math.log(k1) - math.log(k0)))
    else:
        k = k_lin
    for digits in (3, 4, 6):
        r = float(f"{k:.{digits}g}")
        if min(k0, k1) < r < max(k0, k1):
            return r
    return float(k)


def _crossings(comparison: Comparison, threat: Threat, best: float | None,
               floor_u: float) -> list[Crossing]:
    """Segments of a swept curve that cross the level where the less private end keeps more
    utility than the private end (:func:`core.runs.compare.utility_at_level` on the segment reads
    it ``interpolated`` exactly then), and more than the floor and the best answer so far."""
    out = []
    for c in comparison.defended:
        if c.knob_field is None or len(c.knob) < 2:
            continue
        order = np.argsort(c.knob, kind="stable")
        k, a, u = c.knob[order], threat.sign * c.leakage_mean[order], c.utility_mean[order]
        for i in range(len(k) - 1):
            seg = slice(i, i + 2)
            m = utility_at_level(k[seg], a[seg], u[seg], threat.sign * threat.level)
            if m.how != "interpolated" or m.knob is None:
                continue
            upper = float(np.nanmax(u[seg]))
            if upper < floor_u or (best is not None and upper <= best):
                continue
            out.append(Crossing(c.name, c.defense, c.symbol, (float(k[i]), float(k[i + 1])),
                                _knob_between(c, float(k[i]), float(k[i + 1]), m.knob),
                                float(m.utility), upper))
    return out


def _missing_job(comparison: Comparison, crossings: list[Crossing]) -> ComparisonSpec | None:
    """One comparison of the crossing settings only (each curve's spec with those knob values
    as its grid; the comparison's seeds, base and executor)."""
    if not crossings:
        return None
    specs: list[DefenseSpec] = []
    for c in comparison.defended:
        vals = sorted({x.knob for x in crossings if x.curve == c.name})
        if not vals:
            continue
        own = next((d for d in comparison.spec.defenses if d.name == c.name), None)
        if own is None:
            own = DefenseSpec.of(c.defense, label=None, **c.params)
        specs.append(replace(own, grid=tuple(vals)))
    return replace(comparison.spec, defenses=tuple(specs))


def advise(comparison: Comparison, *, threat: Threat, floor: Floor) -> Advice:
    """The advisor's answer on ``comparison`` (module docstring). Raises a one-line
    ValueError naming the field when the threat's family or metric is not the comparison's,
    or the floor is outside the utility's range or needs an undefended point it lacks."""
    if not isinstance(comparison, Comparison):
        raise TypeError(f"comparison: got {type(comparison).__name__}; expected a "
                        "core.runs.compare.Comparison")
    spec = comparison.spec
    if threat.family != spec.family:
        raise ValueError(f"threat.family: got {threat.family!r}; this comparison is of "
                         f"{spec.family!r}")
    if threat.metric != spec.privacy:
        raise ValueError(f"threat.metric: got {threat.metric!r}; this comparison measures "
                         f"{spec.privacy!r} (read it with privacy={threat.metric!r})")
    base = comparison.undefended
    base_u = float(base.utility_mean[0]) if base is not None else None
    base_a = float(base.leakage_mean[0]) if base is not None else None
    if floor.share:
        if base_u is None or not math.isfinite(base_u):
            raise ValueError("floor: a share needs the undefended utility; this comparison has "
                             "no undefended point (give an absolute floor: share=False)")
        floor_u = floor.value * base_u
    else:
        lo, hi = metric_range(spec.utility)
        floor_u = check_range("floor", floor.value, lo, hi,
                              note=f"{S.get(spec.utility).unit} of {spec.utility}")
    picks = _picks(comparison, threat)
    at_level = [p for p in picks if threat.meets(p.privacy) and math.isfinite(p.utility)]
    feasible = sorted((p for p in at_level if p.utility >= floor_u),
                      key=lambda p: (-p.utility, threat.sign * p.privacy))
    chosen = feasible[0] if feasible else None
    runner = next((p for p in feasible if p.curve != chosen.curve), None) if chosen else None
    test = _paired(comparison, chosen, runner) if chosen and runner else None
    closest = None
    if chosen is None and at_level:
        status: Status = "floor_unmet"
        closest = max(at_level, key=lambda p: p.utility)
    elif chosen is None:
        status = "level_unreached"
        finite = [p for p in picks if math.isfinite(p.privacy)]
        closest = min(finite, key=lambda p: threat.sign * p.privacy) if finite else None
    else:
        status = "met"
    crossings = _crossings(comparison, threat, chosen.utility if chosen else None, floor_u)
    advice = Advice(threat=threat, floor=floor, utility_metric=spec.utility,
                    floor_utility=float(floor_u), baseline_utility=base_u,
                    baseline_privacy=base_a, status=status, chosen=chosen, runner_up=runner,
                    test=test, closest=closest, crossings=tuple(crossings),
                    missing=_missing_job(comparison, crossings), seeds=len(spec.seeds))
    return replace(advice, sentence=_sentence(advice))


# ---------------------------------------------------------------------------------------------
# the answer in words


def _f(v: float) -> str:
    return f"{v:.3f}"


def _short(name: str) -> str:
    """A curve's name without its parenthesised detail (``κ channel (data-space noise) ·
    white`` -> ``κ channel · white``)."""
    return re.sub(r"\s*\([^)]*\)", "", name).strip() or name


def _label(p: Pick | Crossing) -> str:
    if isinstance(p, Crossing):
        return f"{_short(p.curve)} at {p.symbol} ≈ {p.knob:g}"
    return _short(p.curve) + (f" at {p.setting}" if p.setting else "")


def _sentence(a: Advice) -> str:
    t = a.threat
    metric, util = _words(t.metric), _words(a.utility_metric)
    goal = f"{metric} {t.relation} {t.level:g}"
    floor = (f"utility ({util}) ≥ {_f(a.floor_utility)}"
             + (f", {a.floor.value * 100:g} % of the undefended {_f(a.baseline_utility)}"
                if a.floor.share and a.baseline_utility is not None else ""))
    parts: list[str] = [f"Threat: {goal}; floor: {floor}."]
    if a.status == "met" and a.chosen is not None:
        c = a.chosen
        what = "No defense is needed: the undefended model" if c.baseline else \
            f"Use {_label(c)}: it"
        parts.append(f"{what} keeps utility {_f(c.utility)} at {_f(c.privacy)} (seed means "
                     f"over {c.seeds} seeds{'; on the Pareto front' if c.on_front else ''}).")
        r = a.runner_up
        if r is None:
            parts.append("No other curve meets both.")
        else:
            parts.append(f"Runner-up: {_label(r)}, utility {_f(r.utility)} at {_f(r.privacy)}.")
            parts.append(_test_words(a.test, a.chosen, r))
    elif a.status == "floor_unmet" and a.closest is not None:
        c = a.closest
        parts.append(f"Settings reach the level, but none keeps the floor: the most useful of "
                     f"them, {_label(c)}, keeps utility {_f(c.utility)} "
                     f"({_f(a.floor_utility - c.utility)} below the floor) at {_f(c.privacy)}.")
    elif a.closest is not None:
        c = a.closest
        parts.append(f"No setting reaches the level: the closest, {_label(c)}, is at "
                     f"{_f(c.privacy)} ({c.privacy - t.level:+.3f} from the level) with utility "
                     f"{_f(c.utility)}.")
    else:
        parts.append(f"No point of this comparison reports {metric}.")
    x = a.best_crossing
    if x is not None:
        parts.append(f"Interpolating between the measured {x.symbol} = {x.between[0]:g} and "
                     f"{x.between[1]:g}, {_label(x)} would keep about {_f(x.utility)} "
                     f"(interpolated: run this point to confirm).")
        n = len(a.crossings)
        parts.append(f"Missing points: {n} setting{'s' if n > 1 else ''} between measured ones "
                     f"that could cross the level × {a.seeds} seed{'s' if a.seeds > 1 else ''} "
                     f"= {counted(a.missing_points, 'run')} in one comparison job.")
    elif a.status != "met":
        parts.append("No measured segment crosses the level with room above the floor: "
                     "widen the knob grids towards the private end.")
    return " ".join(parts)


def _test_words(test: PairedTest | None, a: Pick, b: Pick) -> str:
    if test is None or test.seeds == 0:
        return "The two share no seed: no paired test."
    diff = f"the difference {test.mean_diff:+.3f}"
    if test.seeds == 1:
        return f"{diff[0].upper()}{diff[1:]} rests on 1 shared seed: no paired test."
    how = f"paired-seed dominance test over the {test.seeds} seeds both share, ± {Z:g} s.e. " \
          f"= ± {Z * test.se:.3f}"
    if test.significant:
        winner = _short(a.curve if test.verdict == "A" else b.curve)
        return f"{diff[0].upper()}{diff[1:]} survives the {how} ({winner} ahead)."
    return f"{diff[0].upper()}{diff[1:]} does not survive the {how}: a tie within seed noise."
