"""Defenses and attacks as registered parts (DESIGN: Architecture).

A :class:`DefensePart` names its config block (a tagged pydantic model carrying only its own
parameters), the release it produces, its privacy knob and its accounting, and where its
builder lives. An :class:`AttackPart` names the releases it accepts, its threat-model card and
its function. :func:`check_combination` runs at config validation (one-line errors), and the
pages read the same entries to grey out what does not apply.

This module is light (no torch): builders and attack functions are ``"module:attr"`` strings
imported on use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from core.knowledge import ThreatModel
from core.registry import Registry

Direction = Literal["higher_is_more_private", "lower_is_more_private"]


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
    builder: str
    description: str = ""
    #: (family, release) pairs where the release differs by family (``none`` releases
    #: representations in attribute privacy and uploads in gradient leakage)
    family_releases: tuple[tuple[str, str], ...] = ()
    #: a choice field of the block whose values are defenses of their own on a comparison
    #: plane (the κ channel's Natural / White / ...; core.compare, the Compare page)
    variants: str | None = None

    def release_for(self, family: str) -> str:
        """The release this defense produces in ``family``."""
        return dict(self.family_releases).get(family, self.release)


@dataclass(frozen=True)
class AttackPart:
    name: str
    title: str
    accepts: tuple[str, ...]
    threat: ThreatModel
    function: str
    #: a fresh attacker the config's ``attack.attackers`` may list (trained after the defense)
    fresh: bool = False
    #: what kind of adversary: "in_training" (the one the defense trained against), "fresh",
    #: "baseline" (no model)
    role: Literal["in_training", "fresh", "baseline"] = "fresh"
    params: tuple[str, ...] = field(default_factory=tuple)


DEFENSES: Registry[DefensePart] = Registry("defense")
ATTACKS: Registry[AttackPart] = Registry("attack")

# -- defenses of the federated attribute-privacy family ----------------------------------------

_FL = ("attribute_privacy",)
_GL = ("gradient_leakage",)
_MIA = ("membership",)
DEFENSES.register("none", DefensePart(
    name="none", title="none (undefended)", families=_FL + _GL + _MIA, release="representation",
    knob=None, accounting=None, builder="core.defenses.federated:build_none",
    description="Attribute privacy: the encoder trained on the utility term only (λ = 0). "
                "Gradient leakage: plain training, the uploads released as they are.",
    family_releases=(("gradient_leakage", "update"), ("membership", "model"))))
DEFENSES.register("tappfl", DefensePart(
    name="tappfl", title="TAPPFL (λ)", families=_FL, release="representation",
    knob=Knob("tradeoff_lambda", "λ", "TAPPFL privacy weight", 0.0, 1.0, "linear",
              "higher_is_more_private", budget_metric="tradeoff_lambda",
              grid=(0.0, 0.25, 0.5, 0.75, 1.0)),
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
    accounting="capacity", builder="core.runs.gradient_stages:build_channel",
    description="The model trains on D̃ = D + ξ with ξ solved from the capacity κ (Eq. 18): "
                "Natural σI, White ∝ Σ_D (Eq. 19), Personalized σ·diag β (Eq. 20, exact via "
                "β-whitening), Laplace (a derived bound). I(D; upload | W_i) ≤ κ per round."))
DEFENSES.register("dp_sgd", DefensePart(
    name="dp_sgd", title="DP-SGD (Opacus)", families=_GL + _MIA, release="update",
    family_releases=(("membership", "model"),),
    knob=Knob("noise_multiplier", "z", "noise multiplier", 0.05, 100.0, "log",
              "higher_is_more_private", budget_metric="epsilon_accountant",
              options=(0.1, 0.2, 0.3, 0.45, 0.6, 0.8, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0),
              family_fields=(("gradient_leakage", (("teaching", (0.3, 0.6, 1.0, 2.0, 4.0)),)),),
              grid=(0.3, 0.6, 1.0, 2.0)),
    accounting="prv", builder="core.defenses.dpsgd:train_dpsgd",
    description="Per-sample clipping and Gaussian noise on the batch gradient (Abadi et al. "
                "2016) through Opacus; ε from the PRV accountant (RDP where PRV is unreliable); "
                "capacity B/z² per step (Thm 4, tight B/(2z²))."))

DEFENSES.register("inf2guard", DefensePart(
    name="inf2guard", title="Inf2Guard (λ)", families=_MIA, release="model",
    knob=Knob("tradeoff_lambda", "λ", "Inf2Guard privacy weight", 0.0, 1.0, "linear",
              "higher_is_more_private", budget_metric="tradeoff_lambda",
              grid=(0.0, 0.25, 0.5, 0.75, 1.0)),
    accounting=None, builder="core.defenses.inf2guard:train_inf2guard",
    description="Encoder, task head and a membership adversary in the game of Eq. 6 "
                "(Algorithm 1); no formal guarantee: measured by attacks (and Theorem 1's "
                "leakage bound at an estimated H(u|r))."))

# -- membership-inference attacks (config names without the ``mia_`` prefix) -----------------

_SEES_MODEL = "the released model's outputs (class probabilities) on the candidate records"
_KNOWS_REC = "each candidate record (x, y)"
_KNOWS_SHADOW = (_KNOWS_REC + "; a shadow pool of the same distribution and the training "
                 "algorithm, defense included (it trains shadow models the target's way)")
_GOAL_M = "decide whether each candidate record was in the training set"
for _n, _t, _k, _f in (
        ("loss", "loss threshold (Yeom et al.)", _KNOWS_REC, "loss_attack"),
        ("confidence", "confidence threshold", _KNOWS_REC, "confidence_attack"),
        ("entropy", "entropy threshold", "each candidate record x", "entropy_attack"),
        ("lira_offline", "LiRA offline (OUT shadows)", _KNOWS_SHADOW, "lira_offline"),
        ("lira_online", "LiRA online (IN and OUT shadows)", _KNOWS_SHADOW, "lira_online"),
        ("rmia", "RMIA offline (reference models, population z)",
         _KNOWS_SHADOW + "; population records z never used in training", "rmia")):
    ATTACKS.register(f"mia_{_n}", AttackPart(
        name=f"mia_{_n}", title=_t, accepts=("model",),
        threat=ThreatModel(sees=_SEES_MODEL, knows=_k, goal=_GOAL_M),
        function=f"core.attacks.membership:{_f}", fresh=True))
ATTACKS.register("mia_representation", AttackPart(
    name="mia_representation", title="representation attack (fresh MLP on r)",
    accepts=("representation",),
    threat=ThreatModel(sees="Inf2Guard's released representations r of the candidate records",
                       knows="the membership of 80 % of the pool (its training folds)",
                       goal=_GOAL_M),
    function="core.runs.membership:_representation_attack", fresh=True))
ATTACKS.register("mia_in_training", AttackPart(
    name="mia_in_training", title="Inf2Guard's own membership adversary Ψ",
    accepts=("representation",),
    threat=ThreatModel(sees="r of the candidate records",
                       knows="nothing beyond its training: the adversary trained inside the "
                             "game against the encoder (the one the defense fights)",
                       goal=_GOAL_M),
    function="core.defenses.inf2guard:Inf2GuardModel.membership_proba", role="in_training"))

# -- gradient-inversion attacks (spec 001 §1.3-1.4): presets of one spec ----------------------

_SEES_UPD = ("one upload per target: a step's gradient (or a FedAvg local update) of the "
             "victim's batch, and the global model it started from")
_KNOWS_ARCH = "the architecture and the loss; not the data, not the defense's noise draw"
_GOAL_X = "reconstruct the victim's (clean) training images"
ATTACKS.register("dlg", AttackPart(
    name="dlg", title="DLG (L2, L-BFGS, labels joint)", accepts=("update",),
    threat=ThreatModel(sees=_SEES_UPD, knows=_KNOWS_ARCH, goal=_GOAL_X + " and labels"),
    function="core.attacks.gradient_inversion:invert", fresh=True))
ATTACKS.register("idlg", AttackPart(
    name="idlg", title="iDLG (labels from the last layer)", accepts=("update",),
    threat=ThreatModel(sees=_SEES_UPD, knows=_KNOWS_ARCH, goal=_GOAL_X),
    function="core.attacks.gradient_inversion:invert", fresh=True))
ATTACKS.register("ig", AttackPart(
    name="ig", title="Inverting Gradients (cosine + TV, Adam)", accepts=("update",),
    threat=ThreatModel(sees=_SEES_UPD, knows=_KNOWS_ARCH + "; an image prior (total variation)",
                       goal=_GOAL_X),
    function="core.attacks.gradient_inversion:invert", fresh=True))
ATTACKS.register("model_inversion", AttackPart(
    name="model_inversion", title="model inversion (class representatives)", accepts=("model",),
    threat=ThreatModel(sees="the trained model (white box)",
                       knows="the mean of images outside the training set (the start point)",
                       goal="a representative image of each class (scored against the class "
                            "centre)"),
    function="core.attacks.gradient_inversion:model_inversion", role="fresh"))

# -- attribute-inference attacks ---------------------------------------------------------------

_SEES_R = "the released representations r of the target rows (test split) and the encoder"
_KNOWS_AUX = "auxiliary rows (aux split) with their attribute values, encoded with the released encoder"
_GOAL_U = "infer each target row's private attribute u"
ATTACKS.register("in_training", AttackPart(
    name="in_training", title="in-training adversary Ψ", accepts=("representation",),
    threat=ThreatModel(sees="r of the target rows",
                       knows="nothing beyond its training: the devices' own Ψ_k, trained during "
                             "FedAvg against the encoder (the adversary the defense fights)",
                       goal=_GOAL_U),
    function="core.attacks.protocol:in_training_attack", role="in_training"))
ATTACKS.register("logreg", AttackPart(
    name="logreg", title="fresh logistic regression", accepts=("representation", "raw"),
    threat=ThreatModel(sees=_SEES_R, knows=_KNOWS_AUX, goal=_GOAL_U),
    function="core.attacks.protocol:fresh_attack", fresh=True, params=("max_train",)))
ATTACKS.register("mlp", AttackPart(
    name="mlp", title="fresh MLP", accepts=("representation", "raw"),
    threat=ThreatModel(sees=_SEES_R, knows=_KNOWS_AUX, goal=_GOAL_U),
    function="core.attacks.protocol:fresh_attack", fresh=True,
    params=("mlp_hidden", "mlp_epochs", "max_train")))
ATTACKS.register("prior", AttackPart(
    name="prior", title="prior (no model)", accepts=("representation", "raw", "model", "update"),
    threat=ThreatModel(sees="nothing", knows="the attribute's frequencies in the aux rows",
                       goal=_GOAL_U),
    function="core.attacks.protocol:prior_attack", role="baseline"))

# -- Fisher information loss (spec 002 Part A): output perturbation and its attacks ------------

_FIL = ("fisher_information",)
DEFENSES.register("fil_output_perturbation", DefensePart(
    name="fil_output_perturbation", title="FIL output perturbation (σ)", families=_FIL,
    release="model",
    knob=Knob("eta_target", "η", "target FIL η (worst case)", 1e-4, 1e4, "log",
              "lower_is_more_private", budget_metric="fil_eta", grid=(0.1, 0.3, 1.0, 3.0, 10.0)),
    accounting="fil", builder="core.runs.fisher_information:resolve_sigma",
    description="L2-regularised linear / logistic regression trained to optimality and released "
                "as w' = w* + N(0, σ²I); σ set directly, from a target η (η = ‖J‖₂/σ, Eq. 17) "
                "or from (ε, δ) via the sensitivity 2/(nλ) (logistic, unit ball)."))
_SEES_W = "the released noisy weights w' = w* + N(0, σ²I) of the linear / logistic model"
_GOAL_T = "infer each training row's target attribute (or label)"
ATTACKS.register("fil_white_box", AttackPart(
    name="fil_white_box", title="white-box (Eq. 30)", accepts=("model",),
    threat=ThreatModel(sees=_SEES_W,
                       knows="every training value but the target (the rest of the row and "
                             "every other row), the training algorithm (loss, λ, IRFIL weights) "
                             "and σ",
                       goal=_GOAL_T + ": the candidate whose refit is nearest to w'"),
    function="core.attacks.fil_attacks:white_box_attack", role="fresh"))
ATTACKS.register("fil_black_box", AttackPart(
    name="fil_black_box", title="black-box (Eq. 31, Fredrikson et al.)", accepts=("model",),
    threat=ThreatModel(sees="query access to the released model: its predictions φ(w', x)",
                       knows="the target row but its attribute, its label, the attribute's "
                             "training marginal and the model's training error statistics",
                       goal=_GOAL_T + ": argmax prior × fit of the prediction to the label"),
    function="core.attacks.fil_attacks:black_box_attack", role="fresh"))
ATTACKS.register("fil_prior", AttackPart(
    name="fil_prior", title="prior (no model)", accepts=("model",),
    threat=ThreatModel(sees="nothing", knows="the attribute's training marginal",
                       goal=_GOAL_T + ": always its most frequent value"),
    function="core.attacks.fil_attacks:prior_attack", role="baseline"))

# -- property inference (Inf2Guard, spec 004 §2.2 / §3.2) --------------------------------------

_PIA = ("property",)
DEFENSES.register("inf2guard_property", DefensePart(
    name="inf2guard_property", title="Inf2Guard vs property inference (λ)", families=_PIA,
    release="representation", family_releases=(("property", "subset_representation"),),
    knob=Knob("tradeoff_lambda", "λ", "Inf2Guard privacy weight", 0.0, 1.0, "linear",
              "higher_is_more_private", budget_metric="tradeoff_lambda",
              grid=(0.0, 0.25, 0.5, 0.75, 1.0)),
    accounting=None, builder="core.defenses.inf2guard_property:train_inf2guard_property",
    description="Encoder, per-sample task head and a K-way property adversary on aggregated "
                "subset representations in the game of Eq. 11 (Algorithm 2); λ = 0 is no "
                "defense; no formal guarantee: measured by attacks and the K-ary Fano bound."))
_SEES_AGG = ("the aggregated representation Agg({f(x)}) (mean or max) of each target subset "
             "of the test split")
_KNOWS_SHADOW = ("the released encoder and the aggregator; shadow subsets it builds from its "
                 "auxiliary rows (aux split) with their attribute values, so their properties")
_GOAL_P = "infer each target subset's property: the share of the attribute value, binned into K"
ATTACKS.register("property_in_training", AttackPart(
    name="property_in_training", title="in-training property adversary Ψ",
    accepts=("subset_representation",),
    threat=ThreatModel(sees=_SEES_AGG,
                       knows="nothing beyond its training: Ψ was trained in Algorithm 2 against "
                             "the encoder, on the defender's subsets (the adversary the defense "
                             "fights)", goal=_GOAL_P),
    function="core.attacks.property:in_training_attack", role="in_training"))
ATTACKS.register("property_mlp", AttackPart(
    name="property_mlp", title="fresh MLP on shadow subsets", accepts=("subset_representation",),
    threat=ThreatModel(sees=_SEES_AGG, knows=_KNOWS_SHADOW, goal=_GOAL_P),
    function="core.attacks.property:fresh_property_attack", role="fresh",
    params=("mlp_hidden", "mlp_epochs")))
ATTACKS.register("property_logreg", AttackPart(
    name="property_logreg", title="fresh logistic regression on shadow subsets",
    accepts=("subset_representation",),
    threat=ThreatModel(sees=_SEES_AGG, knows=_KNOWS_SHADOW, goal=_GOAL_P),
    function="core.attacks.property:fresh_property_attack", role="fresh"))
ATTACKS.register("property_prior", AttackPart(
    name="property_prior", title="prior (no model)", accepts=("subset_representation",),
    threat=ThreatModel(sees="nothing", knows="the bin frequencies of its shadow subsets",
                       goal=_GOAL_P + ": always its most frequent bin"),
    function="core.attacks.property:prior_property_attack", role="baseline"))


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
ATTACKS.register("decoder_in_training", AttackPart(
    name="decoder_in_training", title="in-training decoder Ψ",
    accepts=("noisy_representation",),
    threat=ThreatModel(sees=_SEES_RD,
                       knows="nothing beyond its training: the decoder the defense trained "
                             "against, on the defender's own (x, r + δ) pairs",
                       goal=_GOAL_X_RD),
    function="core.attacks.reconstruction:decode", role="in_training"))
ATTACKS.register("decoder_fresh", AttackPart(
    name="decoder_fresh", title="fresh decoder (larger, trained afterwards)",
    accepts=("noisy_representation",),
    threat=ThreatModel(sees=_SEES_RD,
                       knows="the encoder as a query interface and the noise distribution p_Φ "
                             "(ε, channel, learned μ, σ); auxiliary images (aux split) it "
                             "encodes and perturbs itself to train on (x, r + δ)",
                       goal=_GOAL_X_RD),
    function="core.attacks.reconstruction:train_fresh_decoder", role="fresh",
    params=("fresh_hidden", "fresh_epochs")))
ATTACKS.register("inversion", AttackPart(
    name="inversion", title="optimisation inversion (‖f(x) − r̃‖² + TV)",
    accepts=("noisy_representation",),
    threat=ThreatModel(sees=_SEES_RD,
                       knows="the encoder's weights (white box) and an image prior (total "
                             "variation); no auxiliary data",
                       goal=_GOAL_X_RD),
    function="core.attacks.reconstruction:invert_representations", role="fresh",
    params=("inversion_iterations", "inversion_tv")))


def applicable_attacks(release: str) -> list[str]:
    """Attack names that accept ``release``."""
    return [n for n, a in ATTACKS.items() if release in a.accepts]


def check_combination(family: str, defense: str, attackers: tuple[str, ...]) -> None:
    """Raise ValueError (one line naming the field) if the defense does not belong to the
    family or an attacker does not accept the defense's release."""
    part = DEFENSES.get(defense)
    if family not in part.families:
        allowed = [n for n, d in DEFENSES.items() if family in d.families]
        raise ValueError(f"defense.kind: got {defense!r}; allowed for {family}: {', '.join(allowed)}")
    release = part.release_for(family)
    for name in attackers:
        att = ATTACKS.get(name)
        if release not in att.accepts:
            raise ValueError(
                f"attack.attackers: {name!r} attacks {' or '.join(att.accepts)} releases; "
                f"defense {defense!r} releases {release}s (allowed here: "
                f"{', '.join(a for a in applicable_attacks(release) if ATTACKS.get(a).fresh)})")
