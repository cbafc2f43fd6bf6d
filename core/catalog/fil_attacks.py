"""Attacks on FIL's output-perturbed GLM (spec 002 Part A): white box (Eq. 30), black box
(Eq. 31) and the prior.

Each attack's registration is its one declaration (:mod:`core.catalog`).
"""

from __future__ import annotations

from core.foundation.knowledge import ThreatModel
from core.foundation.parts import ATTACKS, AttackPart

_SEES_W = "the released noisy weights w' = w* + N(0, σ²I) of the linear / logistic model"
_GOAL_T = "infer each training row's target attribute (or label)"
_FA = "core.attacks.fil_attacks"
ATTACKS.register("fil_white_box", AttackPart(
    name="fil_white_box", title="white-box (Eq. 30)", accepts=("model",),
    threat=ThreatModel(sees=_SEES_W,
                       knows="every training value but the target (the rest of the row and "
                             "every other row), the training algorithm (loss, λ, IRFIL weights) "
                             "and σ",
                       goal=_GOAL_T + ": the candidate whose refit is nearest to w'"),
    function=f"{_FA}:white_box_on_release", role="fresh", family="fisher_information",
    metric_key="white_box", needs=("training_data",)))
ATTACKS.register("fil_black_box", AttackPart(
    name="fil_black_box", title="black-box (Eq. 31, Fredrikson et al.)", accepts=("model",),
    threat=ThreatModel(sees="query access to the released model: its predictions φ(w', x)",
                       knows="the target row but its attribute, its label, the attribute's "
                             "training marginal and the model's training error statistics",
                       goal=_GOAL_T + ": argmax prior × fit of the prediction to the label"),
    function=f"{_FA}:black_box_on_release", role="fresh", family="fisher_information",
    metric_key="black_box", needs=("labels",)))
ATTACKS.register("fil_prior", AttackPart(
    name="fil_prior", title="prior (no model)", accepts=("model",),
    threat=ThreatModel(sees="nothing", knows="the attribute's training marginal",
                       goal=_GOAL_T + ": always its most frequent value"),
    function=f"{_FA}:prior_on_release", role="baseline", family="fisher_information",
    metric_key="prior"))
