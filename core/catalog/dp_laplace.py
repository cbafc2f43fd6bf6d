"""DP-Laplace on uploads: each device's update clipped (L1) and noised (Laplace mechanism, pure ε).

The block, its knob (range read from the block's constraints) and its registration: the
part's one declaration (:mod:`core.catalog`).
"""

from __future__ import annotations

from typing import Literal

from core.config_base import Block, ClipNorm, Delta, DPEpsilon
from core.parts import DEFENSES, DefensePart, Knob


class DPLaplaceDefense(Block):
    """Each device's upload clipped to ``clip_norm`` (L1) and noised with the Laplace
    mechanism for a per-round pure ε; ``delta`` is the δ′ of the advanced-composition
    accountant over rounds."""

    kind: Literal["dp_laplace"] = "dp_laplace"
    epsilon: DPEpsilon = 1.0
    delta: Delta = 1e-5
    clip_norm: ClipNorm = 1.0


_FL = ("attribute_privacy",)
DEFENSES.register("dp_laplace", DefensePart(
    config=DPLaplaceDefense, order=40,
    name="dp_laplace", title="DP-Laplace on uploads", families=_FL, release="representation",
    knob=Knob.of(DPLaplaceDefense, "epsilon", "ε", "per-round DP budget", "log",
              "lower_is_more_private", budget_metric="epsilon_accountant",
              grid=(1.0, 4.0, 16.0, 64.0, 256.0)),
    accounting="basic", builder="core.defenses.federated:build_dp",
    description="Each device's update clipped (L1) and noised (Laplace, per-round pure ε)."))
