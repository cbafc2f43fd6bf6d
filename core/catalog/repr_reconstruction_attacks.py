"""Reconstruction attacks on shared representations r + δ (Inf2Guard, spec 004 §3.3).

Each attack's registration is its one declaration (:mod:`core.catalog`).
"""

from __future__ import annotations

from typing import Annotated

from annotated_types import Ge, Le
from pydantic import Field

from core.config.base import Block
from core.foundation.knowledge import ThreatModel
from core.foundation.parts import ATTACKS, AttackPart


class FreshDecoderSettings(Block):
    """The fresh decoder: its width and epochs."""

    fresh_hidden: Annotated[int, Ge(2), Le(8192)] = Field(
        512, description="the fresh decoder's width (two hidden layers)")
    fresh_epochs: Annotated[int, Ge(1), Le(1000)] = Field(
        60, description="the fresh decoder learns from the aux split alone (1,000 images on "
                        "mnist5k): it keeps improving to about 60 epochs")


class InversionSettings(Block):
    """Optimisation inversion: its iterations and the weight of its image prior."""

    inversion_iterations: Annotated[int, Ge(1), Le(20_000)] = 300
    inversion_tv: Annotated[float, Ge(0.0), Le(100.0)] = Field(
        0.05, description="weight of the total-variation prior in the inversion")


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
    settings=FreshDecoderSettings, needs=("encoder", "aux")))
ATTACKS.register("inversion", AttackPart(
    name="inversion", title="optimisation inversion (‖f(x) − r̃‖² + TV)",
    accepts=("noisy_representation",),
    threat=ThreatModel(sees=_SEES_RD,
                       knows="the encoder's weights (white box) and an image prior (total "
                             "variation); no auxiliary data",
                       goal=_GOAL_X_RD),
    function=f"{_RA}:optimisation_inversion", role="fresh", family="repr_reconstruction",
    settings=InversionSettings, needs=("encoder",)))
