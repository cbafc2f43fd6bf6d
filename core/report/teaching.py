"""Teaching sweeps and measured lessons (issue #20, item 1).

Each page with a privacy knob declares its *teaching sweep* (:class:`TeachingSweep`): the
page's default config, the knob and its teaching grid read from the registered part
(:meth:`core.foundation.parts.Knob.teaching_grid`, as the page's family shows it), a few seeds, the page's
main privacy metric (first of :attr:`TeachingSweep.privacy`), further attackers worth a line,
and its utility metric. :func:`lesson` turns the stored points of that sweep into sentences:
every number comes from the Results, with a 95 % interval (:func:`estimate`), and each move
says whether it exceeds the intervals at both ends. Where a measurement contradicts what a
paper claims (:data:`CLAIMS`: the direction each paper claims, nothing measured), the lesson
says so with both numbers. :func:`compare_lesson` does the same for the Compare page's
teaching preset (a :class:`core.runs.compare.Comparison`).

One source of figures: :func:`figures` (:func:`compare_figures` on Compare) reads the stored
points once; the lesson's sentences (:func:`lesson_from`) and the figures table the page shows
beside them (:meth:`Figures.rows`) are both written from it, the main measure being the page's
strongest attacker (its headline attack, :data:`core.foundation.metric_schema.HEADLINES`), and
:func:`check_numbers` finds any number of a lesson the table does not show.

Pure functions over Results: a page or a benchmark hands in ``get(config) -> Result | None``
(the store's ``peek``); nothing here runs or stores.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from core.foundation import metric_schema
from core.foundation.parts import DEFENSES, Knob

#: the normal 95 % quantile (intervals over a few seeds are a normal approximation)
Z95 = 1.959964


@dataclass(frozen=True)
class Measure:
    """A metric a lesson reads: its name in :mod:`core.foundation.metric_schema` and the words it goes by."""

    metric: str
    words: str


@dataclass(frozen=True)
class Claim:
    """What a paper claims about a metric when the knob moves to its more private end:
    ``"down"`` (falls) or ``"chance"`` (falls to its chance level)."""

    paper: str
    metric: str
    expect: str
    text: str
    #: the registered defense the claim is about (None: any); a page whose settings teach
    #: another defense's knob (DP-SGD on the κ page) is not checked against this claim
    defense: str | None = None


@dataclass(frozen=True)
class TeachingSweep:
    """A page's teaching sweep: ``base`` (the page's default config; a page hands in its current
    one through :meth:`with_base`), the registered ``defense`` whose knob (as ``family``'s page
    shows it) is swept over its teaching grid (``grid`` overrides it; ``dim_scaled``: the grid
    is κ/d, multiplied by the data dimension), the ``seeds``, the ``privacy`` measures (the
    first is the page's main one), the ``utility`` measure and an optional ``reference``
    defense block (the undefended run the ratios are measured against)."""

    page: str
    title: str
    defense: str
    family: str
    base: Mapping[str, Any]
    privacy: tuple[Measure, ...]
    utility: Measure
    seeds: tuple[int, ...] = (0, 1)
    grid: tuple[float, ...] | None = None
    dim_scaled: bool = False
    reference: Mapping[str, Any] | None = None
    block: Mapping[str, Any] = field(default_factory=dict)
    #: block fields the knob replaces (FIL's σ and ε when the knob is the target η): nulled
    clear: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        return str(self.base["kind"])

    @property
    def knob(self) -> Knob:
        knob = DEFENSES.get(self.defense).knob
        if knob is None:
            raise ValueError(f"defense: got {self.defense!r}, which has no privacy knob")
        return knob.for_family(self.family)

    def values(self, dim: int | None = None) -> tuple[float, ...]:
        """The knob values swept (κ/d × ``dim`` when :attr:`dim_scaled`)."""
        grid = self.grid if self.grid is not None else self.knob.teaching_grid()
        if self.dim_scaled:
            if not dim:
                raise ValueError("dim: a κ/d grid needs the data dimension d")
            return tuple(float(f"{g * dim:.6g}") for g in grid)
        return tuple(float(g) for g in grid)

    def with_base(self, config: Mapping[str, Any]) -> TeachingSweep:
        """This sweep over ``config`` (a page's current settings). When ``config`` runs another
        defense of this family that has a knob, the lesson is that knob's (its teaching grid);
        when it runs this defense, its block's other fields are kept."""
        cfg = copy.deepcopy(dict(config))
        if cfg.get("target"):
            raise ValueError("target: a model trained elsewhere; no defense applies to it, so "
                             "there is no knob to sweep")
        kind = (cfg.get("defense") or {}).get("kind")
        part = DEFENSES.get(kind) if kind in DEFENSES else None
        if (kind != self.defense and part is not None and part.knob is not None
                and self.family in part.families):
            # the page runs another defense with a knob: its lesson is that knob's sweep
            return replace(self, base=cfg, defense=kind, grid=None, dim_scaled=False, block={},
                           clear=())
        return replace(self, base=cfg)

    @property
    def variant(self) -> str | None:
        """The variant the knob is swept on (the κ channel's ``channel``: the part's registered
        ``variants`` field in the swept block), None when the defense has none."""
        field_name = DEFENSES.get(self.defense).page.variants
        value = self.defense_block().get(field_name) if field_name else None
        return None if value is None else str(value)

    @property
    def variant_words(self) -> str:
        """``"the White channel"`` (empty without a variant): what the lesson names."""
        field_name = DEFENSES.get(self.defense).page.variants
        v = self.variant
        return "" if v is None else f"the {v.capitalize()} {field_name}"

    def defense_block(self) -> dict[str, Any]:
        cur = dict(self.base.get("defense") or {})
        if cur.get("kind") == self.defense:
            return {**cur, **{k: v for k, v in self.block.items() if k not in cur}}
        return {"kind": self.defense, **dict(self.block)}

    def point_config(self, value: float, seed: int) -> dict[str, Any]:
        cfg = copy.deepcopy(dict(self.base))
        cfg["defense"] = {**self.defense_block(), **dict.fromkeys(self.clear),
                          self.knob.field: float(value)}
        cfg["seed"] = int(seed)
        return cfg

    def reference_configs(self) -> list[dict[str, Any]]:
        if self.reference is None:
            return []
        out = []
        for s in self.seeds:
            cfg = copy.deepcopy(dict(self.base))
            cfg["defense"], cfg["seed"] = dict(self.reference), int(s)
            out.append(cfg)
        return out

    def sweep_config(self, dim: int | None = None) -> dict[str, Any]:
        """The sweep (``kind: sweep``, :mod:`core.config.sweeps`): the knob's grid × seeds over the
        base, each point stored under its own key."""
        base = copy.deepcopy(dict(self.base))
        base["defense"] = {**self.defense_block(), **dict.fromkeys(self.clear)}
        base.pop("seed", None)
        return {"kind": "sweep", "base": base,
                "grid": {f"defense.{self.knob.field}": list(self.values(dim))},
                "seeds": [int(s) for s in self.seeds], "executor": "serial"}

    def job_configs(self, dim: int | None = None) -> list[dict[str, Any]]:
        """What the "Run the teaching sweep" button queues as one job: the sweep, then the
        reference runs (if any)."""
        return [self.sweep_config(dim), *self.reference_configs()]


# ---------------------------------------------------------------------------------------------
# estimates with intervals


@dataclass(frozen=True)
class Estimate:
    """A metric at one knob value over seeds: the seed mean, its 95 % interval and ``n`` seeds.

    An approximate 95 % interval of the seed mean: 1.96·√(v/n), v the larger of the runs' own
    variance (from their intervals: sampling of the scored records) and the seeds' sample
    variance (training randomness too). With two or three seeds the spread is itself rough, so
    the interval is a normal approximation, not a Student-t one. A single seed without an
    interval has ``lo == hi == value`` and ``has_interval`` False."""

    value: float
    lo: float
    hi: float
    n: int
    has_interval: bool

    def overlaps(self, other: Estimate) -> bool:
        return not (self.hi < other.lo or other.hi < self.lo)

    def text(self, digits: int = 2) -> str:
        if not self.has_interval:
            return f"{self.value:.{digits}f}"
        return f"{self.value:.{digits}f} ± {(self.hi - self.lo) / 2:.{digits}f}"


def estimate(values: Sequence[float], intervals: Sequence[tuple[float, float] | None]
             ) -> Estimate | None:
    """:class:`Estimate` of per-seed ``values`` and their runs' intervals (None: no value)."""
    pairs = [(float(v), iv) for v, iv in zip(values, intervals, strict=True)
             if v is not None and math.isfinite(float(v))]
    if not pairs:
        return None
    n = len(pairs)
    mean = sum(v for v, _ in pairs) / n
    halves = [(float(iv[1]) - float(iv[0])) / 2 for _, iv in pairs
              if iv is not None and all(math.isfinite(float(x)) for x in iv)]
    # per-run variance: the larger of the runs' own (sampling of the scored records) and the
    # seeds' spread (training randomness too); the mean of n runs then has var / n
    own = sum((h / Z95) ** 2 for h in halves) / len(halves) if halves else 0.0
    spread = sum((v - mean) ** 2 for v, _ in pairs) / (n - 1) if n >= 2 else 0.0
    half = Z95 * math.sqrt(max(own, spread) / n)
    return Estimate(mean, mean - half, mean + half, n, bool(halves) or n >= 2)


def _metric(result: Any, name: str) -> float | None:
    v = (result.metrics or {}).get(name)
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def _interval(result: Any, name: str) -> tuple[float, float] | None:
    iv = result.interval(name) if hasattr(result, "interval") else None
    if iv is None or not all(math.isfinite(float(x)) for x in iv):
        return None
    return float(iv[0]), float(iv[1])


def estimate_of(results: Sequence[Any], name: str) -> Estimate | None:
    """:func:`estimate` of metric ``name`` over ``results`` (one per seed)."""
    return estimate([_metric(r, name) for r in results], [_interval(r, name) for r in results])


# ---------------------------------------------------------------------------------------------
# the papers' claims (directions only: nothing measured is written here)

CLAIMS: dict[str, tuple[Claim, ...]] = {
    "attribute_privacy": (
        Claim("TAPPFL", "attack_in_training_bacc", "chance",
              "TAPPFL claims its in-training adversary is pushed to chance as λ grows", "tappfl"),
        Claim("TAPPFL", "attack_auc_best", "down",
              "TAPPFL claims attribute privacy against inference attacks as λ grows", "tappfl")),
    "membership": (
        Claim("DP-SGD (Abadi et al.)", "mia_auc_best", "down",
              "DP theory bounds membership inference more tightly at smaller ε", "dp_sgd"),),
    "property": (
        Claim("Inf2Guard", "property_acc_best", "down",
              "Inf2Guard claims its defense protects against property inference by fresh "
              "attackers at every λ > 0", "inf2guard_property"),),
    "reconstruction": (
        Claim("κ channel (Theorem 1)", "recon_best_psnr_median", "down",
              "the channel paper bounds reconstruction quality more tightly at smaller κ",
              "channel"),),
    "repr_reconstruction": (
        Claim("Inf2Guard", "recon_decoder_fresh_ssim", "down",
              "Inf2Guard claims its perturbation defeats reconstruction as ε grows",
              "inf2guard_dra"),),
    "fisher_information": (
        Claim("FIL (Hannun et al.)", "fil_attack_acc_best", "down",
              "the FIL paper bounds attribute reconstruction more tightly at smaller η",
              "fil_output_perturbation"),),
    "compare": (
        Claim("Inf2Guard", "mia_auc_best", "utility_above",
              "Inf2Guard claims more utility than DP-SGD at equal membership-attack success"),),
}


# ---------------------------------------------------------------------------------------------
# the lesson


@dataclass
class End:
    """One end of the knob: its value, each measure's :class:`Estimate` (None: not stored) and
    chance level."""

    knob: float
    estimates: dict[str, Estimate | None]
    chance: dict[str, float | None]
    #: the strongest attacker the runs name (the page's rule: the engine's pick by its
    #: headline metric; "a or b" when the seeds pick differently), None when none is named
    strongest: str | None = None


@dataclass
class Lesson:
    """A page's measured lesson: ``sentences`` to show, the two ``ends`` (least and most
    private), whether the main privacy move ``exceeds`` the intervals, and the
    ``contradictions`` of a paper's claim (sentences too). ``missing`` counts points of the
    sweep not stored yet; ``ready`` is False when an end has no point."""

    page: str
    sentences: list[str]
    ends: tuple[End, End] | None
    exceeds: bool | None
    contradictions: list[str]
    missing: int
    total: int
    ratio: float | None = None

    @property
    def ready(self) -> bool:
        return self.ends is not None

    def summary(self, spec: TeachingSweep) -> dict[str, Any]:
        """The lesson as plain data (benchmarks/lessons_bench.py): the main privacy metric and
        utility at both ends with intervals, and whether the move exceeds them."""
        if self.ends is None:
            return {"ready": False, "missing": self.missing, "total": self.total}
        main, util = spec.privacy[0].metric, spec.utility.metric
        out: dict[str, Any] = {"ready": True, "knob": spec.knob.field, "symbol": spec.knob.symbol,
                               "privacy_metric": main, "utility_metric": util,
                               "exceeds_intervals": self.exceeds, "missing": self.missing,
                               "total": self.total, "sentences": self.sentences,
                               "contradictions": self.contradictions}
        for tag, end in zip(("less_private", "more_private"), self.ends, strict=True):
            out[tag] = {"knob": end.knob,
                        **{m: _est_dict(end.estimates.get(m)) for m in (main, util)}}
        if self.ratio is not None:
            out["utility_ratio_above_majority"] = self.ratio
        return out


def _est_dict(e: Estimate | None) -> dict[str, Any] | None:
    if e is None:
        return None
    return {"value": round(e.value, 4), "lo": round(e.lo, 4), "hi": round(e.hi, 4), "n": e.n}


def _fmt_knob(v: float) -> str:
    return "∞" if math.isinf(v) else f"{v:g}"


def _chance(results: Sequence[Any], name: str) -> float | None:
    if not metric_schema.is_registered(name):
        return None
    vals = [metric_schema.chance_value(name, r.metrics) for r in results]
    vals = [float(v) for v in vals if v is not None and math.isfinite(float(v))]
    return sum(vals) / len(vals) if vals else None


def _at_chance(e: Estimate, c: float | None) -> bool:
    return c is not None and e.has_interval and e.lo <= c <= e.hi


def _move(words: str, a: Estimate, b: Estimate, ca: float | None, cb: float | None,
          verb_from: str) -> tuple[str, bool]:
    """``"<verb> <words> from A to B (chance)"`` and whether the move exceeds the intervals."""
    exceeds = a.has_interval and b.has_interval and not a.overlaps(b)
    if exceeds:
        verb = "lowers" if b.value < a.value else "raises"
    else:
        verb = "leaves"
    tail_b = " (chance)" if _at_chance(b, cb) else ""
    tail_a = " (chance)" if _at_chance(a, ca) else ""
    if exceeds:
        return (f"{verb_from} {verb} {words} from {a.text()}{tail_a} to {b.text()}{tail_b}, "
                "beyond the 95 % intervals"), True
    if not (a.has_interval and b.has_interval):
        return (f"{verb_from} moves {words} from {a.text()}{tail_a} to {b.text()}{tail_b} "
                "(one seed and no interval: whether it exceeds the noise is not measured)"), False
    return (f"{verb_from} leaves {words} within the 95 % intervals ({a.text()}{tail_a} → "
            f"{b.text()}{tail_b}): no measurable move"), False


#: the ``info`` keys under which each kind's runs name their strongest attacker
STRONGEST_KEYS = ("best_attacker", "best_attack", "best_inverter", "strongest_attack")


def _strongest(results: Sequence[Any]) -> str | None:
    """The strongest attacker the runs name (``"logreg or mlp"`` when the seeds' picks
    differ; None: none named)."""
    names = sorted({str(v) for r in results for k in STRONGEST_KEYS
                    if (v := (getattr(r, "info", None) or {}).get(k))})
    return " or ".join(names) if names else None


@dataclass
class Figures:
    """The figures a page's lesson and its figures table both read (one source): the two ends
    of the knob (:class:`End`: each measure's seed mean with its 95 % interval, chance, the
    strongest attacker), the utility cost between them, the undefended reference and the best
    share of it kept above the majority class, and how many sweep points are stored."""

    page: str
    symbol: str
    measures: tuple[Measure, ...]
    utility: Measure
    ends: tuple[End, End] | None
    missing: int
    total: int
    #: the undefended reference's utility and majority-class rate (None: no reference stored)
    reference: Estimate | None = None
    majority: float | None = None
    #: the best (acc − majority) / (undefended − majority) over the stored grid and its knob
    ratio: float | None = None
    ratio_at: float | None = None

    @property
    def main(self) -> Measure:
        return self.measures[0]

    def cost(self) -> float | None:
        """Utility at the less private end minus at the more private end (None: not stored)."""
        if self.ends is None:
            return None
        ua, ub = (e.estimates.get(self.utility.metric) for e in self.ends)
        return None if ua is None or ub is None else ua.value - ub.value

    def rows(self) -> list[dict[str, str]]:
        """The figures as the page's table shows them: one row per measure with its value at
        both ends (:meth:`Estimate.text`, the lesson's format), chance and the strongest
        attacker; then the utility cost, the reference and the stored points."""
        if self.ends is None:
            return [{"figure": "teaching sweep points not stored", "value": f"{self.missing} "
                     f"of {self.total}"}]
        a, b = self.ends
        ka, kb = (f"{self.symbol} = {_fmt_knob(e.knob)}" for e in self.ends)
        rows = []
        for m in (*self.measures, self.utility):
            ea, eb = a.estimates.get(m.metric), b.estimates.get(m.metric)
            if ea is None and eb is None:
                continue
            ch = b.chance.get(m.metric)
            row = {"figure": m.words, ka: ea.text() if ea else "—", kb: eb.text() if eb else "—",
                   "chance": "" if ch is None else f"{ch:.2f}"}
            if m is self.main:
                row["strongest attacker"] = " → ".join(s or "—" for s in (a.strongest,
                                                                           b.strongest))
            rows.append(row)
        cost = self.cost()
        if cost is not None:
            rows.append({"figure": f"utility {'cost' if cost > 0 else 'gain'}",
                         ka: "", kb: f"{abs(cost):.2f}"})
        if self.reference is not None and self.majority is not None:
            rows.append({"figure": f"undefended {self.utility.words}",
                         "value": self.reference.text(), "chance": f"{self.majority:.2f}"})
        if self.ratio is not None:
            rows.append({"figure": "best share of it kept above the majority class",
                         "value": f"{self.ratio:.0%} ({self.symbol} = "
                                  f"{_fmt_knob(self.ratio_at)})"})
        if self.missing:
            rows.append({"figure": "teaching sweep points not stored",
                         "value": f"{self.missing} of {self.total}"})
        return rows


def figures(spec: TeachingSweep, get: Callable[[Mapping[str, Any]], Any | None],
            dim: int | None = None) -> Figures:
    """The page's figures from the stored points of ``spec`` (``get(config)``: the store's
    ``peek``): what :func:`lesson` says and the page's figures table shows."""
    knob = spec.knob
    values = spec.values(dim)
    by_value: dict[float, list[Any]] = {}
    missing = total = 0
    for v in values:
        for s in spec.seeds:
            total += 1
            r = get(spec.point_config(v, s))
            if r is None:
                missing += 1
            else:
                by_value.setdefault(v, []).append(r)
    refs = [r for c in spec.reference_configs() if (r := get(c)) is not None]
    total += len(spec.reference_configs())
    missing += len(spec.reference_configs()) - len(refs)
    out = Figures(spec.page, knob.symbol, tuple(spec.privacy), spec.utility, None, missing, total)
    # least private end first: the knob moves toward privacy
    order = sorted(values, reverse=knob.more_private == "lower")
    have = [v for v in order if by_value.get(v)]
    if len(have) < 2:
        return out
    names = [m.metric for m in (*spec.privacy, spec.utility)]
    out.ends = tuple(End(v, {n: estimate_of(by_value[v], n) for n in names},
                         {n: _chance(by_value[v], n) for n in names}, _strongest(by_value[v]))
                     for v in (have[0], have[-1]))
    if refs:
        _reference(out, spec, by_value, refs, values)
    return out


def _reference(fig: Figures, spec: TeachingSweep, by_value: Mapping[float, list[Any]],
               refs: Sequence[Any], values: Sequence[float]) -> None:
    """The best utility kept relative to the undefended reference above the majority class,
    ((acc − majority) / (undefended − majority)), over the stored grid points."""
    util = spec.utility.metric
    ref = estimate_of(refs, util)
    maj = [m for r in refs if (m := _metric(r, "utility_majority")) is not None]
    if ref is None or not maj:
        return
    m = sum(maj) / len(maj)
    fig.reference, fig.majority = ref, m
    if ref.value - m <= 0:
        return
    for v in values:
        e = estimate_of(by_value.get(v, []), util)
        if e is None:
            continue
        r = (e.value - m) / (ref.value - m)
        if fig.ratio is None or r > fig.ratio:
            fig.ratio, fig.ratio_at = r, v


def lesson(spec: TeachingSweep, get: Callable[[Mapping[str, Any]], Any | None],
           dim: int | None = None) -> Lesson:
    """The measured lesson of ``spec`` from the stored points (``get(config)``: the store's
    ``peek``), every number read from :func:`figures`. Both ends of the grid need at least one
    seed stored; otherwise the lesson says how many points are missing and ``ready`` is
    False."""
    return lesson_from(spec, figures(spec, get, dim))


def lesson_from(spec: TeachingSweep, fig: Figures) -> Lesson:
    """The sentences of :func:`lesson` from the page's :class:`Figures`."""
    knob = spec.knob
    missing, total = fig.missing, fig.total
    if fig.ends is None:
        word = "point" if missing == 1 else "points"
        on = f" ({knob.symbol} on {spec.variant_words})" if spec.variant_words else ""
        msg = (f"The teaching sweep{on} is not stored yet ({missing} of {total} {word} missing): "
               "run it to measure this page's lesson.")
        return Lesson(spec.page, [msg], None, None, [], missing, total)
    ends = fig.ends
    a, b = ends
    lo_v, hi_v = a.knob, b.knob
    sym = knob.symbol
    verb_from = f"moving {sym} from {_fmt_knob(lo_v)} to {_fmt_knob(hi_v)} (more private)"
    if knob.more_private == "higher":
        verb_from = f"raising {sym} from {_fmt_knob(lo_v)} to {_fmt_knob(hi_v)}"
    elif knob.more_private == "lower":
        verb_from = f"lowering {sym} from {_fmt_knob(lo_v)} to {_fmt_knob(hi_v)}"
    if spec.variant_words:  # κ per channel: the lesson is this channel's
        verb_from += f" on {spec.variant_words}"
    sentences: list[str] = []
    main = spec.privacy[0]
    ea, eb = a.estimates[main.metric], b.estimates[main.metric]
    exceeds: bool | None = None
    if ea is None or eb is None:
        sentences.append(f"The runs report no {main.words} ({main.metric}).")
    else:
        words = main.words
        if a.strongest or b.strongest:  # name the attacker the figures table names
            who = (a.strongest if a.strongest == b.strongest else
                   " → ".join(s or "—" for s in (a.strongest, b.strongest)))
            words += f" ({who})"
        text, exceeds = _move(words, ea, eb, a.chance[main.metric], b.chance[main.metric],
                              verb_from)
        ua, ub = a.estimates[spec.utility.metric], b.estimates[spec.utility.metric]
        cost = fig.cost()
        if cost is not None:
            what = "costs" if cost > 0 else "gains"
            if not (ua.has_interval and ub.has_interval):
                how = ", one seed: no interval"
            else:
                how = "" if not ua.overlaps(ub) else ", within the intervals"
            text += (f"; it {what} {abs(cost):.2f} in utility ({spec.utility.words} {ua.text()} → "
                     f"{ub.text()}{how})")
        sentences.append(text[0].upper() + text[1:] + ".")
    for m in spec.privacy[1:]:
        xa, xb = a.estimates[m.metric], b.estimates[m.metric]
        if xa is None or xb is None:
            continue
        at = " (chance)" if _at_chance(xb, b.chance[m.metric]) else ""
        if not (xa.has_interval and xb.has_interval):
            how = "no interval"
        else:
            how = "within the intervals" if xa.overlaps(xb) else "beyond the intervals"
        sentences.append(f"At {sym} = {_fmt_knob(hi_v)}, {m.words} reads {xb.text()}{at} "
                         f"(at {sym} = {_fmt_knob(lo_v)}: {xa.text()}; {how}).")
    if fig.reference is not None and fig.majority is not None and fig.ratio is not None:
        sentences.append(f"Undefended, {spec.utility.words} is {fig.reference.text()} (majority "
                         f"class {fig.majority:.2f}); the defense keeps at best {fig.ratio:.0%} "
                         f"of it above the majority class ({sym} = {_fmt_knob(fig.ratio_at)}).")
    words = {m.metric: m.words for m in spec.privacy}
    contradictions = _contradictions(spec.page, ends, sym, lo_v, hi_v, words, spec.defense)
    sentences += contradictions
    if missing:
        sentences.append(f"({missing} of {total} points of the teaching sweep not stored yet: "
                         "the intervals narrow as the sweep completes.)")
    return Lesson(spec.page, sentences, ends, exceeds, contradictions, missing, total, fig.ratio)


def _contradictions(page: str, ends: tuple[End, End], sym: str, lo_v: float,
                    hi_v: float, words: Mapping[str, str], defense: str | None = None
                    ) -> list[str]:
    out = []
    a, b = ends
    for c in CLAIMS.get(page, ()):
        if c.defense is not None and defense is not None and c.defense != defense:
            continue  # a claim about another defense than the one swept
        ea, eb = a.estimates.get(c.metric), b.estimates.get(c.metric)
        if ea is None or eb is None or c.expect not in ("down", "chance"):
            continue
        nums = (f"{words.get(c.metric, c.metric)} {ea.text()} at {sym} = {_fmt_knob(lo_v)}, {eb.text()} at "
                f"{sym} = {_fmt_knob(hi_v)}")
        separated = ea.has_interval and eb.has_interval and not ea.overlaps(eb)
        if separated and eb.value > ea.value:
            out.append(f"This contradicts {c.paper}: {c.text}, but here the metric rises "
                       f"({nums}).")
        elif not separated:
            out.append(f"This does not confirm {c.paper}: {c.text}, but the move is within the "
                       f"intervals ({nums}).")
        elif c.expect == "chance":
            ch = b.chance.get(c.metric)
            if ch is not None and eb.has_interval and eb.lo > ch:
                out.append(f"{c.paper} claims more: {c.text}; here it falls but stays above "
                           f"chance {ch:.2f} ({nums}).")
    return out


@dataclass(frozen=True)
class CurveEnds:
    """One defended curve of a comparison at both ends of its grid (least private first):
    seed means with 95 % intervals of the privacy metric (``leak``) and utility."""

    name: str
    symbol: str
    knob: tuple[float, float]
    leak: tuple[Estimate, Estimate]
    utility: tuple[Estimate, Estimate]


@dataclass(frozen=True)
class LevelPick:
    """The equal-privacy row a lesson reads: the strictest attack level (of the page's table,
    :meth:`core.runs.compare.Comparison.table`) that both defenses of a claim reach, each one's
    utility there (seed means, as the table shows them) and the knob setting it is read at,
    and whether a defense reaches the level only at the least private end of its grid (for
    Inf2Guard λ = 0: no defense at all)."""

    level: float
    who: str
    over: str
    u_who: float
    u_over: float
    knob_who: float | None
    knob_over: float | None
    #: defenses whose utility at the level is read at the least private end of their grid
    at_end: tuple[str, ...]
    #: the symbols and least-private knob values of both (for the sentence)
    ends: dict[str, tuple[str, float]]
    #: names of the defenses that reach some stricter level of the table alone
    stricter_alone: tuple[str, ...] = ()
    #: those of :attr:`at_end` that reach the level at no other setting of their grid
    only_end: tuple[str, ...] = ()


@dataclass
class CompareFigures:
    """The figures the Compare page's lesson and its figures table read: :class:`CurveEnds`
    per defended curve and the equal-privacy :class:`LevelPick` of the first utility claim the
    parts declare (Inf2Guard over DP-SGD)."""

    curves: list[CurveEnds]
    pick: LevelPick | None
    words: str

    def rows(self) -> list[dict[str, str]]:
        rows = []
        for c in self.curves:
            rows.append({"figure": c.name, "knob": f"{c.symbol} {_fmt_knob(c.knob[0])} → "
                         f"{_fmt_knob(c.knob[1])}",
                         self.words: f"{c.leak[0].text()} → {c.leak[1].text()}",
                         "utility": f"{c.utility[0].text()} → {c.utility[1].text()}"})
        p = self.pick
        if p is not None:
            for name, u, k in ((p.who, p.u_who, p.knob_who), (p.over, p.u_over, p.knob_over)):
                sym = p.ends[name][0]
                rows.append({"figure": f"{name} at attack level ≤ {_fmt_level(p.level)}",
                             "knob": "" if k is None else f"{sym} = {_fmt_knob(k)}",
                             self.words: "", "utility": f"{u:.3f}"})
        return rows


def _fmt_level(level: float) -> str:
    """An equal-privacy level as the page's table prints it (rounded to 4 decimals)."""
    return f"{round(float(level), 4):g}"


def _curve_ends(c: Any, knob: Knob) -> CurveEnds | None:
    idx = sorted(range(len(c.knob)), key=lambda i: c.knob[i], reverse=knob.more_private == "lower")
    i0, i1 = idx[0], idx[-1]

    def est(arr, i, lo=None, hi=None):
        row = [float(x) for x in arr[i]]
        ivs = [None if lo is None or not (math.isfinite(lo[i][j]) and math.isfinite(hi[i][j]))
               else (float(lo[i][j]), float(hi[i][j])) for j in range(len(row))]
        return estimate(row, ivs)

    la, lb = est(c.leakage, i0, c.leak_lo, c.leak_hi), est(c.leakage, i1, c.leak_lo, c.leak_hi)
    ua, ub = est(c.utility, i0), est(c.utility, i1)
    if None in (la, lb, ua, ub):
        return None
    return CurveEnds(c.name, c.symbol, (float(c.knob[i0]), float(c.knob[i1])), (la, lb), (ua, ub))


def _least_private(c: Any) -> float:
    knob = DEFENSES.get(c.defense).knob
    vals = [float(k) for k in c.knob]
    return max(vals) if knob.more_private == "lower" else min(vals)


def _level_pick(comparison: Any, a: Any, b: Any) -> LevelPick | None:
    """The strictest level of the page's equal-privacy table both ``a`` and ``b`` reach
    (its rows run from the strictest level up), read from the table's own rows."""
    rows = comparison.table()
    both = [r for r in rows if r.get(a.name) is not None and r.get(b.name) is not None]
    if not both:
        return None
    row = both[0]
    lvl = float(row["level"])
    knobs, at_end, only = {}, [], []
    for c in (a, b):
        knobs[c.name] = c.at_level(lvl).knob
        reach = [float(k) for k, v in zip(c.knob, c.leakage_mean, strict=True)
                 if math.isfinite(float(v)) and float(v) <= lvl]
        if knobs[c.name] == _least_private(c):  # the table's utility is its weakest setting's
            at_end.append(c.name)
            if reach == [_least_private(c)]:
                only.append(c.name)
    stricter = [r for r in rows if float(r["level"]) < lvl]
    alone = tuple(c.name for c in (a, b) if any(r.get(c.name) is not None for r in stricter))
    return LevelPick(lvl, a.name, b.name, float(row[a.name]), float(row[b.name]),
                     knobs[a.name], knobs[b.name], tuple(at_end),
                     {c.name: (c.symbol, _least_private(c)) for c in (a, b)}, alone, tuple(only))


def compare_figures(comparison: Any) -> CompareFigures:
    """The Compare page's figures (:class:`CompareFigures`) from a
    :class:`core.runs.compare.Comparison`: each defense's privacy metric and utility at both ends
    of its grid (seed means with :func:`estimate`'s 95 % intervals: the larger of the runs' own
    bootstrap variance and the seeds' spread, normal quantile; utility from the seeds' spread
    alone) and the equal-privacy row of the first utility claim the parts declare."""
    pname = comparison.spec.privacy
    words = ("the strongest attack's AUC" if pname.endswith("auc_best")
             else metric_schema.get(pname).description)
    curves = []
    for c in comparison.defended:
        if c.knob_field is None or len(c.knob) < 2:
            continue
        ends = _curve_ends(c, DEFENSES.get(c.defense).knob)
        if ends is not None:
            curves.append(ends)
    claims = [(c, o) for c in comparison.defended
              for other in DEFENSES.get(c.defense).paper.outperforms
              for o in comparison.defended if o.defense == other]
    pick = _level_pick(comparison, *claims[0]) if claims else None
    return CompareFigures(curves, pick, words)


def compare_lesson(comparison: Any) -> Lesson:
    """The Compare page's lesson, every number read from :func:`compare_figures`: each
    defense's move between the ends of its grid (a move counted only when the two ends'
    intervals do not overlap), then the utility claim (:data:`CLAIMS`: Inf2Guard over DP-SGD)
    read at the strictest attack level of the equal-privacy table both defenses reach; when one
    reaches it only at the least private end of its grid (Inf2Guard at λ = 0: no defense), the
    lesson says that row does not test the claim."""
    fig = compare_figures(comparison)
    sentences, contradictions = [], []
    exceeds_any: bool | None = None
    first_ends: tuple[End, End] | None = None
    pname, uname = comparison.spec.privacy, comparison.spec.utility
    for c in fig.curves:
        (la, lb), (ua, ub) = c.leak, c.utility
        text, moved = _move(fig.words, la, lb, comparison.chance_leakage,
                            comparison.chance_leakage,
                            f"{c.name}: {c.symbol} {_fmt_knob(c.knob[0])} → {_fmt_knob(c.knob[1])}")
        exceeds_any = bool(exceeds_any) or moved
        sentences.append(f"{text}; utility {ua.text()} → {ub.text()}.")
        if first_ends is None:
            first_ends = (End(c.knob[0], {pname: la, uname: ua}, {}),
                          End(c.knob[1], {pname: lb, uname: ub}, {}))
    p = fig.pick
    if p is not None:
        short = {n: DEFENSES.get(next(c.defense for c in comparison.defended if c.name == n)).short
                 for n in (p.who, p.over)}
        who, over = short[p.who], short[p.over]
        lvl = _fmt_level(p.level)

        def at(name: str, k: float | None) -> str:
            return "" if k is None else f" ({p.ends[name][0]} = {_fmt_knob(k)})"

        keeps = (f"at attack level ≤ {lvl}, the strictest level of the equal-privacy table both "
                 f"reach, {who} keeps {p.u_who:.3f} utility{at(p.who, p.knob_who)} and {over} "
                 f"{p.u_over:.3f}{at(p.over, p.knob_over)} (seed means)")
        alone = [short[n] for n in p.stricter_alone]
        stricter = (f"; at the stricter levels only {' and '.join(alone)} gets there"
                    if len(alone) == 1 else "")
        if p.who in p.at_end:  # the claimant's figure there is its weakest setting's
            names = " and ".join(
                f"{short[n]}{' only' if n in p.only_end else ''} at its least private end "
                f"({p.ends[n][0]} = {_fmt_knob(p.ends[n][1])})" for n in p.at_end)
            sentences.append(f"{keeps[0].upper()}{keeps[1:]}: the table reads {names}, so this "
                             f"row does not test {who}'s claim of more utility than {over} at "
                             f"equal attack success{stricter}.")
        elif p.u_over > p.u_who:
            contradictions.append(
                f"This contradicts {who}: it claims more utility than {over} at equal attack "
                f"success, but {keeps}{stricter}.")
        else:
            sentences.append(f"{keeps[0].upper()}{keeps[1:]}, as {who} claims{stricter}.")
    if not sentences and not contradictions:
        sentences = ["The comparison has no defense with two knob values stored yet."]
    return Lesson("compare", sentences + contradictions, first_ends, exceeds_any,
                  contradictions, 0, comparison.points_run + comparison.points_cached)


# ---------------------------------------------------------------------------------------------
# the pages' teaching sweeps


def _attribute_base() -> dict[str, Any]:
    from core.config.schema import DataSpec
    from core.defenses.tappfl_presets import quick_preset

    # the page's first run: the sidebar's digits with the attribute the page opens on
    # (dashboard/tappfl_settings.py DEFAULT_ATTRIBUTE) and its quick preset
    cfg = quick_preset(DataSpec(name="digits", private_attribute="bold")).model_dump(mode="json")
    cfg["projection_points"] = 300
    return cfg


def _specs() -> dict[str, TeachingSweep]:
    acc = Measure("utility_acc", "test accuracy")
    return {
        "attribute_privacy": TeachingSweep(
            "attribute_privacy", "Attribute privacy", "tappfl", "attribute_privacy",
            _attribute_base(),
            (Measure("attack_auc_best", "the strongest attacker's AUC"),
             Measure("attack_in_training_bacc", "the in-training adversary's balanced accuracy")),
            acc),
        "membership": TeachingSweep(
            "membership", "Membership", "dp_sgd", "membership",
            {"kind": "membership", "data": {"name": "digits"}, "defense": {"kind": "none"},
             # few members, trained long: the undefended model overfits, so the strongest
             # attack reads a threat a class can see before DP-SGD lowers it
             "train": {"members": 150, "epochs": 300},
             "attack": {"attackers": ["loss", "lira_offline", "lira_online", "rmia"],
                        "shadows": 8, "rmia_references": 2, "targets": 8},
             "projection_points": 300},
            (Measure("mia_auc_best", "the strongest attack's AUC"),
             Measure("mia_lira_online_auc", "online LiRA's AUC")), acc,
            seeds=(0, 1), reference={"kind": "none"}),
        "property": TeachingSweep(
            "property", "Property", "inf2guard_property", "property",
            {"kind": "property", "data": {"name": "digits", "private_attribute": "bold"},
             "defense": {"kind": "inf2guard_property", "tradeoff_lambda": 0.75},
             "subsets": {"n_values": 4, "size_min": 8, "size_max": 64, "train_per_bin": 150,
                         "aux_per_bin": 150, "test_per_bin": 75},
             "train": {"epochs": 15}, "projection_points": 200},
            (Measure("property_acc_best", "the strongest property attack's accuracy"),
             Measure("property_in_training_bacc", "the in-training property adversary's "
                     "balanced accuracy")), acc),
        "reconstruction": TeachingSweep(
            "reconstruction", "Reconstruction (gradient leakage)", "channel", "gradient_leakage",
            {"kind": "gradient_leakage", "data": {"name": "digits"},
             "defense": {"kind": "channel", "channel": "natural", "kappa": 5.0,
                         "noise_mode": "redraw"},
             "train": {"model": "mlp", "setting": "central", "epochs": 5},
             "attack": {"attackers": ["idlg"], "targets": 4, "batch_size": 1}},
            (Measure("recon_best_psnr_median", "the strongest inverter's median PSNR (dB)"),),
            acc, grid=(0.01, 0.1, 1.0), dim_scaled=True, block={"channel": "natural"}),
        "repr_reconstruction": TeachingSweep(
            "repr_reconstruction", "Representation reconstruction", "inf2guard_dra",
            "repr_reconstruction",
            {"kind": "repr_reconstruction", "data": {"name": "digits"},
             "defense": {"kind": "inf2guard_dra", "channel": "learned", "epsilon": 1.0,
                         "tradeoff_lambda": 0.4},
             "train": {"epochs": 10}, "attack": {"targets": 50}},
            (Measure("recon_ssim", "the strongest reconstruction's SSIM"),
             Measure("recon_decoder_fresh_ssim", "a fresh decoder's SSIM")), acc),
        "fisher_information": TeachingSweep(
            "fisher_information", "Fisher information", "fil_output_perturbation",
            "fisher_information",
            {"kind": "fisher_information", "data": {"name": "digits"},
             "defense": {"kind": "fil_output_perturbation", "eta_target": 3.0}},
            (Measure("fil_attack_acc_best", "the strongest attribute attack's accuracy"),),
            Measure("fil_utility_acc", "test accuracy"), clear=("sigma", "epsilon")),
    }


#: pages whose lesson is a :class:`TeachingSweep` (Compare's is its preset: :func:`compare_lesson`)
PAGES = ("attribute_privacy", "membership", "property", "reconstruction", "repr_reconstruction",
         "fisher_information")


def teaching_sweep(page: str, config: Mapping[str, Any] | None = None) -> TeachingSweep:
    """The teaching sweep of ``page`` (over ``config``, the page's current settings, when
    given; else its default config). Unknown page: a one-line ValueError."""
    specs = _specs()
    if page not in specs:
        raise ValueError(f"page: got {page!r}; allowed: {', '.join(specs)}")
    spec = specs[page]
    return spec if config is None else spec.with_base(config)


def default_config(page: str) -> dict[str, Any]:
    """The page's default config as its teaching sweep declares it (the page's first run)."""
    return copy.deepcopy(dict(teaching_sweep(page).base))


def _flat(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[prefix + k] = v
    return out


def default_differences(page: str, config: Mapping[str, Any], *,
                        ignore: tuple[str, ...] = ()) -> dict[str, list[Any]]:
    """Fields (dotted) where ``config`` (a page's first run) differs from
    :func:`default_config` (what the lessons measure), both validated: ``field: [config,
    teaching]``; ``ignore``: fields left out."""
    from core.config.schema import parse_config

    a = _flat(parse_config(dict(config)).model_dump(mode="json"))
    b = _flat(parse_config(default_config(page)).model_dump(mode="json"))
    return {k: [a.get(k), b.get(k)] for k in sorted(set(a) | set(b))
            if a.get(k) != b.get(k) and k not in ignore}


def data_dim(config: Mapping[str, Any]) -> int:
    """The data dimension d of ``config``'s image data set (a κ/d grid's scale)."""
    from core.config.schema import DataSpec
    from core.data import load_dataset

    ds = load_dataset(DataSpec(**dict(config.get("data") or {})), int(config.get("seed", 0)))
    shape = getattr(ds, "image_shape", None)
    if shape:
        return int(math.prod(shape))
    import numpy as np

    return int(np.asarray(ds.X).shape[1])


# ---------------------------------------------------------------------------------------------
# every number of a lesson is one of its page's figures

#: a number as a lesson prints it (a value, an interval half-width, a knob value, a count, a
#: share in %); "95 %" in "the 95 % intervals" names the interval, it is no figure
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:e[+-]?\d+)?%?")
_NAMING = re.compile(r"95 % interval")


def numbers(text: str) -> list[str]:
    """The numbers in ``text`` as printed (``"0.64"``, ``"103%"``, ``"1e+03"``)."""
    return _NUMBER.findall(_NAMING.sub("", text))


def check_numbers(sentences: Sequence[str], rows: Sequence[Mapping[str, Any]]
                  ) -> tuple[int, list[str]]:
    """Every number of a lesson's ``sentences`` against its page's figures table ``rows``
    (:meth:`Figures.rows` / :meth:`CompareFigures.rows`, headers included): how many numbers
    were checked, and ``"number in: sentence"`` for each one the table does not show."""
    shown = set(numbers(" ".join(f"{k} {v}" for row in rows for k, v in row.items())))
    checked, bad = 0, []
    for s in sentences:
        for n in numbers(s):
            checked += 1
            if n not in shown:
                bad.append(f"{n} in: {s}")
    return checked, bad
