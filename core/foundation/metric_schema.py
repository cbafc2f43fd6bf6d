"""The one metric schema (DESIGN: Architecture, "One metric schema"): every metric name an
experiment kind emits, with a one-line description, a unit, a direction and, where one exists,
its chance level; and each kind's headline utility, attack success and budget.

Pages, History, Compare and benchmarks read names from here instead of re-spelling strings;
``tests/test_metric_schema.py`` checks that every metric the runners emit is registered.

The per-attack metric names (``mia_<attack>_auc``, ``recon_<attack>_psnr``, ...) are not
written here: they are generated from the registered attacks (:mod:`core.foundation.parts`: each family's
metric template, each attack's stats and its one title) with the per-stat texts of
:data:`FAMILY_STATS`, so registering an attack registers its metrics.

- ``direction``: ``"utility"`` (more = more utility), ``"leakage"`` (more = more leakage),
  ``"protection"`` (more = *less* leakage: an attacker's error, such as its cross-entropy or a
  reconstruction's MSE) or ``"neither"`` (a setting, a count, a time). The advisor, the report
  and Compare read this field, never the description's words.
- ``span``: the metric's [low, high] where it differs from its unit's (a difference of two
  fractions spans [-1, 1]).
- ``chance``: the level a know-nothing attacker (or the majority-class predictor) reaches: a
  float, or the name of the metric that holds it per run (``"chance"``, ``"utility_majority"``).
"""

from __future__ import annotations

import difflib
import itertools
import math
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from core.foundation.checks import range_error

DIRECTIONS = ("utility", "leakage", "protection", "neither")
#: the directions a privacy metric may have (an attack's success, or an attacker's error)
PRIVACY_DIRECTIONS = ("leakage", "protection")


@dataclass(frozen=True)
class MetricSpec:
    """One metric: ``name``, a one-line ``description``, a short ``unit``, a ``direction`` in
    :data:`DIRECTIONS`, its ``chance`` level (float, or the name of the metric holding it per
    run, or None) and a ``group`` (utility, attack, bound, defense, timing, ...)."""

    name: str
    description: str
    unit: str
    direction: str
    chance: float | str | None = None
    group: str = "other"
    #: +inf is a legitimate value of this metric, not a failure (DP ε of clipping without
    #: noise): stored as inf (``"inf"`` in result JSON), shown as "∞"; every other metric's
    #: non-finite value is a defect
    infinite_ok: bool = False
    #: [low, high] where it differs from the unit's range (None: the unit's)
    span: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        if not self.name or any(c.isspace() for c in self.name):
            raise ValueError(f"name: got {self.name!r}; expected a non-empty name without spaces")
        if self.direction not in DIRECTIONS:
            raise ValueError(
                f"direction of metric {self.name!r}: got {self.direction!r}; "
                f"allowed values {', '.join(DIRECTIONS)}"
            )
        if not self.description or "\n" in self.description:
            raise ValueError(f"description of metric {self.name!r}: expected one non-empty line")
        if self.chance is not None and not isinstance(self.chance, str | int | float):
            raise ValueError(
                f"chance of metric {self.name!r}: got {self.chance!r}; expected a float, "
                "a metric name or None"
            )


class UnknownMetricError(KeyError, ValueError):
    """An unregistered metric name (a KeyError and a ValueError, with a one-line message)."""

    def __str__(self) -> str:  # KeyError would print the message in quotes
        return str(self.args[0]) if self.args else ""


_REGISTRY: dict[str, MetricSpec] = {}


def register(spec: MetricSpec) -> MetricSpec:
    """Add ``spec``; registering an identical spec again is a no-op, a different one under a
    registered name is a ValueError."""
    if not isinstance(spec, MetricSpec):
        raise TypeError(f"spec: got {type(spec).__name__}; expected a MetricSpec")
    old = _REGISTRY.get(spec.name) or attack_specs().get(spec.name)
    if old is not None and old != spec:
        raise ValueError(f"metric {spec.name!r} is already registered with a different spec")
    _REGISTRY[spec.name] = spec
    return spec


def get(name: str) -> MetricSpec:
    """The spec of ``name``; an unknown name raises :class:`UnknownMetricError` (KeyError and
    ValueError) whose one-line message names it and the closest registered names."""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        pass
    generated = _generated()
    try:
        return generated[name]
    except (KeyError, TypeError):
        close = difflib.get_close_matches(str(name), [*_REGISTRY, *generated], n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UnknownMetricError(
            f"unknown metric {name!r}: not registered in core.foundation.metric_schema{hint}"
        ) from None


def is_registered(name: str) -> bool:
    return name in _REGISTRY or name in _generated()


def unregistered(names: Iterable[str]) -> list[str]:
    """The names (first-seen order, no repeats) that are not registered."""
    generated = _generated()
    return [n for n in dict.fromkeys(names) if n not in _REGISTRY and n not in generated]


def all_specs() -> list[MetricSpec]:
    """Every registered spec: the registered attacks' and the defenses' knob budgets not
    registered by name (generated), then the others in registration order."""
    return [*attack_specs().values(),
            *(s for n, s in budget_specs().items() if n not in _REGISTRY), *_REGISTRY.values()]


def _generated() -> dict[str, MetricSpec]:
    """The generated specs: the registered attacks' metrics and the defenses' knob budgets."""
    return {**budget_specs(), **attack_specs()}


# ---------------------------------------------------------------------------------------------
# per-attack metrics, generated from the registered attacks

_A = "attack"
_R = "reconstruction"


def _stat(description: str, unit: str, direction: str, chance: float | str | None = None,
          group: str = _A, span: tuple[float, float] | None = None) -> dict[str, Any]:
    return {"description": description, "unit": unit, "direction": direction, "chance": chance,
            "group": group, "span": span}


#: per family, per stat: the spec's fields; ``{who_text}`` is the attack's title
FAMILY_STATS: dict[str, dict[str, dict[str, Any]]] = {
    "attribute_privacy": {
        "acc": _stat("attribute-inference accuracy: {who_text}", "fraction", "leakage", "chance"),
        "bacc": _stat("attribute-inference balanced accuracy: {who_text}", "fraction",
                      "leakage", "chance"),
        "auc": _stat("attack AUC (OvR macro if k > 2): {who_text}", "AUC", "leakage", 0.5),
        "adv": _stat("advantage max(TPR − FPR) (OvR mean if k > 2): {who_text}", "fraction",
                     "leakage", 0.0),
        "ce_nats": _stat("test cross-entropy (lower = more leakage): {who_text}", "nats",
                         "protection", "attack_prior_ce_nats"),
    },
    "membership": {
        "auc": _stat("membership AUC: {who_text}", "AUC", "leakage", 0.5),
        "adv": _stat("membership advantage max(TPR − FPR): {who_text}", "fraction", "leakage",
                     0.0),
        "bacc": _stat("membership balanced accuracy at the best threshold: {who_text}",
                      "fraction", "leakage", 0.5),
        "tpr_at_1pct_fpr": _stat("TPR at 1 % FPR: {who_text}", "fraction", "leakage", 0.01),
        "tpr_at_0p1pct_fpr": _stat("TPR at 0.1 % FPR: {who_text}", "fraction", "leakage",
                                   0.001),
        "epsilon_lower_bound": _stat("ε audited from below (Clopper–Pearson): {who_text}", "ε",
                                     "leakage", 0.0),
    },
    "property": {
        "acc": _stat("property-inference accuracy: {who_text}", "fraction", "leakage", "chance"),
        "bacc": _stat("property balanced accuracy: {who_text}", "fraction", "leakage", "chance"),
        "auc": _stat("one-vs-rest macro AUC over the K bins: {who_text}", "AUC", "leakage", 0.5),
        "ce_nats": _stat("test cross-entropy (lower = more leakage): {who_text}", "nats",
                         "protection"),
        # property_majority is 1/K when the bins are balanced
        "gap": _stat("accuracy minus the majority-bin rate: {who_text}", "fraction", "leakage",
                     0.0, span=(-1.0, 1.0)),
    },
    "gradient_leakage": {
        "mse": _stat("per-pixel MSE vs clean targets (lower = leakier): {who_text}", "MSE",
                     "protection", group=_R),
        "psnr": _stat("mean PSNR of matched reconstructions: {who_text}", "dB", "leakage",
                      group=_R),
        "psnr_median": _stat("median PSNR of matched reconstructions: {who_text}", "dB",
                             "leakage", group=_R),
        "ssim": _stat("mean SSIM of matched reconstructions: {who_text}", "SSIM", "leakage",
                      group=_R),
        "label_acc": _stat("label accuracy (recovered or joint labels): {who_text}", "fraction",
                           "leakage", "chance", group=_R),
        "seconds": _stat("wall-clock time on all targets (one batch): {who_text}", "seconds",
                         "neither", group="timing"),
    },
    "repr_reconstruction": {
        "mse": _stat("per-pixel MSE from r + δ (lower = leakier): {who_text}", "MSE",
                     "protection", group=_R),
        "psnr": _stat("mean PSNR from r + δ, data range 1: {who_text}", "dB", "leakage",
                      group=_R),
        "ssim": _stat("mean SSIM from r + δ: {who_text}", "SSIM", "leakage", group=_R),
        "frac_l2_ge_eta": _stat("share of ℓ2 errors >= η (Theorem 3's event): {who_text}",
                                "fraction", "neither", group="bound"),
        "frac_linf_ge_eta": _stat("share of ℓ∞ errors >= η (Theorem 3's event): {who_text}",
                                  "fraction", "neither", group="bound"),
    },
    "fisher_information": {
        "acc": _stat("accuracy on the noisy release (mean over draws): {who_text}", "fraction",
                     "leakage", "fil_attack_prior_acc"),
    },
}
#: attribute privacy also scores every fresh attacker on raw x, and reports each gap to the
#: majority-value rate
RAW_PREFIX = "raw_"
# against the majority value, not 1/k (which reads an imbalanced attribute's majority share as
# leakage)
_GAP = _stat("accuracy minus the majority-value rate: {who_text}",
             "fraction", "leakage", 0.0, span=(-1.0, 1.0))
#: the strongest inverter of a gradient-leakage run, under the family's names
STRONGEST = {"gradient_leakage": ("best", "the strongest inverter")}

_GENERATED: tuple[int, dict[str, MetricSpec]] = (-1, {})


def _generated_spec(name: str, fields: Mapping[str, Any], who_text: str) -> MetricSpec:
    return MetricSpec(name=name, **{k: (v.format(who_text=who_text) if isinstance(v, str) else v)
                                    for k, v in fields.items()})


def attack_specs() -> dict[str, MetricSpec]:
    """The metric specs of every registered attack (rebuilt when the attack registry moves)."""
    global _GENERATED
    from core.foundation.parts import ATTACKS, FAMILIES, attacks_for

    version, specs = _GENERATED
    if version == ATTACKS.version:
        return specs
    out: dict[str, MetricSpec] = {}
    for family, stats in FAMILY_STATS.items():
        template = FAMILIES.get(family).metric_template
        whos: list[tuple[str, str, tuple[str, ...]]] = []
        for part in attacks_for(family):
            unknown = [s for s in part.stat_names() if s not in stats]
            if unknown:
                raise ValueError(f"stats of attack {part.name!r}: got {unknown[0]!r}; allowed for "
                                 f"{family}: {', '.join(stats)}")
            whos.append((part.who, part.title, part.stat_names()))
            if family == "attribute_privacy" and part.fresh and "raw" in part.accepts:
                whos.append((RAW_PREFIX + part.who, f"raw x · {part.title}", part.stat_names()))
        if family in STRONGEST:
            who, text = STRONGEST[family]
            whos.append((who, text, tuple(stats)))
        for who, text, names in whos:
            for stat in names:
                name = template.format(who=who, stat=stat)
                out[name] = _generated_spec(name, stats[stat], text)
            if family == "attribute_privacy":
                out[f"gap_{who}"] = _generated_spec(f"gap_{who}", _GAP, text)
    _GENERATED = (ATTACKS.version, out)
    return out


_BUDGETS: tuple[int, dict[str, MetricSpec]] = (-1, {})


def budget_specs() -> dict[str, MetricSpec]:
    """A spec for each registered defense's knob budget metric (:attr:`core.foundation.parts.Knob.
    budget_metric`), read from the knob (its label, symbol and part's title), rebuilt when the
    defense registry moves: a defense declared in :mod:`core.catalog` echoes its knob under a
    metric of its own without a line here. A name registered here explicitly (ε, κ, λ) keeps
    its own spec: lookups read the explicit registry first."""
    global _BUDGETS
    from core.foundation.parts import DEFENSES

    parts = list(DEFENSES.values())  # the first read loads the catalog (and moves the version)
    version, specs = _BUDGETS
    if version == DEFENSES.version:
        return specs
    out: dict[str, MetricSpec] = {}
    for part in parts:
        k = part.knob
        if k is not None and k.budget_metric is not None and k.budget_metric not in out:
            out[k.budget_metric] = MetricSpec(
                k.budget_metric, f"{k.label}: {part.title}'s knob {k.symbol}, echoed", k.symbol,
                "neither", None, "defense")
    _BUDGETS = (DEFENSES.version, out)
    return out


def register_family(
    template: str, values: Mapping[str, Iterable[str]], **spec_fields: Any
) -> list[MetricSpec]:
    """Register one spec per combination of ``values`` substituted into ``template``, e.g.
    ``register_family("gap_{who}", {"who": ["logreg", "mlp"]}, description="... {who}", ...)``.

    String spec fields (description, unit, group, a string chance) are formatted with the same
    values. When a value list is a mapping (value -> text), ``{<field>_text}`` holds the text,
    so a description can read better than the raw name."""
    placeholders = {f for _, f, _, _ in string.Formatter().parse(template) if f}
    if placeholders != set(values):
        raise ValueError(
            f"values: got fields {sorted(values)}; template {template!r} needs {sorted(placeholders)}"
        )
    allowed = {f.name for f in fields(MetricSpec)} - {"name"}
    extra = set(spec_fields) - allowed
    if extra:
        raise ValueError(f"spec fields: got unknown {sorted(extra)}; allowed {sorted(allowed)}")
    keys = list(values)
    texts = {k: dict(v) if isinstance(v, Mapping) else None for k, v in values.items()}
    out = []
    for combo in itertools.product(*(list(values[k]) for k in keys)):
        ctx = {k: str(v) for k, v in zip(keys, combo, strict=True)}
        for k, v in zip(keys, combo, strict=True):
            if texts[k] is not None:
                ctx[f"{k}_text"] = str(texts[k][v])
        kw = {f: (v.format(**ctx) if isinstance(v, str) else v) for f, v in spec_fields.items()}
        out.append(register(MetricSpec(name=template.format(**ctx), **kw)))
    return out


def infinite_ok(name: str) -> bool:
    """Whether +inf is a legitimate value of metric ``name`` (:attr:`MetricSpec.infinite_ok`:
    DP ε = ∞ for clipping without noise); unregistered names: False."""
    spec = _REGISTRY.get(name)
    return bool(spec is not None and spec.infinite_ok)


#: the values a metric of each unit can take by definition (a figure outside is impossible):
#: an AUC, a probability, a flag and a share lie in [0, 1], a signed share (an advantage
#: TPR − FPR) and SSIM in [−1, 1]; counts, times, ε, δ and error magnitudes are not negative.
#: Units without a fixed range (nats, dB, ratios, scores, η, ...) have none here.
UNIT_RANGES: dict[str, tuple[float, float]] = {
    "AUC": (0.0, 1.0), "probability": (0.0, 1.0), "flag": (0.0, 1.0), "δ": (0.0, 1.0),
    "fraction": (-1.0, 1.0), "SSIM": (-1.0, 1.0),
    "count": (0.0, math.inf), "rows": (0.0, math.inf), "seconds": (0.0, math.inf),
    "ε": (0.0, math.inf), "MSE": (0.0, math.inf), "variance": (0.0, math.inf),
    "std": (0.0, math.inf), "norm": (0.0, math.inf),
}
#: groups whose values are not bounded by their unit (a bound can be vacuous: below 0 or
#: above 1)
UNBOUNDED_GROUPS = frozenset({"bound"})


def value_range(name: str) -> tuple[float, float] | None:
    """The closed interval every value of metric ``name`` lies in by definition
    (:data:`UNIT_RANGES` by its unit; None: unregistered, a bound, or a unit without one).
    Shares are taken in [−1, 1]: an advantage is a signed difference of two shares."""
    if not is_registered(name):
        return None
    spec = get(name)
    if spec.group in UNBOUNDED_GROUPS:
        return None
    return UNIT_RANGES.get(spec.unit)


def out_of_range(metrics: Mapping[str, Any]) -> str | None:
    """The first metric whose value lies outside :func:`value_range`, as one line naming it
    and its range; None when every value is possible (NaN and ±inf are
    :mod:`core.foundation.finite`'s to judge)."""
    for name, raw in metrics.items():
        rng = value_range(name)
        try:
            value = float(raw)
        except (TypeError, ValueError):
            return f"metric {name}: got {raw!r:.40}; a metric is a number"
        if rng is None or not math.isfinite(value):
            continue
        lo, hi = rng
        if not lo <= value <= hi:
            return str(range_error(f"metric {name}", value, lo, hi))
    return None


def chance_value(name: str, metrics: Mapping[str, float]) -> float | None:
    """The chance level of metric ``name`` in a run's ``metrics``: the float, the value of the
    metric it names (None when the run lacks it or it is NaN), or None."""
    c = get(name).chance
    if c is None:
        return None
    if isinstance(c, str):
        v = metrics.get(c)
        return None if v is None or math.isnan(float(v)) else float(v)
    return float(c)


# ---------------------------------------------------------------------------------------------
# headlines


@dataclass(frozen=True)
class Headline:
    """A kind's headline numbers: its ``utility`` and ``attack`` success metric names (None when
    the kind has none) and its ``budget`` (privacy knob or accounting): a metric name, a mapping
    defense -> metric name (None for an undefended run), or None when the runner decides."""

    utility: str | None
    attack: str | None
    budget: str | Mapping[str, str | None] | None = None

    def budget_for(self, defense: str | None = None) -> str | None:
        """The budget metric for ``defense`` (the mapping's entry, or the single name)."""
        if isinstance(self.budget, Mapping):
            return self.budget.get(defense) if defense is not None else None
        return self.budget


# ---------------------------------------------------------------------------------------------
# the registry

_S = MetricSpec

# -- utility
for _spec in (
    _S("utility_acc", "test accuracy of the task model (where representations are released: of the head on them)",
       "fraction", "utility", "utility_majority", "utility"),
    _S("utility_acc_paper", "test accuracy of the authors' evaluation head on the representation",
       "fraction", "utility", "utility_majority", "utility"),
    _S("utility_acc_raw", "test accuracy of the same probe on raw inputs (no defense)",
       "fraction", "utility", "utility_majority", "utility"),
    _S("utility_majority", "test share of the train-majority task class (the chance utility)",
       "fraction", "neither", None, "utility"),
):
    register(_spec)

# -- attacks, cross-paper headline names
for _spec in (
    _S("attack_auc_best", "highest attack AUC over the attackers run (the strongest one)",
       "AUC", "leakage", 0.5, "attack"),
    _S("attack_bacc_best", "highest attack balanced accuracy over the attackers run",
       "fraction", "leakage", "chance", "attack"),
    _S("attack_acc_best", "highest attack accuracy over the attackers run",
       "fraction", "leakage", "chance", "attack"),
    _S("advantage_best", "highest attack advantage max(TPR − FPR) over the attackers run",
       "fraction", "leakage", 0.0, "attack"),
    _S("tpr_at_1pct_fpr", "attack true-positive rate at 1 % false-positive rate",
       "fraction", "leakage", 0.01, "attack"),
    _S("tpr_at_0p1pct_fpr", "attack true-positive rate at 0.1 % false-positive rate",
       "fraction", "leakage", 0.001, "attack"),
    _S("chance", "chance accuracy of guessing the private attribute, 1/k",
       "fraction", "neither", None, "attack"),
    _S("attribute_majority", "test share of the most frequent attribute value (always "
       "guessing it; the gaps' baseline)", "fraction", "neither", None, "attack"),
    _S("n_values", "number of values k of the private attribute", "count", "neither", None,
       "data"),
):
    register(_spec)

# -- bounds (core/bounds/tappfl.py::tappfl_bounds)
for _spec in (
    _S("bound_n_values", "number of attribute values k the bounds were computed for",
       "count", "neither", None, "bound"),
    _S("bound_h_bits", "H(u|r) estimated from the best attacker's cross-entropy (optimistic)",
       "bits", "neither", None, "bound"),
    _S("h_u_given_r_bits", "H(u|r) estimate from the best fresh attacker's CE (lower = leakier)",
       "bits", "protection", None, "bound"),
    _S("bound_thm2_valid", "1 if Theorem 2 applies (binary attribute), else 0",
       "flag", "neither", None, "bound"),
    _S("bound_thm2_paper", "Theorem 2 bound on attack accuracy, the paper's closed form",
       "fraction", "leakage", "chance", "bound"),
    _S("bound_thm2_exact", "Theorem 2 bound on attack accuracy, exact form 1 − H₂⁻¹(H)",
       "fraction", "leakage", "chance", "bound"),
    _S("bound_fano", "Fano bound on attack accuracy at the CE estimate of H(u|r) (any k)",
       "fraction", "leakage", "chance", "bound"),
    _S("bound_h_conservative_bits", "conservative H(u|r) = H(u) − upper estimate of I(u;r)",
       "bits", "neither", None, "bound"),
    _S("bound_thm2_exact_conservative", "Theorem 2 exact bound at the conservative H(u|r)",
       "fraction", "leakage", "chance", "bound"),
    _S("bound_fano_conservative", "Fano bound at the conservative H(u|r)",
       "fraction", "leakage", "chance", "bound"),
    _S("bound_thm1_rhs", "Theorem 1 lower bound on Err(u=0) + Err(u=1) of any task head",
       "fraction", "neither", None, "bound"),
    _S("bound_thm1_penalty", "Theorem 1 penalty term 2·R·C_L·Adv", "fraction", "neither", None,
       "bound"),
    _S("bound_thm1_vacuous", "1 if Theorem 1's right-hand side is <= 0 (says nothing), else 0",
       "flag", "neither", None, "bound"),
    _S("bound_thm1_delta", "Δ(y|u) = |Pr(y=1|u=0) − Pr(y=1|u=1)| on the test split",
       "fraction", "neither", None, "bound"),
    _S("bound_thm1_R", "representation radius R = max ‖r‖₂ on the test split",
       "norm", "neither", None, "bound"),
    _S("bound_thm1_CL", "Lipschitz constant C_L of the task head", "Lipschitz", "neither", None,
       "bound"),
    _S("bound_thm1_adv", "empirical advantage Adv plugged into Theorem 1 (best attacker)",
       "fraction", "leakage", 0.0, "bound"),
    _S("bound_thm1_adv_threshold", "Theorem 1 is informative only for Adv below this value",
       "fraction", "neither", None, "bound"),
):
    register(_spec)

# -- defenses and budgets
for _spec in (
    _S("tradeoff_lambda", "the privacy weight λ of the defense (the knob, echoed)",
       "λ", "neither", None, "defense"),
    _S("pruning_rate", "fraction of each upload's entries zeroed by magnitude pruning",
       "fraction", "neither", None, "defense"),
    _S("dp_sigma", "Gaussian noise standard deviation added to each clipped upload",
       "std", "neither", None, "defense"),
    _S("dp_laplace_b", "Laplace noise scale b added to each clipped upload",
       "scale", "neither", None, "defense"),
    _S("dp_epsilon_round", "per-round ε of each device's noisy upload", "ε", "leakage", None,
       "defense"),
    _S("dp_epsilon_total", "total ε over all rounds from the named accountant", "ε", "leakage",
       None, "defense"),
    _S("dp_delta_total", "total δ over all rounds", "δ", "leakage", None, "defense"),
    _S("dp_noise_multiplier", "noise standard deviation divided by the sensitivity",
       "ratio", "neither", None, "defense"),
    _S("dp_fraction_sampled", "fraction of devices sampled per round", "fraction", "neither",
       None, "defense"),
    _S("epsilon_accountant", "DP ε reported by the privacy accountant for the run (∞: "
       "clipping without noise)", "ε", "leakage", None, "defense", infinite_ok=True),
    _S("epsilon_lower_bound", "empirical ε lower bound from the attack's ROC", "ε", "leakage",
       0.0, "attack"),
):
    register(_spec)

# -- one-run audit (Steinke, Nasr & Jagielski 2023; core.attacks.audit, core.runs.audit_stage)
for _spec in (
    _S("audit_epsilon_lower", "ε lower bound of the one-run canary audit (Steinke et al. 2023)",
       "ε", "leakage", 0.0, "audit"),
    _S("audit_max_provable", "largest ε the audit's guesses could prove (all correct)", "ε",
       "neither", None, "audit"),
    _S("audit_canaries", "canaries m of the one-run audit, each in with probability ½",
       "count", "neither", None, "audit"),
    _S("audit_correct", "correct guesses of the one-run audit", "count", "neither", None,
       "audit"),
    _S("audit_guesses", "guesses the one-run audit made (the rest abstain)", "count",
       "neither", None, "audit"),
    _S("audit_confidence", "confidence of this run's audit (after Bonferroni over the grid)",
       "fraction", "neither", None, "audit"),
    _S("audit_exceeds_claim", "1 when the audited ε exceeds the accountant's ε (a broken claim)",
       "flag", "neither", 0.0, "audit"),
    _S("audit_seconds", "wall-clock time of the audit's training run", "seconds", "neither",
       None, "timing"),
):
    register(_spec)

# -- training diagnostics and curves (tappfl)
for _spec in (
    _S("ce_loss", "in-training adversary's cross-entropy at the last round", "nats", "neither",
       None, "training"),
    _S("jsd_loss", "JSD mutual-information term I(x; r | u) at the last round", "nats",
       "neither", None, "training"),
    _S("representation_nonfinite_frac", "fraction of representation entries that were NaN/inf",
       "fraction", "neither", 0.0, "training"),
    _S("round", "federated round number (curves)", "count", "neither", None, "training"),
    _S("in_training_acc", "in-training adversary's test accuracy per round (curves)",
       "fraction", "leakage", "chance", "training"),
    _S("in_training_bacc_train", "in-training adversary's balanced accuracy on its train batch",
       "fraction", "leakage", "chance", "training"),
):
    register(_spec)

# -- timings
for _spec in (
    _S("seconds", "wall-clock time of the step (projection, sweep; per round in curves)",
       "seconds", "neither", None, "timing"),
    _S("seconds_train", "wall-clock time of training", "seconds", "neither", None, "timing"),
    _S("seconds_eval", "wall-clock time of the evaluation (heads, attacks, bounds)", "seconds",
       "neither", None, "timing"),
    _S("seconds_total", "wall-clock time of the whole run", "seconds", "neither", None, "timing"),
):
    register(_spec)

# -- projection (core/runs/projection.py)
for _spec in (
    _S("n_points", "number of points projected", "count", "neither", None, "projection"),
    _S("trustworthiness", "how well the 2-D view keeps 5-nearest neighbours (1 = perfectly)",
       "score", "utility", None, "projection"),
    _S("kl_divergence", "t-SNE's final KL divergence", "nats", "neither", None, "projection"),
):
    register(_spec)

# -- reconstruction and Fisher information (cross-paper)
for _spec in (
    _S("recon_mse", "mean squared error of reconstructions vs targets (lower = leakier)",
       "MSE", "protection", None, "reconstruction"),
    _S("recon_psnr", "PSNR of reconstructions vs targets, data range 1", "dB", "leakage", None,
       "reconstruction"),
    _S("recon_ssim", "structural similarity of reconstructions vs targets", "SSIM", "leakage",
       None, "reconstruction"),
    _S("fil_eta_max", "largest per-example Fisher information loss η", "η", "leakage", None,
       "fil"),
):
    register(_spec)

# -- gradient leakage (core/runs/gradient_leakage.py; spec 001): per-inverter names generated
for _spec in (
    _S("recon_psnr_median", "median PSNR of reconstructions vs targets, data range 1", "dB",
       "leakage", None, "reconstruction"),
    _S("recon_noisy_mse", "per-pixel MSE between the clean targets and their noisy versions "
       "D̃ (what the defense trained on)", "MSE", "neither", None, "reconstruction"),
    _S("recon_targets", "number of targets attacked (independent uploads)", "count",
       "neither", None, "reconstruction"),
    _S("recon_batch_size", "images per observed upload", "count", "neither", None,
       "reconstruction"),
    _S("model_inversion_mse_median", "model inversion: median over classes of the MSE to the "
       "class centre (lower = leakier)", "MSE", "protection",
       None, "reconstruction"),
    _S("model_inversion_psnr_median", "model inversion: median over classes of the PSNR to the "
       "class centre", "dB", "leakage", None, "reconstruction"),
    _S("model_inversion_ssim_median", "model inversion: median over classes of the SSIM to the "
       "class centre", "SSIM", "leakage", None, "reconstruction"),
    _S("kappa", "capacity κ of the data-space channel per round", "nats", "leakage", None,
       "defense"),
    _S("kappa_per_dim", "κ/d: capacity per data dimension", "nats/dim", "leakage", None,
       "defense"),
    _S("kappa_total", "information let through over the run: n·κ (noise redrawn "
       "each step) or κ (one fixed noisy copy)", "nats", "leakage", None, "defense"),
    _S("channel_sigma", "the solved noise variance σ (Natural / Personalized scale; "
       "Laplace 2b²)", "variance", "neither", None, "defense"),
    _S("channel_pixel_std_mean", "mean per-pixel noise standard deviation", "std", "neither",
       None, "defense"),
    _S("capacity_dp_paper", "capacity of one DP-SGD step, B/z² (Thm 4 as printed)", "nats",
       "leakage", None, "defense"),
    _S("capacity_dp_tight", "capacity of one DP-SGD step, B/(2z²) (Thm 4 without the "
       "factor-2 slack)", "nats", "leakage", None, "defense"),
    _S("steps", "optimisation steps the victim model took (n)", "count", "neither", None,
       "training"),
    _S("data_dim", "dimension d of one flattened image", "count", "neither", None, "data"),
    _S("data_dim_informative", "eigen-directions of Σ_D above the zero threshold (Theorem 1's "
       "plug-in uses these)", "count", "neither", None, "data"),
    _S("bound_thm1_round", "Theorem 1 lower bound on per-pixel MSE for one round (I = κ); "
       "Gaussian plug-in h(D): heuristic", "MSE", "neither", None, "bound"),
    _S("bound_thm1_total", "Theorem 1 lower bound on per-pixel MSE over the whole run "
       "(I = total information)", "MSE", "neither", None, "bound"),
    _S("bound_thm1_total_vacuous", "1 if the whole-run Thm 1 bound is ≤ the quantisation "
       "floor or < 1e-6 of one round's, else 0", "flag", "neither", None, "bound"),
    _S("bound_thm1_round_vacuous", "1 if the per-round Theorem 1 bound is ≤ the quantisation "
       "floor (says nothing), else 0", "flag", "neither", None, "bound"),
    _S("bound_quantization_floor", "MSE of rounding to the 8-bit pixel grid, Δ²/12 (a floor at "
       "or below it excludes nothing)", "MSE", "neither", None, "bound"),
    _S("bound_wiener_mmse", "Bayes MSE of an attacker seeing D̃ itself (Wiener filter, "
       "Gaussian data)", "MSE",
       "neither", None, "bound"),
    _S("bound_below_count", "targets with MSE below the per-round Theorem 1 bound (shown; "
       "it bounds the mean)", "count", "neither", None, "bound"),
    _S("bound_thm1_mean_below", "1 if the mean MSE over the targets is below the per-round "
       "Theorem 1 bound, else 0", "flag", "neither", None, "bound"),
    _S("utility_majority_images", "test share of the majority class (chance utility)",
       "fraction", "neither", None, "utility"),
    _S("test_acc", "test accuracy per epoch / round (curves)", "fraction", "utility",
       "utility_majority_images", "training"),
    _S("train_loss", "training cross-entropy per epoch (curves; on the noisy data)", "nats",
       "neither", None, "training"),
    _S("epoch_seconds", "wall-clock time per epoch (curves)", "seconds", "neither", None,
       "timing"),
    _S("train_ce", "training cross-entropy per round (curves)", "nats", "neither", None,
       "training"),
    _S("train_acc", "training accuracy per round (curves)", "fraction", "utility", None,
       "training"),
):
    register(_spec)

# -- membership (core/runs/membership.py; core/attacks/membership.py): per-attack names generated
for _spec in (
    _S("mia_auc_best", "highest membership AUC over the attacks run", "AUC", "leakage", 0.5,
       "attack"),
    _S("mia_tpr_at_0p1pct_fpr_best", "highest TPR at 0.1 % FPR over the attacks run",
       "fraction", "leakage", 0.001, "attack"),
    _S("utility_train_acc", "accuracy of the target model on its members (training rows)",
       "fraction", "neither", None, "utility"),
    _S("train_test_gap", "members' accuracy minus test accuracy (the overfitting MIA feeds on)",
       "fraction", "leakage", 0.0, "utility", span=(-1.0, 1.0)),
    _S("members", "members scored (the target's training rows)", "count", "neither", None,
       "attack"),
    _S("bound_mia_paper", "Inf2Guard Theorem 1 bound on membership accuracy (paper form, "
       "estimated H(u|r))", "fraction", "leakage", 0.5, "bound"),
    _S("bound_mia_exact", "Inf2Guard Theorem 1 bound, tight form 1 − H₂⁻¹(H) (estimated H(u|r))",
       "fraction", "leakage", 0.5, "bound"),
    _S("nonmembers", "non-members scored", "count", "neither", None, "attack"),
):
    register(_spec)

# -- Fisher information loss (core/runs/fisher_information.py; spec 002 Part A)
FIL_ETAS = {"example": "per-example", "label": "per-example label", "attr": "per-example "
            "target-attribute", "group": "per-class group"}
register_family("fil_eta_{g}_mean", {"g": FIL_ETAS}, description="mean {g_text} FIL η at σ",
                unit="η", direction="leakage", group="fil")
register_family("fil_eta_{g}_max", {"g": FIL_ETAS}, description="largest {g_text} FIL η at σ",
                unit="η", direction="leakage", group="fil")
for _spec in (
    _S("fil_attack_acc_best", "highest attribute-inference accuracy over the FIL attacks run",
       "fraction", "leakage", "fil_attack_prior_acc", "attack"),
    _S("fil_utility_acc", "test accuracy of the released noisy GLM (mean over noise draws)",
       "fraction", "utility", "utility_majority", "utility"),
    _S("fil_utility_acc_clean", "test accuracy of the GLM before the noise (w*)",
       "fraction", "utility", "utility_majority", "utility"),
    _S("fil_test_mse", "test mean squared error of the noisy GLM's score vs ±1 targets",
       "MSE", "neither", None, "utility"),
    _S("fil_eta", "FIL η at σ at the chosen granularity (worst case; the headline budget)",
       "η", "leakage", None, "fil"),
    _S("fil_eta_mean", "mean per-example FIL η at σ at the chosen granularity", "η", "leakage",
       None, "fil"),
    _S("fil_eta_std", "standard deviation of the per-example FIL η at σ (chosen granularity)",
       "η", "neither", None, "fil"),
    _S("fil_eta_dataset", "FIL η of the whole training set at σ (λ_max of Σ J_i J_iᵀ)", "η",
       "leakage", None, "fil"),
    _S("fil_eta_composed", "FIL η of k independent releases, η√k (worst case)", "η", "leakage",
       None, "fil"),
    _S("fil_sigma", "standard deviation σ of the Gaussian noise on the released weights",
       "std", "neither", None, "defense"),
    _S("fil_epsilon", "DP ε of the release at σ and δ (logistic, unit-ball features)", "ε",
       "leakage", None, "defense"),
    _S("fil_delta", "δ of the DP readout", "δ", "neither", None, "defense"),
    _S("fil_sensitivity", "L2 sensitivity 2/(nλ) of the regularised logistic minimiser",
       "norm", "neither", None, "defense"),
    _S("fil_local_rdp_max", "derived local Rényi DP (α = 1) of the worst example, η²‖Δ‖²/2",
       "nats", "leakage", None, "defense"),
    _S("fil_releases", "number k of independent noisy releases composed", "count", "neither",
       None, "defense"),
    _S("fil_l2", "L2 weight λ of the GLM (FIL's λ, echoed)", "λ", "neither", None, "defense"),
    _S("fil_irfil_iterations", "IRFIL iterations T run", "count", "neither", None, "fil"),
    _S("fil_irfil_eta_std_before", "std of per-example η (σ = 1) before IRFIL", "η", "neither",
       None, "fil"),
    _S("fil_irfil_eta_std_after", "std of per-example η (σ = 1) after IRFIL", "η", "neither",
       None, "fil"),
    _S("fil_irfil_eta_mean_before", "mean per-example η (σ = 1) before IRFIL", "η", "leakage",
       None, "fil"),
    _S("fil_irfil_eta_mean_after", "mean per-example η (σ = 1) after IRFIL", "η", "leakage",
       None, "fil"),
    _S("fil_irfil_std_ratio", "std(η) after IRFIL over before (smaller = more equal)", "ratio",
       "neither", None, "fil"),
    _S("fil_irfil_acc_before", "test accuracy of the noise-free GLM before IRFIL", "fraction",
       "utility", "utility_majority", "utility"),
    _S("fil_irfil_acc_after", "test accuracy of the noise-free GLM after IRFIL", "fraction",
       "utility", "utility_majority", "utility"),
    _S("fil_crb_min_ratio", "smallest measured variance / Cramér–Rao bound 1/η² over the σ grid",
       "ratio", "neither", None, "bound"),
    _S("fil_crb_trials", "noise draws per σ of the unbiased reconstruction", "count", "neither",
       None, "bound"),
    _S("fil_noise_trials", "noise draws each attack is repeated over", "count", "neither", None,
       "attack"),
    _S("fil_targets_attacked", "training rows attacked per noise draw", "count", "neither",
       None, "attack"),
    _S("fil_n_train", "training rows of the GLM", "count", "neither", None, "data"),
    _S("fil_dim", "feature dimension d of the GLM", "count", "neither", None, "data"),
    _S("fil_seconds_fit", "wall-clock time of the fit and the per-example FIL", "seconds",
       "neither", None, "timing"),
    _S("fil_spearman_loss", "Spearman ρ of per-example η and the per-example loss (Fig. 4a)",
       "ρ", "neither", None, "fil"),
    _S("fil_spearman_grad", "Spearman ρ of per-example η and ‖∇_w ℓ‖ (Fig. 4b)", "ρ",
       "neither", None, "fil"),
    _S("fil_lira_auc", "LiRA membership AUC against the released GLM (mean over release draws)",
       "AUC", "leakage", 0.5, "attack"),
    _S("fil_lira_spearman", "Spearman ρ of per-example η and the per-example LiRA score",
       "ρ", "neither", None, "fil"),
    _S("fil_lira_spearman_lo", "lower end of the 95 % bootstrap interval of fil_lira_spearman",
       "ρ", "neither", None, "fil"),
    _S("fil_lira_spearman_hi", "upper end of the 95 % bootstrap interval of fil_lira_spearman",
       "ρ", "neither", None, "fil"),
    _S("fil_lira_top_overlap_eta", "share of LiRA's most exposed training rows that are also "
       "the rows of highest η", "fraction", "neither", None, "fil"),
    _S("fil_lira_top_tpr_plain", "TPR at 5 % FPR of LiRA's most exposed rows, plain release "
       "(held-out draws)", "fraction", "leakage", None, "attack"),
    _S("fil_lira_top_tpr_irfil", "TPR at 5 % FPR of the same rows under the IRFIL release at "
       "the same σ", "fraction", "leakage", None, "attack"),
    _S("fil_lira_top_score_plain", "mean LiRA score of LiRA's most exposed rows, plain release "
       "(held-out draws)", "score", "leakage", None, "attack"),
    _S("fil_lira_top_score_irfil", "mean LiRA score of the same rows under the IRFIL release "
       "at the same σ", "score", "leakage", None, "attack"),
    _S("fil_lira_shadows", "shadow GLMs of the FIL-LiRA attack", "count", "neither", None,
       "attack"),
):
    register(_spec)

# -- property inference (core/runs/property.py; core/attacks/property.py; spec 004 §2.2)
for _spec in (
    _S("property_acc_best", "highest property-inference accuracy over the attackers run",
       "fraction", "leakage", "chance", "attack"),
    _S("property_majority", "test share of the most frequent property bin (the prior's rate)",
       "fraction", "neither", None, "attack"),
    _S("property_h_bits", "H(u|R) estimate from the lowest attacker cross-entropy (lower = leakier)",
       "bits", "protection", None, "bound"),
    _S("bound_pia_fano", "K-ary bound 1 − (H − 1)/log₂(K − 1) on property accuracy at estimated H",
       "fraction", "leakage", "chance", "bound"),
    _S("bound_pia_fano_exact", "tight Fano bound on property accuracy at the estimated H(u|R)",
       "fraction", "leakage", "chance", "bound"),
    _S("bound_pia_vacuous", "1 if the K-ary bound is >= 1 at the estimated H (says nothing), else 0",
       "flag", "neither", None, "bound"),
    _S("subsets_train", "defender's training subsets (train split)", "count", "neither", None,
       "data"),
    _S("subsets_aux", "attacker's shadow subsets (aux split)", "count", "neither", None, "data"),
    _S("subsets_test", "attacked target subsets (test split)", "count", "neither", None, "data"),
    _S("subset_size_mean", "mean rows per target subset", "rows", "neither", None, "data"),
    _S("property_train_utility_ce", "per-sample task cross-entropy per defense epoch (curves)",
       "nats", "neither", None, "training"),
    _S("property_train_adversary_ce", "in-training property adversary's CE per epoch (curves)",
       "nats", "neither", None, "training"),
    _S("property_train_adversary_acc", "in-training adversary's batch accuracy per epoch (curves)",
       "fraction", "leakage", "chance", "training"),
):
    register(_spec)

# -- reconstruction from shared representations (core/runs/repr_reconstruction.py; spec 004 §2.3)
for _spec in (
    _S("utility_acc_clean", "test accuracy of the task head on the clean representation r",
       "fraction", "utility", "utility_majority", "utility"),
    _S("perturbation_scale", "Inf2Guard noise scale ε of the shared r + δ (not a DP budget)",
       "ε", "neither", None, "defense"),
    _S("entropy_beta", "entropy weight β = λα/(1−λ) of the learned perturbation (Eq. 26)",
       "β", "neither", None, "defense"),
    _S("noise_entropy_nats", "differential entropy of δ per coordinate (mean over coordinates)",
       "nats", "neither", None, "defense"),
    _S("noise_std_mean", "standard deviation of δ per coordinate (mean over coordinates)",
       "std", "neither", None, "defense"),
    _S("representation_dim", "dimension k of the shared representation", "count", "neither",
       None, "data"),
    _S("bound_thm3_mi_nats", "upper estimate of I(x; r + δ) (max-entropy bound at the measured "
       "Var r): Theorem 3's input", "nats", "leakage", None, "bound"),
    _S("bound_thm3_l2", "Theorem 3: lower bound on Pr(ℓ2 reconstruction error >= η) (estimated)",
       "probability", "neither", None, "bound"),
    _S("bound_thm3_linf", "Theorem 3: lower bound on Pr(ℓ∞ reconstruction error >= η) "
       "(estimated)", "probability", "neither", None, "bound"),
    _S("bound_thm3_l2_vacuous", "1 if Theorem 3's ℓ2 bound says nothing here, else 0", "flag",
       "neither", None, "bound"),
    _S("bound_thm3_linf_vacuous", "1 if Theorem 3's ℓ∞ bound says nothing here, else 0", "flag",
       "neither", None, "bound"),
    _S("bound_thm3_eta_l2", "η of the ℓ2 bound (per-pixel RMSE × √d)", "norm", "neither", None,
       "bound"),
    _S("bound_thm3_eta_linf", "η of the ℓ∞ bound", "norm", "neither", None, "bound"),
    _S("bound_thm3_denominator_l2", "ln Vol(X) − ln Vol(X(η)) for ℓ2 on [0, 1]^d (a lower "
       "estimate)", "nats", "neither", None, "bound"),
    _S("bound_thm3_denominator_linf", "ln Vol(X) − ln Vol(X(η)) for ℓ∞ on [0, 1]^d (exact)",
       "nats", "neither", None, "bound"),
    _S("bound_thm3_violations", "(attacker, norm) pairs whose measured share of errors >= η "
       "falls below Theorem 3's bound", "count", "neither", None, "bound"),
    _S("bound_thm3_data_entropy_nats", "h(x) of the dequantised pixels, Gaussian max-entropy "
       "value (upper estimate)", "nats", "neither", None, "bound"),
    _S("bound_thm3_est_l2", "Theorem 3 at the data's entropy: bound on Pr(ℓ2 error >= η) "
       "(upper estimate)", "probability", "neither", None, "bound"),
    _S("bound_thm3_est_linf", "Theorem 3 at the data's entropy: bound on Pr(ℓ∞ error >= η) "
       "(upper estimate)", "probability", "neither", None, "bound"),
    _S("bound_thm3_est_l2_vacuous", "1 if the entropy-form ℓ2 bound says nothing here, else 0",
       "flag", "neither", None, "bound"),
    _S("bound_thm3_est_linf_vacuous", "1 if the entropy-form ℓ∞ bound says nothing here, "
       "else 0", "flag", "neither", None, "bound"),
    _S("bound_thm3_est_violations", "(attacker, norm) pairs with a share of errors >= η below "
       "the entropy-form bound", "count", "neither", None, "bound"),
    _S("epoch", "training epoch (curves)", "count", "neither", None, "training"),
    _S("train_utility_ce", "task cross-entropy on r + δ per epoch (curves)", "nats", "neither",
       None, "training"),
    _S("train_decoder_mse", "in-training decoder's MSE per epoch (curves; lower = leakier)",
       "MSE", "protection", None, "training"),
    _S("train_noise_entropy", "entropy of δ per coordinate per epoch (curves)", "nats",
       "neither", None, "training"),
):
    register(_spec)

# -- sweeps (core/runs/sweep.py); each point's own metrics are in its row and its stored run
for _spec in (
    _S("points_total", "points of the sweep (grid × seeds)", "count", "neither", None, "sweep"),
    _S("points_run", "points the sweep computed (missing from the store)", "count", "neither",
       None, "sweep"),
    _S("points_cached", "points the sweep found in the store", "count", "neither", None, "sweep"),
):
    register(_spec)

del _S, _spec

# -- headlines per kind
def _budgets(family: str) -> dict[str, str | None]:
    """Each registered defense of ``family``: its budget metric (from its knob in
    core.foundation.parts)."""
    from core.foundation.parts import budget_metrics

    return budget_metrics(family)


_ATTRIBUTE = Headline(utility="utility_acc", attack="attack_auc_best",
                      budget=_budgets("attribute_privacy"))
HEADLINES: dict[str, Headline] = {
    # the budget depends on the defense (λ, ε, pruning rate): its knob's budget metric
    "attribute_privacy": _ATTRIBUTE,
    "tappfl": _ATTRIBUTE,  # the kind's former name
    # a projection has no attack; trustworthiness is its quality
    "projection": Headline(utility="trustworthiness", attack=None, budget=None),
    # each membership defense's knob budget (Inf2Guard λ, DP-SGD ε, κ, ...) from the registry
    "membership": Headline(utility="utility_acc", attack="mia_auc_best",
                           budget=_budgets("membership")),
    # reconstruction quality of the strongest inverter against the defense's knob
    "gradient_leakage": Headline(utility="utility_acc", attack="recon_best_psnr_median",
                                 budget=_budgets("gradient_leakage")),
    # the strongest attribute attack on the noisy weights against the worst-case FIL η
    "fisher_information": Headline(utility="fil_utility_acc", attack="fil_attack_acc_best",
                                   budget="fil_eta"),
    # Inf2Guard vs property inference: per-sample utility, the strongest property attack, λ
    "property": Headline(utility="utility_acc", attack="property_acc_best",
                         budget="tradeoff_lambda"),
    # Inf2Guard's perturbation of shared representations: SSIM of the strongest attack, ε
    "repr_reconstruction": Headline(utility="utility_acc", attack="recon_ssim",
                                    budget="perturbation_scale"),
    # a sweep's headlines are its points' (its rows carry the base kind's)
    "sweep": Headline(utility=None, attack=None, budget=None),
}

#: privacy (leakage) metrics the Compare page offers per kind beside its headline attack
#: (core.runs.compare.metric_choices adds whatever the kind's stored runs report); a kind not
#: listed offers its headline attack and its stored runs' metrics
COMPARE_PRIVACY: dict[str, tuple[str, ...]] = {
    "attribute_privacy": ("attack_auc_best", "attack_bacc_best", "attack_mlp_auc",
                          "attack_logreg_auc", "attack_in_training_bacc", "tpr_at_0p1pct_fpr"),
    "membership": ("mia_auc_best", "mia_tpr_at_0p1pct_fpr_best", "mia_loss_auc",
                   "mia_lira_offline_auc", "mia_lira_offline_bacc",
                   "mia_lira_offline_epsilon_lower_bound", "mia_rmia_auc", "train_test_gap",
                   "audit_epsilon_lower"),
    "gradient_leakage": ("recon_best_psnr_median", "recon_best_psnr", "recon_best_ssim",
                         "model_inversion_ssim_median", "audit_epsilon_lower"),
}
