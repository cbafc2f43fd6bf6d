"""Defenses and attacks as registered parts (DESIGN: Architecture).

A :class:`DefensePart` names its config block (a tagged pydantic model carrying only its own
parameters), the release it produces, its privacy knob and its accounting, and where its
builder lives (per family: :meth:`DefensePart.builder_for`). An :class:`AttackPart` declares
everything a runner, a config and a page need: its :class:`Family`, the name a user writes in
``cfg.attack.attackers`` (:attr:`AttackPart.key`), one display title, the releases it accepts,
what else it needs, whether its scores pool over several target models, its metric names and
its protocol function. Registering a part here is the one edit that makes it appear in the
config's allowed names, the metric schema, the page's attacker list and ``privlab parts``.

Queries: :func:`attacks_for`, :func:`attack_by_config_name`, :func:`config_names`,
:func:`attack_titles`, :func:`defenses_for`; :func:`check_attackers` and
:func:`check_combination` run at config validation (one-line errors), and the pages read the
same entries to grey out what does not apply.

This module is light (no torch): builders and attack functions are ``"module:attr"`` strings
imported on use.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from core.knowledge import ThreatModel
from core.registry import Registry, UnknownName

Direction = Literal["higher_is_more_private", "lower_is_more_private"]

#: what an attack may need beyond the release it observes (its threat card says it in words)
NEEDS = {
    "labels": "the candidate records' labels",
    "shadows": "shadow models trained the target's way on halves of a pool",
    "shadow_encoders": "shadow encoders trained the target's way (defense and λ included) on "
                       "halves of a pool, and their representations of the pool and population",
    "references": "reference (OUT) models and population records z never trained on",
    "encoder": "the released encoder (white box or as a query interface)",
    "aux": "auxiliary records with their private values",
    "in_training": "the defense's own adversary, trained inside its game",
    "gradients": "the uploaded gradient or update and the global model it started from",
    "model": "the released model's weights (white box)",
    "training_data": "every training value but the target's (FIL's white-box attacker)",
}


@dataclass(frozen=True)
class Family:
    """An attack family (one experiment kind): its metric names are
    ``metric_template.format(who=<attack's metric key>, stat=<stat>)`` for each of its
    attacks' ``stats`` (the family's ``stats`` unless an attack declares its own)."""

    name: str
    title: str
    metric_template: str
    stats: tuple[str, ...]


FAMILIES: Registry[Family] = Registry("family")
for _f in (
        Family("attribute_privacy", "attribute inference on released representations",
               "attack_{who}_{stat}", ("acc", "bacc", "auc", "adv", "ce_nats")),
        Family("membership", "membership inference", "mia_{who}_{stat}",
               ("auc", "adv", "bacc", "tpr_at_1pct_fpr", "tpr_at_0p1pct_fpr",
                "epsilon_lower_bound")),
        Family("property", "property inference on aggregated representations",
               "property_{who}_{stat}", ("acc", "bacc", "auc", "ce_nats", "gap")),
        Family("gradient_leakage", "reconstruction from uploaded gradients", "recon_{who}_{stat}",
               ("mse", "psnr", "psnr_median", "ssim", "label_acc", "seconds")),
        Family("repr_reconstruction", "reconstruction from shared representations r + δ",
               "recon_{who}_{stat}", ("mse", "psnr", "ssim", "frac_l2_ge_eta",
                                      "frac_linf_ge_eta")),
        Family("fisher_information", "attribute reconstruction from a perturbed GLM",
               "fil_attack_{who}_{stat}", ("acc",))):
    FAMILIES.register(_f.name, _f)


@dataclass(frozen=True)
class Knob:
    """A defense's privacy knob: the block ``field``, its symbol and range, the slider scale,
    and which way is more private."""

    field: str
    symbol: str
    label: str
    low: float
    high: float
    scale: Literal["linear", "log"]
    direction: Direction
    #: the metric a run reports the knob's effective budget under (Compare's x axis)
    budget_metric: str | None = None
    #: the knob values a comparison sweeps by default (core.compare); empty: five values
    #: spread over [low, high] on the knob's scale
    grid: tuple[float, ...] = ()
    #: the few values a page's teaching sweep (its tradeoff curve) runs, chosen so that the
    #: knob visibly moves the page's metric in minutes on a CPU; empty: the comparison grid
    teaching: tuple[float, ...] = ()
    #: a slider's positions (a select slider over them); empty: a slider over [low, high] with
    #: ``step`` on a linear scale, a 1-2-5 ladder over [low, high] on a log scale
    options: tuple[float, ...] = ()
    #: a linear slider's step; None: a 1-2-5 step giving about 20 positions over [low, high]
    step: float | None = None
    #: (family, ((field, value), ...)): fields whose value differs on one family's page (the κ
    #: channel slides and sweeps other κ on the membership page than in gradient leakage);
    #: read through :meth:`for_family`
    family_fields: tuple[tuple[str, tuple[tuple[str, object], ...]], ...] = ()

    def for_family(self, family: str | None) -> Knob:
        """This knob as ``family``'s page shows it (its :attr:`family_fields` applied)."""
        from dataclasses import replace

        fields = dict(self.family_fields).get(family) if family else None
        return replace(self, family_fields=(), **dict(fields)) if fields else self

    @property
    def more_private(self) -> str:
        """``"higher"`` or ``"lower"``: which way of the knob is more private."""
        return "higher" if self.direction == "higher_is_more_private" else "lower"

    def spread(self, n: int = 5) -> tuple[float, ...]:
        """``n`` values over [low, high] on the knob's scale (4 significant digits)."""
        lo, hi = self.low, self.high
        if self.scale == "log" and lo > 0:
            vals = [lo * (hi / lo) ** (i / (n - 1)) for i in range(n)]
        else:
            vals = [lo + (hi - lo) * i / (n - 1) for i in range(n)]
        return tuple(float(f"{v:.4g}") for v in vals)

    def comparison_grid(self) -> tuple[float, ...]:
        """The values a comparison sweeps by default: :attr:`grid`, else :meth:`spread`."""
        return tuple(float(v) for v in self.grid) or self.spread()

    def teaching_grid(self) -> tuple[float, ...]:
        """The values a page's teaching sweep runs: :attr:`teaching`, else the comparison
        grid."""
        return tuple(float(v) for v in self.teaching) or self.comparison_grid()

    def slider_step(self) -> float:
        """A linear slider's step: :attr:`step`, else a 1-2-5 step of about 20 positions."""
        import math

        if self.step is not None:
            return float(self.step)
        raw = (self.high - self.low) / 20
        mag = 10 ** math.floor(math.log10(raw))
        return float(f"{min((m * mag for m in (1, 2, 5, 10)), key=lambda s: abs(s - raw)):.6g}")

    def positions(self) -> tuple[float, ...]:
        """A select slider's positions: :attr:`options`, else on a log scale the 1-2-5 ladder
        over [low, high] with the teaching grid added (each swept value can be shown); empty
        on a linear scale (a continuous slider with :meth:`slider_step`)."""
        import math

        if self.options:
            return tuple(float(v) for v in self.options)
        if self.scale != "log" or self.low <= 0:
            return ()
        ladder = set()
        e = math.floor(math.log10(self.low))
        while 10.0 ** e <= self.high * 1.0001:
            ladder.update(float(f"{m * 10.0 ** e:.6g}") for m in (1, 2, 5))
            e += 1
        ladder = {v for v in ladder if self.low * 0.9999 <= v <= self.high * 1.0001}
        return tuple(sorted(ladder | set(self.teaching_grid())))


@dataclass(frozen=True)
class DefensePart:
    name: str
    title: str
    families: tuple[str, ...]
    release: str
    knob: Knob | None
    #: accountant name (:data:`core.bounds.accountants.ACCOUNTANTS`) or None for defenses with
    #: no formal guarantee, measured by attacks only
    accounting: str | None
    #: ``"core.module:builder"`` (imported on use) or, for a part defined outside privlab,
    #: the callable itself
    builder: str | Callable[..., Any]
    description: str = ""
    #: (family, release) pairs where the release differs by family (``none`` releases
    #: representations in attribute privacy and uploads in gradient leakage)
    family_releases: tuple[tuple[str, str], ...] = ()
    #: a choice field of the block whose values are defenses of their own on a comparison
    #: plane (the κ channel's Natural / White / ...; core.compare, the Compare page)
    variants: str | None = None
    #: (family, release) pairs the defense releases *besides* its main release there
    #: (Inf2Guard's membership defense publishes its encoder's representations r too)
    extra_releases: tuple[tuple[str, str], ...] = ()
    #: (family, "module:attr") where the family's runner builds the defense with another
    #: builder than :attr:`builder` (``none`` trains plainly outside the FedAvg family)
    family_builders: tuple[tuple[str, str], ...] = ()

    def release_for(self, family: str) -> str:
        """The release this defense produces in ``family``."""
        return dict(self.family_releases).get(family, self.release)

    def releases_for(self, family: str) -> tuple[str, ...]:
        """Every release the adversary observes in ``family`` (the main one first)."""
        extra = tuple(r for f, r in self.extra_releases if f == family)
        return (self.release_for(family), *extra)

    def builder_for(self, family: str) -> str:
        """``"module:attr"`` of the builder the ``family``'s runner calls."""
        return dict(self.family_builders).get(family, self.builder)


@dataclass(frozen=True)
class AttackPart:
    """A registered attack: everything a config, a runner, the metric schema and a page need.

    ``function`` is the protocol function the runner calls through
    :func:`core.attacks.protocol.run_attack` as ``function(release, knowledge, **options,
    **params)``; ``params`` are the ``cfg.attack`` fields it reads, ``options`` fixed keyword
    arguments (the preset a shared function runs). ``config_name`` is what a user writes in
    ``cfg.attack.attackers`` (default: ``name``); ``metric_key`` the ``{who}`` of its metric
    names (default: the config name)."""

    name: str
    title: str
    accepts: tuple[str, ...]
    threat: ThreatModel
    #: ``"core.module:function"`` (imported on use) or, for an attack defined outside
    #: privlab, the callable itself
    function: str | Callable[..., Any]
    #: a fresh attacker (trained after the defense)
    fresh: bool = False
    #: what kind of adversary: "in_training" (the one the defense trained against), "fresh",
    #: "baseline" (no model)
    role: Literal["in_training", "fresh", "baseline"] = "fresh"
    params: tuple[str, ...] = field(default_factory=tuple)
    family: str = "attribute_privacy"
    config_name: str | None = None
    #: keys of :data:`NEEDS`: what it reads beyond the release
    needs: tuple[str, ...] = ()
    #: its scores pool over several target models (the target and shadow models, each scored
    #: against the others: ML Privacy Meter's protocol)
    pools_targets: bool = False
    #: the stat suffixes of its metrics (None: its family's)
    stats: tuple[str, ...] | None = None
    metric_key: str | None = None
    options: tuple[tuple[str, Any], ...] = ()
    #: ``cfg.attack.attackers`` may list it (False: the runner always runs it, or another
    #: switch does: the in-training adversary, the prior, model inversion)
    selectable: bool = True
    #: names of registered :data:`SIGNALS` it reads (the runner computes each once per model
    #: and hands them over as ``release.signals`` / ``release.shadow_signals``)
    signals: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = [n for n in self.needs if n not in NEEDS]
        if unknown:
            raise ValueError(f"needs of attack {self.name!r}: got {unknown[0]!r}; allowed: "
                             f"{', '.join(NEEDS)}")

    @property
    def key(self) -> str:
        """The name a user writes in ``cfg.attack.attackers``."""
        return self.config_name or self.name

    @property
    def who(self) -> str:
        """The ``{who}`` of its metric names."""
        return self.metric_key or self.key

    def stat_names(self) -> tuple[str, ...]:
        return FAMILIES.get(self.family).stats if self.stats is None else self.stats

    def metric_name(self, stat: str) -> str:
        return FAMILIES.get(self.family).metric_template.format(who=self.who, stat=stat)

    def metric_names(self) -> tuple[str, ...]:
        """Every metric name a run reports for this attack."""
        return tuple(self.metric_name(s) for s in self.stat_names())


@dataclass(frozen=True)
class Signal:
    """A per-model array an attack reads (ML Privacy Meter's ``get_signals``): ``function
    (predict, X, y, *, image_shape, seed) -> np.ndarray`` (n, ...), where ``predict(X) ->
    class probabilities (n, C)`` is one model's query interface, ``X`` (n, d) a float tensor on
    the run's device and ``y`` (n,) int64. A runner computes it once per model (the target,
    each shadow) inside its cached model stages."""

    name: str
    title: str
    #: ``"module:attr"`` (imported on use) or the callable itself
    function: str | Callable[..., Any]
    description: str = ""


DEFENSES: Registry[DefensePart] = Registry("defense")
ATTACKS: Registry[AttackPart] = Registry("attack")
SIGNALS: Registry[Signal] = Registry("signal")

# -- defenses of the federated attribute-privacy family ----------------------------------------

_FL = ("attribute_privacy",)
_GL = ("gradient_leakage",)
_MIA = ("membership",)
_CENTRAL = "core.defenses.central"
DEFENSES.register("none", DefensePart(
    name="none", title="none (undefended)", families=_FL + _GL + _MIA, release="representation",
    knob=None, accounting=None, builder="core.defenses.federated:build_none",
    description="Attribute privacy: the encoder trained on the utility term only (λ = 0). "
                "Gradient leakage: plain training, the uploads released as they are.",
    family_releases=(("gradient_leakage", "update"), ("membership", "model")),
    family_builders=(("gradient_leakage", f"{_CENTRAL}:build_plain"),
                     ("membership", f"{_CENTRAL}:build_plain"))))
DEFENSES.register("tappfl", DefensePart(
    name="tappfl", title="TAPPFL (λ)", families=_FL, release="representation",
    knob=Knob("tradeoff_lambda", "λ", "TAPPFL privacy weight", 0.0, 1.0, "linear",
              "higher_is_more_private", budget_metric="tradeoff_lambda",
              grid=(0.0, 0.25, 0.5, 0.75, 1.0),
              # the ends of λ (utility only, privacy only) and the middle: three cold runs
              teaching=(0.0, 0.5, 1.0)),
    accounting=None, builder="core.defenses.federated:build_tappfl",
    description="Encoder trained on −λ·CE(adversary) − (1−λ)·I_JSD(x; r | u) (Eq. 7); "
                "no formal guarantee: measured by attacks."))
DEFENSES.register("dp_gaussian", DefensePart(
    name="dp_gaussian", title="DP-Gaussian on uploads", families=_FL, release="representation",
    knob=Knob("epsilon", "ε", "per-round DP budget", 0.01, 10_000.0, "log",
              "lower_is_more_private", budget_metric="epsilon_accountant",
              grid=(1.0, 4.0, 16.0, 64.0, 256.0)),
    accounting="rdp", builder="core.defenses.federated:build_dp",
    description="Each device's update clipped and noised (Gaussian, per-round (ε, δ))."))
DEFENSES.register("dp_laplace", DefensePart(
    name="dp_laplace", title="DP-Laplace on uploads", families=_FL, release="representation",
    knob=Knob("epsilon", "ε", "per-round DP budget", 0.01, 10_000.0, "log",
              "lower_is_more_private", budget_metric="epsilon_accountant",
              grid=(1.0, 4.0, 16.0, 64.0, 256.0)),
    accounting="basic", builder="core.defenses.federated:build_dp",
    description="Each device's update clipped (L1) and noised (Laplace, per-round pure ε)."))
DEFENSES.register("pruning", DefensePart(
    name="pruning", title="magnitude pruning of uploads", families=_FL, release="representation",
    knob=Knob("rate", "p", "pruning rate", 0.0, 0.99, "linear", "higher_is_more_private",
              budget_metric="pruning_rate", grid=(0.5, 0.8, 0.9, 0.95, 0.99)),
    accounting=None, builder="core.defenses.federated:build_pruning",
    description="The smallest-magnitude fraction of each upload zeroed (TAPPFL's MC baseline)."))

# -- defenses against data reconstruction (spec 001) -------------------------------------------

DEFENSES.register("channel", DefensePart(
    name="channel", title="κ channel (data-space noise)", families=_GL + _MIA, release="update",
    family_releases=(("membership", "model"),), variants="channel",
    knob=Knob("kappa", "κ", "capacity per round (nats)", 0.01, 1e5, "log",
              "lower_is_more_private", budget_metric="kappa", grid=(2.0, 8.0, 32.0, 128.0, 512.0),
              # gradient leakage scales κ with the image dimension d (its page: κ/d grids)
              family_fields=(("membership", (
                  ("options", (5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 300.0, 600.0)),
                  ("teaching", (20.0, 80.0, 300.0)))),)),
    accounting="capacity", builder=f"{_CENTRAL}:build_channel",
    description="The model trains on D̃ = D + ξ with ξ solved from the capacity κ (Eq. 18): "
                "Natural σI, White ∝ Σ_D (Eq. 19), Personalized σ·diag β (Eq. 20, exact via "
                "β-whitening), Laplace (a derived bound). I(D; upload | W_i) ≤ κ per round."))
DEFENSES.register("dp_sgd", DefensePart(
    name="dp_sgd", title="DP-SGD (Opacus)", families=_GL + _MIA, release="update",
    family_releases=(("membership", "model"),),
    knob=Knob("target_epsilon", "ε", "target DP budget (z solved by the accountant)", 0.1,
              1000.0, "log", "lower_is_more_private", budget_metric="epsilon_accountant",
              grid=(1.0, 2.0, 4.0, 8.0)),
    accounting="prv", builder=f"{_CENTRAL}:build_dpsgd",
    description="Per-sample clipping and Gaussian noise on the batch gradient (Abadi et al. "
                "2016) through Opacus, trained with its own recipe (full-batch SGD); the knob "
                "is the target ε (z solved by the PRV accountant, RDP where PRV is "
                "unreliable); noise_multiplier 0 is clipping without noise (ε = ∞); capacity "
                "B/z² per step (Thm 4, tight B/(2z²))."))

DEFENSES.register("inf2guard", DefensePart(
    name="inf2guard", title="Inf2Guard (λ)", families=_MIA, release="model",
    extra_releases=(("membership", "representation"),),
    knob=Knob("tradeoff_lambda", "λ", "Inf2Guard privacy weight", 0.0, 1.0, "linear",
              "higher_is_more_private", budget_metric="tradeoff_lambda",
              grid=(0.0, 0.25, 0.5, 0.75, 1.0)),
    accounting=None, builder=f"{_CENTRAL}:build_inf2guard",
    description="Encoder, task head and a membership adversary in the game of Eq. 6 "
                "(Algorithm 1); no formal guarantee: measured by attacks (and Theorem 1's "
                "leakage bound at an estimated H(u|r)). Releases the model and its encoder's r."))

# -- membership-inference attacks (config names without the ``mia_`` prefix) -----------------

_SEES_MODEL = "the released model's outputs (class probabilities) on the candidate records"
_KNOWS_REC = "each candidate record (x, y)"
_KNOWS_SHADOW = (_KNOWS_REC + "; a shadow pool of the same distribution and the training "
                 "algorithm, defense included (it trains shadow models the target's way)")
_GOAL_M = "decide whether each candidate record was in the training set"
_MEM = "core.attacks.membership"
for _n, _t, _k, _needs, _pool in (
        ("loss", "loss threshold (Yeom et al.)", _KNOWS_REC, ("labels",), True),
        ("confidence", "confidence threshold", _KNOWS_REC, ("labels",), True),
        ("entropy", "entropy threshold", "each candidate record x", (), False),
        ("modified_entropy", "modified entropy (Song & Mittal)", _KNOWS_REC, ("labels",), False),
        ("lira_offline", "LiRA (offline)", _KNOWS_SHADOW, ("labels", "shadows"), True),
        ("lira_online", "LiRA (online)", _KNOWS_SHADOW, ("labels", "shadows"), True),
        ("rmia", "RMIA (offline)", _KNOWS_SHADOW + "; population records z never used in "
         "training", ("labels", "shadows", "references"), True)):
    ATTACKS.register(f"mia_{_n}", AttackPart(
        name=f"mia_{_n}", title=_t, accepts=("model",),
        threat=ThreatModel(sees=_SEES_MODEL, knows=_k, goal=_GOAL_M),
        function=f"{_MEM}:{_n}_on_release", fresh=True, family="membership", config_name=_n,
        needs=_needs, pools_targets=_pool,
        params=("rmia_references", "rmia_a") if _n == "rmia" else ()))
ATTACKS.register("mia_representation", AttackPart(
    name="mia_representation", title="representation attack (fresh MLP on r)",
    accepts=("representation",),
    threat=ThreatModel(sees="Inf2Guard's released representations r of the candidate records",
                       knows="the membership of 80 % of the pool (its training folds)",
                       goal=_GOAL_M),
    function=f"{_MEM}:representation_attack", fresh=True, family="membership",
    config_name="representation", needs=("aux",)))
_SEES_R_Y = ("Inf2Guard's released representations r of the candidate records; the encoder "
             "as a query interface (served as an API, Inf2Guard §3)")
_KNOWS_POP = ("each candidate's label y; population records z (aux rows outside D0, in no "
              "training set) with their labels, encoded by the target encoder")
ATTACKS.register("mia_representation_head", AttackPart(
    name="mia_representation_head", title="representation head statistic (r, y; no shadows)",
    accepts=("representation",),
    threat=ThreatModel(sees=_SEES_R_Y,
                       knows=_KNOWS_POP + "; it fits a logistic head on the population's (r, y) "
                             "and thresholds φ = logit p(y | r) (Yeom's loss attack carried to r)",
                       goal=_GOAL_M),
    function=f"{_MEM}:representation_head_on_release", fresh=True, family="membership",
    config_name="representation_head", needs=("labels", "encoder", "references")))
ATTACKS.register("mia_representation_lira", AttackPart(
    name="mia_representation_lira", title="representation LiRA (r, y; shadow encoders)",
    accepts=("representation",),
    threat=ThreatModel(sees=_SEES_R_Y,
                       knows=_KNOWS_POP + "; the architecture and the training algorithm "
                             "(Inf2Guard at the target's λ): it trains `shadows` shadow encoders "
                             "on halves of the candidate pool and runs online LiRA on the head "
                             "statistic φ of each encoder (recipe: mnist5k, 500 members, 60 "
                             "epochs, 16 shadows; the shadows cost about 16 target trainings)",
                       goal=_GOAL_M),
    function=f"{_MEM}:representation_lira_on_release", fresh=True, family="membership",
    config_name="representation_lira",
    needs=("labels", "encoder", "references", "shadow_encoders")))
ATTACKS.register("mia_in_training", AttackPart(
    name="mia_in_training", title="Inf2Guard's own membership adversary Ψ",
    accepts=("representation",),
    threat=ThreatModel(sees="r of the candidate records",
                       knows="nothing beyond its training: the adversary trained inside the "
                             "game against the encoder (the one the defense fights)",
                       goal=_GOAL_M),
    function=f"{_MEM}:in_training_attack", role="in_training", family="membership",
    config_name="in_training", needs=("in_training",)))

# -- gradient-inversion attacks (spec 001 §1.3-1.4): presets of one spec ----------------------

_SEES_UPD = ("one upload per target: a step's gradient (or a FedAvg local update) of the "
             "victim's batch, and the global model it started from")
_KNOWS_ARCH = "the architecture and the loss; not the data, not the defense's noise draw"
_GOAL_X = "reconstruct the victim's (clean) training images"
_INV = "core.attacks.gradient_inversion:invert_upload"
_GL_PARAMS = ("iterations", "batch_size", "observation", "local_steps", "local_lr")
ATTACKS.register("dlg", AttackPart(
    name="dlg", title="DLG (L2, L-BFGS, labels joint)", accepts=("update",),
    threat=ThreatModel(sees=_SEES_UPD, knows=_KNOWS_ARCH, goal=_GOAL_X + " and labels"),
    function=_INV, fresh=True, family="gradient_leakage", needs=("gradients",),
    options=(("preset", "dlg"),), params=_GL_PARAMS))
ATTACKS.register("idlg", AttackPart(
    name="idlg", title="iDLG (labels from the last layer)", accepts=("update",),
    threat=ThreatModel(sees=_SEES_UPD, knows=_KNOWS_ARCH, goal=_GOAL_X),
    function=_INV, fresh=True, family="gradient_leakage", needs=("gradients",),
    options=(("preset", "idlg"),), params=_GL_PARAMS))
ATTACKS.register("ig", AttackPart(
    name="ig", title="Inverting Gradients (cosine + TV, Adam)", accepts=("update",),
    threat=ThreatModel(sees=_SEES_UPD, knows=_KNOWS_ARCH + "; an image prior (total variation)",
                       goal=_GOAL_X),
    function=_INV, fresh=True, family="gradient_leakage", needs=("gradients",),
    options=(("preset", "ig"),), params=_GL_PARAMS))
ATTACKS.register("model_inversion", AttackPart(
    name="model_inversion", title="model inversion (class representatives)", accepts=("model",),
    threat=ThreatModel(sees="the trained model (white box)",
                       knows="the mean of images outside the training set (the start point)",
                       goal="a representative image of each class (scored against the class "
                            "centre)"),
    function="core.attacks.gradient_inversion:model_inversion_attack", role="fresh",
    family="gradient_leakage", needs=("model", "aux"), stats=(), selectable=False))

# -- attribute-inference attacks ---------------------------------------------------------------

_SEES_R = "the released representations r of the target rows (test split) and the encoder"
_KNOWS_AUX = "auxiliary rows (aux split) with their attribute values, encoded with the released encoder"
_GOAL_U = "infer each target row's private attribute u"
ATTACKS.register("in_training", AttackPart(
    name="in_training", title="in-training adversary Ψ", accepts=("representation",),
    threat=ThreatModel(sees="r of the target rows",
                       knows="nothing beyond its training: the devices' own Ψ_k, trained during "
                             "FedAvg against the encoder (the adversary the defense fights); "
                             "it decides class-balanced with the aux split's attribute "
                             "frequencies, as the fresh attackers do",
                       goal=_GOAL_U),
    function="core.attacks.protocol:in_training_attack", role="in_training",
    family="attribute_privacy", needs=("in_training",), selectable=False))
ATTACKS.register("logreg", AttackPart(
    name="logreg", title="fresh logistic regression", accepts=("representation", "raw"),
    threat=ThreatModel(sees=_SEES_R, knows=_KNOWS_AUX, goal=_GOAL_U),
    function="core.attacks.protocol:fresh_attack", fresh=True, params=("max_train",),
    family="attribute_privacy", needs=("encoder", "aux"), options=(("model", "logreg"),)))
ATTACKS.register("mlp", AttackPart(
    name="mlp", title="fresh MLP", accepts=("representation", "raw"),
    threat=ThreatModel(sees=_SEES_R, knows=_KNOWS_AUX, goal=_GOAL_U),
    function="core.attacks.protocol:fresh_attack", fresh=True,
    params=("mlp_hidden", "mlp_epochs", "max_train"), family="attribute_privacy",
    needs=("encoder", "aux"), options=(("model", "mlp"),)))
ATTACKS.register("prior", AttackPart(
    name="prior", title="prior (no model)", accepts=("representation", "raw", "model", "update"),
    threat=ThreatModel(sees="nothing", knows="the attribute's frequencies in the aux rows",
                       goal=_GOAL_U),
    function="core.attacks.protocol:prior_attack", role="baseline", family="attribute_privacy",
    needs=("aux",), selectable=False))

# -- Fisher information loss (spec 002 Part A): output perturbation and its attacks ------------

_FIL = ("fisher_information",)
DEFENSES.register("fil_output_perturbation", DefensePart(
    name="fil_output_perturbation", title="FIL output perturbation (σ)", families=_FIL,
    release="model",
    knob=Knob("eta_target", "η", "target FIL η (worst case)", 1e-4, 1e4, "log",
              "lower_is_more_private", budget_metric="fil_eta", grid=(0.1, 0.3, 1.0, 3.0, 10.0)),
    accounting="fil", builder="core.defenses.fil_output:resolve_sigma",
    description="L2-regularised linear / logistic regression trained to optimality and released "
                "as w' = w* + N(0, σ²I); σ set directly, from a target η (η = ‖J‖₂/σ, Eq. 17) "
                "or from (ε, δ) via the sensitivity 2/(nλ) (logistic, unit ball)."))
_SEES_W = "the released noisy weights w' = w* + N(0, σ²I) of the linear / logistic model"
_GOAL_T = "infer each training row's target attribute (or label)"
_FA = "core.attacks.fil_attacks"
ATTACKS.register("fil_white_box", AttackPart(
    name="fil_white_box", title="white-box (Eq. 30)", accepts=("model",),
    threat=ThreatModel(sees=_SEES_W,
                       knows="every training value but the target (the rest of the row and "
                             "every other row), the training algorithm (loss, λ, IRFIL weights) "
                             "and σ",
                       goal=_GOAL_T + ": the candidate whose refit is nearest to w'"),
    function=f"{_FA}:white_box_on_release", role="fresh", family="fisher_information",
    metric_key="white_box", needs=("training_data",)))
ATTACKS.register("fil_black_box", AttackPart(
    name="fil_black_box", title="black-box (Eq. 31, Fredrikson et al.)", accepts=("model",),
    threat=ThreatModel(sees="query access to the released model: its predictions φ(w', x)",
                       knows="the target row but its attribute, its label, the attribute's "
                             "training marginal and the model's training error statistics",
                       goal=_GOAL_T + ": argmax prior × fit of the prediction to the label"),
    function=f"{_FA}:black_box_on_release", role="fresh", family="fisher_information",
    metric_key="black_box", needs=("labels",)))
ATTACKS.register("fil_prior", AttackPart(
    name="fil_prior", title="prior (no model)", accepts=("model",),
    threat=ThreatModel(sees="nothing", knows="the attribute's training marginal",
                       goal=_GOAL_T + ": always its most frequent value"),
    function=f"{_FA}:prior_on_release", role="baseline", family="fisher_information",
    metric_key="prior"))

# -- property inference (Inf2Guard, spec 004 §2.2 / §3.2) --------------------------------------

_PIA = ("property",)
DEFENSES.register("inf2guard_property", DefensePart(
    name="inf2guard_property", title="Inf2Guard vs property inference (λ)", families=_PIA,
    release="representation", family_releases=(("property", "subset_representation"),),
    knob=Knob("tradeoff_lambda", "λ", "Inf2Guard privacy weight", 0.0, 1.0, "linear",
              "higher_is_more_private", budget_metric="tradeoff_lambda",
              grid=(0.0, 0.25, 0.5, 0.75, 1.0),
              # no defense, a light one and the page's default λ: the sweep the finding reads
              teaching=(0.0, 0.25, 0.75)),
    accounting=None, builder="core.defenses.inf2guard_property:train_inf2guard_property",
    description="Encoder, per-sample task head and a K-way property adversary on aggregated "
                "subset representations in the game of Eq. 11 (Algorithm 2); λ = 0 is no "
                "defense; no formal guarantee: measured by attacks and the K-ary Fano bound."))
_SEES_AGG = ("the aggregated representation Agg({f(x)}) (mean or max) of each target subset "
             "of the test split")
_KNOWS_SHADOW = ("the released encoder and the aggregator; shadow subsets it builds from its "
                 "auxiliary rows (aux split) with their attribute values, so their properties")
_GOAL_P = "infer each target subset's property: the share of the attribute value, binned into K"
_PA = "core.attacks.property"
ATTACKS.register("property_in_training", AttackPart(
    name="property_in_training", title="in-training property adversary Ψ",
    accepts=("subset_representation",),
    threat=ThreatModel(sees=_SEES_AGG,
                       knows="nothing beyond its training: Ψ was trained in Algorithm 2 against "
                             "the encoder, on the defender's subsets (the adversary the defense "
                             "fights); it decides class-balanced with the shadow subsets' bin "
                             "frequencies, as the fresh attackers do", goal=_GOAL_P),
    function=f"{_PA}:in_training_on_release", role="in_training", family="property",
    config_name="in_training", needs=("in_training",)))
ATTACKS.register("property_mlp", AttackPart(
    name="property_mlp", title="fresh MLP on shadow subsets", accepts=("subset_representation",),
    threat=ThreatModel(sees=_SEES_AGG, knows=_KNOWS_SHADOW, goal=_GOAL_P),
    function=f"{_PA}:fresh_on_release", role="fresh", family="property", config_name="mlp",
    params=("mlp_hidden", "mlp_epochs", "aggregation"), needs=("encoder", "aux"),
    options=(("model", "mlp"),)))
ATTACKS.register("property_logreg", AttackPart(
    name="property_logreg", title="fresh logistic regression on shadow subsets",
    accepts=("subset_representation",),
    threat=ThreatModel(sees=_SEES_AGG, knows=_KNOWS_SHADOW, goal=_GOAL_P),
    function=f"{_PA}:fresh_on_release", role="fresh", family="property", config_name="logreg",
    params=("mlp_hidden", "mlp_epochs", "aggregation"), needs=("encoder", "aux"),
    options=(("model", "logreg"),)))
ATTACKS.register("property_prior", AttackPart(
    name="property_prior", title="prior (no model)", accepts=("subset_representation",),
    threat=ThreatModel(sees="nothing", knows="the bin frequencies of its shadow subsets",
                       goal=_GOAL_P + ": always its most frequent bin"),
    function=f"{_PA}:prior_on_release", role="baseline", family="property",
    config_name="prior", needs=("aux",)))


# -- reconstruction from shared representations (Inf2Guard, spec 004 §2.3 / §3.3) ------------

_RR = ("repr_reconstruction",)
DEFENSES.register("inf2guard_dra", DefensePart(
    name="inf2guard_dra", title="Inf2Guard perturbation r + δ (ε, channel)", families=_RR,
    release="representation", family_releases=(("repr_reconstruction", "noisy_representation"),),
    variants="channel",
    knob=Knob("epsilon", "ε", "Inf2Guard noise scale (not a DP budget)", 0.0, 10.0, "linear",
              "higher_is_more_private", budget_metric="perturbation_scale",
              options=(0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0),
              grid=(0.0, 0.5, 1.0, 2.0, 4.0)),
    accounting=None, builder="core.defenses.inf2guard_reconstruction:train_inf2guard_dra",
    description="The shared representation is r + δ: learned δ = ε·tanh(u), u ~ N(μ, σ²) "
                "(Eq. 21, Algorithms 3-4, β = λα/(1−λ)), or fixed Gaussian / Laplace / uniform "
                "noise at the same ε, or the Gaussian mechanism on the clipped r (dp: (ε_DP, δ) "
                "reported); the encoder trains with the noise in the loop against a decoder "
                "adversary (λ). Bounded by Theorem 3 at an estimated I(x; r + δ)."))
_SEES_RD = "the released r + δ of each target image (one noise draw per target)"
_GOAL_X_RD = "reconstruct each target image x from r + δ"
_RA = "core.attacks.reconstruction"
ATTACKS.register("decoder_in_training", AttackPart(
    name="decoder_in_training", title="in-training decoder Ψ",
    accepts=("noisy_representation",),
    threat=ThreatModel(sees=_SEES_RD,
                       knows="nothing beyond its training: the decoder the defense trained "
                             "against, on the defender's own (x, r + δ) pairs",
                       goal=_GOAL_X_RD),
    function=f"{_RA}:in_training_decoder", role="in_training", family="repr_reconstruction",
    needs=("in_training",)))
ATTACKS.register("decoder_fresh", AttackPart(
    name="decoder_fresh", title="fresh decoder (larger, trained afterwards)",
    accepts=("noisy_representation",),
    threat=ThreatModel(sees=_SEES_RD,
                       knows="the encoder as a query interface and the noise distribution p_Φ "
                             "(ε, channel, learned μ, σ); auxiliary images (aux split) it "
                             "encodes and perturbs itself to train on (x, r + δ)",
                       goal=_GOAL_X_RD),
    function=f"{_RA}:fresh_decoder", role="fresh", family="repr_reconstruction",
    params=("fresh_hidden", "fresh_epochs"), needs=("encoder", "aux")))
ATTACKS.register("inversion", AttackPart(
    name="inversion", title="optimisation inversion (‖f(x) − r̃‖² + TV)",
    accepts=("noisy_representation",),
    threat=ThreatModel(sees=_SEES_RD,
                       knows="the encoder's weights (white box) and an image prior (total "
                             "variation); no auxiliary data",
                       goal=_GOAL_X_RD),
    function=f"{_RA}:optimisation_inversion", role="fresh", family="repr_reconstruction",
    params=("inversion_iterations", "inversion_tv"), needs=("encoder",)))


# -- queries: configs, the metric schema, pages and the CLI read these ------------------------


def attacks_for(family: str) -> list[AttackPart]:
    """The attacks of ``family`` in registration order (an unknown family: one-line error)."""
    FAMILIES.get(family)
    return [a for a in ATTACKS.values() if a.family == family]


def config_names(family: str) -> tuple[str, ...]:
    """The names ``cfg.attack.attackers`` of ``family`` may hold, in registration order."""
    return tuple(a.key for a in attacks_for(family) if a.selectable)


def attack_by_config_name(family: str, name: str) -> AttackPart:
    """The part a ``family`` config names ``name`` (membership's ``loss`` is ``mia_loss``)."""
    for a in attacks_for(family):
        if a.key == name:
            return a
    raise UnknownName(f"attack: got {name!r}; allowed for {family}: "
                      f"{', '.join(a.key for a in attacks_for(family))}")


def attack_titles(family: str) -> dict[str, str]:
    """Config name -> the one display title, for every attack of ``family``."""
    return {a.key: a.title for a in attacks_for(family)}


def defenses_for(family: str) -> list[str]:
    """Registered defenses of ``family`` (``none`` included)."""
    return [n for n, d in DEFENSES.items() if family in d.families]


def applicable_attacks(release: str) -> list[str]:
    """Attack names that accept ``release``."""
    return [n for n, a in ATTACKS.items() if release in a.accepts]


def check_attackers(family: str, attackers: Iterable[str]) -> None:
    """Raise ValueError (one line, field ``attackers``) unless ``attackers`` is a non-empty
    list of distinct config names of ``family``."""
    allowed = config_names(family)
    attackers = list(attackers)
    if not attackers:
        raise ValueError(f"attackers: got an empty list; choose from {', '.join(allowed)}")
    for a in attackers:
        if a not in allowed:
            raise ValueError(f"attackers: got {a!r}; allowed: {', '.join(allowed)}")
    if len(set(attackers)) != len(attackers):
        raise ValueError(f"attackers: got {attackers}; each attacker at most once")


def check_combination(family: str, defense: str, attackers: Iterable[str]) -> None:
    """Raise ValueError (one line naming the field) if the defense does not belong to the
    family or an attacker (a config name of ``family``) accepts none of the releases the
    defense produces there."""
    part = DEFENSES.get(defense)
    if family not in part.families:
        raise ValueError(f"defense.kind: got {defense!r}; allowed for {family}: "
                         f"{', '.join(defenses_for(family))}")
    releases = part.releases_for(family)
    for name in attackers:
        att = attack_by_config_name(family, name)
        if not set(att.accepts) & set(releases):
            ok = [a.key for a in attacks_for(family)
                  if a.selectable and set(a.accepts) & set(releases)]
            raise ValueError(
                f"attack.attackers: {name!r} attacks {' or '.join(att.accepts)} releases; "
                f"defense {defense!r} releases {' and '.join(r + 's' for r in releases)} "
                f"(allowed here: {', '.join(ok)})")


def _object_path(obj: str | Callable[..., Any]) -> str:
    """A registry entry's ``"module:attr"`` (a callable registered directly reads the same)."""
    return obj if isinstance(obj, str) else f"{obj.__module__}:{obj.__qualname__}"


def describe() -> dict[str, list[dict[str, Any]]]:
    """Every registered defense and attack as plain data (``privlab parts``)."""
    defenses = []
    for name, d in DEFENSES.items():
        k = d.knob
        defenses.append({
            "name": name, "title": d.title, "families": list(d.families),
            "release": {f: list(d.releases_for(f)) for f in d.families},
            "knob": None if k is None else {
                "field": k.field, "symbol": k.symbol, "label": k.label, "low": k.low,
                "high": k.high, "scale": k.scale, "direction": k.direction},
            "accounting": d.accounting,
            "builder": {f: _object_path(d.builder_for(f)) for f in d.families}})
    attacks = [{"name": name, "config_name": a.key, "family": a.family, "title": a.title,
                "accepts": list(a.accepts), "needs": list(a.needs), "role": a.role,
                "selectable": a.selectable, "pools_targets": a.pools_targets,
                "signals": list(a.signals),
                "threat": a.threat.as_dict(), "metrics": list(a.metric_names()),
                "function": _object_path(a.function)}
               for name, a in ATTACKS.items()]
    return {"defenses": defenses, "attacks": attacks}


def _import_catalog() -> None:
    """Import every module of :mod:`core.catalog` (each one part's declaration): adding a
    file there is the one edit that registers a part."""
    import importlib
    import pkgutil

    # imported by name, not by an import statement: the catalog's modules are parts (they
    # point at attacks and defenses) that this registry collects, not code it calls
    catalog = importlib.import_module(f"{__package__}.catalog")
    for info in pkgutil.iter_modules(catalog.__path__):
        importlib.import_module(f"{catalog.__name__}.{info.name}")


_import_catalog()
