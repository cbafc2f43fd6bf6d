"""Gradient-inversion attacks (spec 001 §1.3-1.4): DLG, iDLG and Inverting Gradients as presets
of one spec, and model inversion of the trained model.

Each attack's registration is its one declaration (:mod:`core.catalog`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from annotated_types import Ge, Gt, Le
from pydantic import Field

from core.config.base import Block
from core.foundation.knowledge import ThreatModel
from core.foundation.parts import ATTACKS, AttackPart


class InversionUploadSettings(Block):
    """What DLG, iDLG and Inverting Gradients invert and for how long: the observed upload
    (``batch_size`` images, one step's gradient or a FedAvg update of ``local_steps`` local
    SGD steps at ``local_lr``) and the optimiser's iterations."""

    iterations: Annotated[int, Ge(1), Le(24_000)] | None = Field(
        None, description="optimiser iterations; None = the preset's default")
    batch_size: Annotated[int, Ge(1), Le(64)] = Field(1, description="images per observed upload")
    observation: Literal["gradient", "fedavg"] = "gradient"
    local_steps: Annotated[int, Ge(1), Le(50)] = Field(
        3, description="fedavg observation: local SGD steps in the observed update")
    local_lr: Annotated[float, Gt(0.0), Le(10.0)] = 0.1


_SEES_UPD = ("one upload per target: a step's gradient (or a FedAvg local update) of the "
             "victim's batch, and the global model it started from")
_KNOWS_ARCH = "the architecture and the loss; not the data, not the defense's noise draw"
_GOAL_X = "reconstruct the victim's (clean) training images"
_INV = "core.attacks.gradient_inversion:invert_upload"
ATTACKS.register("dlg", AttackPart(
    name="dlg", title="DLG (L2, L-BFGS, labels joint)", accepts=("update",),
    threat=ThreatModel(sees=_SEES_UPD, knows=_KNOWS_ARCH, goal=_GOAL_X + " and labels"),
    function=_INV, fresh=True, family="gradient_leakage", needs=("gradients",),
    options=(("preset", "dlg"),), settings=InversionUploadSettings))
ATTACKS.register("idlg", AttackPart(
    name="idlg", title="iDLG (labels from the last layer)", accepts=("update",),
    threat=ThreatModel(sees=_SEES_UPD, knows=_KNOWS_ARCH, goal=_GOAL_X),
    function=_INV, fresh=True, family="gradient_leakage", needs=("gradients",),
    options=(("preset", "idlg"),), settings=InversionUploadSettings))
ATTACKS.register("ig", AttackPart(
    name="ig", title="Inverting Gradients (cosine + TV, Adam)", accepts=("update",),
    threat=ThreatModel(sees=_SEES_UPD, knows=_KNOWS_ARCH + "; an image prior (total variation)",
                       goal=_GOAL_X),
    function=_INV, fresh=True, family="gradient_leakage", needs=("gradients",),
    options=(("preset", "ig"),), settings=InversionUploadSettings))
ATTACKS.register("model_inversion", AttackPart(
    name="model_inversion", title="model inversion (class representatives)", accepts=("model",),
    threat=ThreatModel(sees="the trained model (white box)",
                       knows="the mean of images outside the training set (the start point)",
                       goal="a representative image of each class (scored against the class "
                            "centre)"),
    function="core.attacks.gradient_inversion:model_inversion_attack", role="fresh",
    family="gradient_leakage", needs=("model", "aux"), stats=(), selectable=False))
