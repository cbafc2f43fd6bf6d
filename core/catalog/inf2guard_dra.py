"""Inf2Guard against data reconstruction from shared representations (spec 004 §2.3, Algorithms 3-4).

The block, its knob (range read from the block's constraints) and its registration: the
part's one declaration (:mod:`core.catalog`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from annotated_types import Ge, Le, Lt
from pydantic import Field

from core.config.base import Block, ClipNorm, Delta
from core.foundation.parts import DEFENSES, DefensePart, Knob, PageSpec, Releases


class Inf2GuardDRADefense(Block):
    """The shared representation r + δ (spec 004 §2.3, Eqs. 20-26, Algorithms 3-4): the noise
    ``channel`` at scale ``epsilon`` — ``learned`` δ = ε·tanh(u), u ~ N(μ, σ²) with μ, σ
    learned; fixed ``gaussian`` N(0, ε²), ``laplace`` Laplace(0, ε), ``uniform`` U(−ε, ε); ``dp``
    the Gaussian mechanism N(0, ε²) on r clipped to ``dp_clip_norm`` — with the encoder trained
    with that noise in the loop against an in-training decoder, weighted by λ."""

    kind: Literal["inf2guard_dra"] = "inf2guard_dra"
    channel: Literal["learned", "gaussian", "laplace", "uniform", "dp"] = Field(
        "learned", description="the noise channel (the headline knob beside ε)")
    epsilon: Annotated[float, Ge(0.0), Le(100.0)] = Field(
        1.0, description="Inf2Guard noise scale ε (not a DP budget): |δ_i| <= ε for learned")
    tradeoff_lambda: Annotated[float, Ge(0.0), Lt(1.0)] = Field(
        0.4, description="Inf2Guard privacy weight λ (Eq. 20; the paper's DRA runs use 0.4)")
    entropy_alpha: Annotated[float, Ge(0.0), Le(1000.0)] = Field(
        1.0, description="entropy weight α; β = λα/(1−λ) (Eq. 26), entropy in nats per coordinate")
    mc_samples: Annotated[int, Ge(1), Le(64)] = Field(
        5, description="Monte-Carlo noise samples K per row (the paper: 5)")
    dp_clip_norm: ClipNorm = Field(
        4.0, description="dp channel: L2 clip C of r (sensitivity 2C)")
    dp_delta: Delta = Field(
        1e-5, description="dp channel: δ of the reported (ε_DP, δ)")


_RR = ("repr_reconstruction",)
DEFENSES.register("inf2guard_dra", DefensePart(
    config=Inf2GuardDRADefense, page=PageSpec(order=110, variants="channel"),
    name="inf2guard_dra", title="Inf2Guard perturbation r + δ (ε, channel)", families=_RR,
    release=Releases("representation",
                     per_family=(("repr_reconstruction", "noisy_representation"),)),
    knob=Knob.of(Inf2GuardDRADefense, "epsilon", "ε", "Inf2Guard noise scale (not a DP budget)", "linear",
              "higher_is_more_private", budget_metric="perturbation_scale",
              options=(0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0),
              grid=(0.0, 0.5, 1.0, 2.0, 4.0)),
    accounting=None, builder="core.defenses.inf2guard_reconstruction:train_inf2guard_dra",
    description="The shared representation is r + δ: learned δ = ε·tanh(u), u ~ N(μ, σ²) "
                "(Eq. 21, Algorithms 3-4, β = λα/(1−λ)), or fixed Gaussian / Laplace / uniform "
                "noise at the same ε, or the Gaussian mechanism on the clipped r (dp: (ε_DP, δ) "
                "reported); the encoder trains with the noise in the loop against a decoder "
                "adversary (λ). Bounded by Theorem 3 at an estimated I(x; r + δ)."))
