"""DP-Laplace on uploads: each device's update clipped (L1) and noised (Laplace mechanism, pure ε).

The block, its knob (range read from the block's constraints) and its registration: the
part's one declaration (:mod:`core.catalog`).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from core.config.base import Block, ClipNorm, Delta, DPEpsilon
from core.foundation.parts import DEFENSES, Control, DefensePart, Knob, PageSpec


class DPLaplaceDefense(Block):
    """Each device's upload clipped to ``clip_norm`` (L1) and noised with the Laplace
    mechanism for a per-round pure ε; ``delta`` is the δ′ of the advanced-composition
    accountant over rounds."""

    # the first config shape kept the DP parameters in a top-level ``dp`` mapping
    legacy_fields: ClassVar = (("dp.epsilon", "epsilon"), ("dp.delta", "delta"),
                               ("dp.clip_norm", "clip_norm"))

    kind: Literal["dp_laplace"] = "dp_laplace"
    #: the mechanism :func:`core.defenses.federated.build_dp` calibrates
    mechanism: ClassVar[Literal["gaussian", "laplace"]] = "laplace"
    epsilon: DPEpsilon = 1.0
    delta: Delta = 1e-5
    clip_norm: ClipNorm = 1.0


_FL = ("attribute_privacy",)
DEFENSES.register("dp_laplace", DefensePart(
    config=DPLaplaceDefense,
    name="dp_laplace", title="DP-Laplace on uploads", families=_FL, release="representation",
    knob=Knob.of(DPLaplaceDefense, "epsilon", "ε", "per-round DP budget", "log",
              "lower_is_more_private", budget_metric="epsilon_accountant",
              grid=(1.0, 4.0, 16.0, 64.0, 256.0)),
    accounting="basic", builder="core.defenses.federated:build_dp",
    page=PageSpec(order=40, controls=(
        Control("delta", "δ", "Laplace is pure ε-DP per round; δ′ is the slack of the "
                              "advanced-composition accountant over rounds."),
        Control("clip_norm", "clip norm of the update"))),
    description="Each device's update clipped (L1) and noised (Laplace, per-round pure ε)."))
