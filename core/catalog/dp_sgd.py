"""DP-SGD (Abadi et al. 2016) through Opacus, its knob the target ε.

The block, its knob (range read from the block's constraints) and its registration: the
part's one declaration (:mod:`core.catalog`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from annotated_types import Ge, Gt, Le
from pydantic import Field, model_validator

from core.config.base import Block, ClipNorm, Delta
from core.foundation.parts import (
    DEFENSES,
    Control,
    DefensePart,
    FixedPoint,
    Knob,
    PageSpec,
    PaperSpec,
    Releases,
)


class DPSGDDefense(Block):
    """DP-SGD (Abadi et al. 2016) through Opacus: per-sample clipping to ``clip_norm`` and
    Gaussian noise of std ``noise_multiplier``·clip_norm on the summed batch gradient, Poisson
    batches at rate ``sample_rate``; ε from the named accountant (PRV, falling back to RDP
    where PRV is unreliable). The privacy knob is ``target_epsilon`` (z solved for it);
    ``noise_multiplier: 0`` is clipping without noise, reported as ε = ∞.

    DP-SGD trains with its own recipe (``optimizer``, ``lr``, ``sample_rate``, ``epochs``):
    full-batch Poisson sampling (q = 1), plain SGD at lr 2, 150 epochs, clip norm 1. Noise
    favours few large steps, which is not how the undefended model is best trained: Adam 1e-3
    on batches of 64 reached accuracy 0.21 under DP-SGD at z = 1 (ε ≈ 21), where this recipe
    keeps at least 0.9 of the undefended accuracy above the majority rate at ε = 8 (0.91 on
    mnist5k with 500 members over 5 seeds, benchmarks/dpsgd_recipe.py; 0.94 on the Compare
    teaching preset over 3 seeds). With few members it keeps less: the Membership page's
    digits default (150 members) keeps 0.78 at ε = 8 (lessons.json). Shadow and reference
    models repeat it, as they repeat the target's training. ``None`` in a recipe field means "the train block's value" (DP-SGD
    trained the undefended model's way; ``sample_rate: null`` takes the train block's batch
    size)."""

    kind: Literal["dp_sgd"] = "dp_sgd"
    noise_multiplier: Annotated[float, Ge(0.0), Le(100.0)] | None = Field(
        None, description="noise std / clip norm (z); 0 = clipping only (ε = ∞); None = solved "
        "from target_epsilon; otherwise at least 0.05 (below it the accountants' ε overflows)")
    target_epsilon: Annotated[float, Ge(0.01), Le(1e4)] | None = Field(
        8.0, description="train to this ε (z solved by the accountant; from 0.01: below it "
        "Opacus' noise search gives up); None = the fixed noise_multiplier")
    delta: Delta = 1e-5
    clip_norm: ClipNorm = 1.0
    accountant: Literal["prv", "rdp"] = "prv"
    optimizer: Literal["sgd", "adam"] | None = Field(
        "sgd", description="DP-SGD's optimiser; None = the train block's")
    lr: Annotated[float, Gt(0.0), Le(100.0)] | None = Field(
        2.0, description="DP-SGD's learning rate; None = the train block's")
    sample_rate: Annotated[float, Gt(0.0), Le(1.0)] | None = Field(
        1.0, description="Poisson sampling rate q (1/q steps per epoch, rounded; 1 = every row "
        "in every step); None = the train block's batch size")
    epochs: Annotated[int, Ge(1), Le(1000)] | None = Field(
        150, description="DP-SGD's epochs (steps = epochs / q); None = the train block's")

    @model_validator(mode="before")
    @classmethod
    def _one_given_replaces_default(cls, data: Any) -> Any:
        """Giving only ``noise_multiplier`` means a fixed z: the default target ε steps aside
        (and giving only ``target_epsilon`` leaves z to be solved)."""
        if isinstance(data, dict) and data.get("noise_multiplier") is not None \
                and "target_epsilon" not in data:
            data = {**data, "target_epsilon": None}
        return data

    @model_validator(mode="after")
    def _one_of(self) -> DPSGDDefense:
        if (self.noise_multiplier is None) == (self.target_epsilon is None):
            raise ValueError("noise_multiplier: give exactly one of noise_multiplier and "
                             "target_epsilon (the other null)")
        if self.noise_multiplier is not None and 0.0 < self.noise_multiplier < 0.05:
            from core.foundation.checks import range_error

            raise range_error("noise_multiplier", self.noise_multiplier, 0.05, 100.0,
                              note="or 0 for clipping only; below 0.05 the accountants' ε "
                                   "overflows")
        return self

    def training(self, train: Any) -> dict[str, Any]:
        """Keyword arguments of :func:`core.defenses.dpsgd.train_dpsgd` for the recipe, a None
        field taken from ``train`` (a train block with ``epochs``, ``batch_size``, ``lr``,
        ``optimizer``); the privacy arguments (z or target ε, δ, S, accountant) included."""
        out: dict[str, Any] = {
            "epochs": max(1, int(train.epochs if self.epochs is None else self.epochs)),
            "lr": float(train.lr if self.lr is None else self.lr),
            "optimizer": str(train.optimizer if self.optimizer is None else self.optimizer),
            "max_grad_norm": float(self.clip_norm),
            "delta": float(self.delta), "noise_multiplier": self.noise_multiplier,
            "target_epsilon": self.target_epsilon, "accountant": self.accountant}
        if self.sample_rate is None:
            out["batch_size"] = int(train.batch_size)
        else:
            out["sample_rate"] = float(self.sample_rate)
        return out


_GL = ("gradient_leakage",)
_MIA = ("membership",)
_CENTRAL = "core.defenses.central"
DEFENSES.register("dp_sgd", DefensePart(
    config=DPSGDDefense,
    name="dp_sgd", title="DP-SGD (Opacus)", families=_GL + _MIA,
    release=Releases("update", per_family=(("membership", "model"),)),
    knob=Knob.of(DPSGDDefense, "target_epsilon", "ε", "target DP budget (z solved by the accountant)", "log", "lower_is_more_private", budget_metric="epsilon_accountant",
              grid=(1.0, 2.0, 4.0, 8.0)),
    accounting="prv", builder=f"{_CENTRAL}:build_dpsgd", paper=PaperSpec(short_title="DP-SGD"),
    page=PageSpec(
        order=70, controls=(Control("clip_norm", "clip norm S", families=_GL),),
        readouts=(("gradient_leakage", "core.defenses.channel_live:live_dpsgd"),),
        fixed_points=(FixedPoint(
            "DP-SGD · clipping only (ε = ∞)",
            (("noise_multiplier", 0.0), ("target_epsilon", None)),
            question="DP-SGD: add the ε = ∞ point (clipping, no noise)",
            help="noise_multiplier 0 through the same pipeline: clipping and noise seen apart"),)),
    description="Per-sample clipping and Gaussian noise on the batch gradient (Abadi et al. "
                "2016) through Opacus, trained with its own recipe (full-batch SGD); the knob "
                "is the target ε (z solved by the PRV accountant, RDP where PRV is "
                "unreliable); noise_multiplier 0 is clipping without noise (ε = ∞); capacity "
                "B/z² per step (Thm 4, tight B/(2z²))."))
