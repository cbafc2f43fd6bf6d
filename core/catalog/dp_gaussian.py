"""DP-Gaussian on uploads: each device's update clipped and noised (Gaussian mechanism, per-round (ε, δ)).

The block, its knob (range read from the block's constraints) and its registration: the
part's one declaration (:mod:`core.catalog`).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from core.config.base import Block, ClipNorm, Delta, DPEpsilon
from core.foundation.parts import DEFENSES, Control, DefensePart, Knob, PageSpec


class DPGaussianDefense(Block):
    """Each device's upload clipped to ``clip_norm`` and noised with the Gaussian mechanism
    calibrated to a per-round (ε, δ) (analytic calibration)."""

    # the first config shape kept the DP parameters in a top-level ``dp`` mapping
    legacy_fields: ClassVar = (("dp.epsilon", "epsilon"), ("dp.delta", "delta"),
                               ("dp.clip_norm", "clip_norm"))

    kind: Literal["dp_gaussian"] = "dp_gaussian"
    #: the mechanism :func:`core.defenses.federated.build_dp` calibrates
    mechanism: ClassVar[Literal["gaussian", "laplace"]] = "gaussian"
    epsilon: DPEpsilon = 1.0
    delta: Delta = 1e-5
    clip_norm: ClipNorm = 1.0


_FL = ("attribute_privacy",)
DEFENSES.register("dp_gaussian", DefensePart(
    config=DPGaussianDefense,
    name="dp_gaussian", title="DP-Gaussian on uploads", families=_FL, release="representation",
    knob=Knob.of(DPGaussianDefense, "epsilon", "ε", "per-round DP budget", "log",
              "lower_is_more_private", budget_metric="epsilon_accountant",
              grid=(1.0, 4.0, 16.0, 64.0, 256.0)),
    accounting="rdp", builder="core.defenses.federated:build_dp",
    page=PageSpec(order=30, controls=(
        Control("delta", "δ", "δ of the per-round Gaussian mechanism."),
        Control("clip_norm", "clip norm of the update"))),
    description="Each device's update clipped and noised (Gaussian, per-round (ε, δ))."))
