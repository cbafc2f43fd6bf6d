"""Gradient-inversion attacks (spec 001 §1.3-1.4): DLG, iDLG and Inverting Gradients as presets
of one spec, and model inversion of the trained model.

Each attack's registration is its one declaration (:mod:`core.catalog`).
"""

from __future__ import annotations

from core.knowledge import ThreatModel
from core.parts import ATTACKS, AttackPart

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
