"""DP-Gaussian on uploads: each device's update clipped and noised (Gaussian mechanism, per-round (ε, δ)).

The block, its knob (range read from the block's constraints) and its registration: the
part's one declaration (:mod:`core.catalog`).
"""

from __future__ import annotations

from typing import Literal

from core.config_base import Block, ClipNorm, Delta, DPEpsilon
from core.parts import DEFENSES, DefensePart, Knob


class DPGaussianDefense(Block):
    """Each device's upload clipped to ``clip_norm`` and noised with the Gaussian mechanism
    calibrated to a per-round (ε, δ) (analytic calibration)."""

    kind: Literal["dp_gaussian"] = "dp_gaussian"
    epsilon: DPEpsilon = 1.0
    delta: Delta = 1e-5
    clip_norm: ClipNorm = 1.0


_FL = ("attribute_privacy",)
DEFENSES.register("dp_gaussian", DefensePart(
    config=DPGaussianDefense, order=30,
    name="dp_gaussian", title="DP-Gaussian on uploads", families=_FL, release="representation",
    knob=Knob.of(DPGaussianDefense, "epsilon", "ε", "per-round DP budget", "log",
              "lower_is_more_private", budget_metric="epsilon_accountant",
              grid=(1.0, 4.0, 16.0, 64.0, 256.0)),
    accounting="rdp", builder="core.defenses.federated:build_dp",
    description="Each device's update clipped and noised (Gaussian, per-round (ε, δ))."))
