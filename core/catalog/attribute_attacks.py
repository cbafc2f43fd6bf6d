"""Attribute-inference attacks on released representations: the in-training adversary, fresh
attackers and the prior.

Each attack's registration is its one declaration (:mod:`core.catalog`).
"""

from __future__ import annotations

from core.knowledge import ThreatModel
from core.parts import ATTACKS, AttackPart

_SEES_R = "the released representations r of the target rows (test split) and the encoder"
_KNOWS_AUX = "auxiliary rows (aux split) with their attribute values, encoded with the released encoder"
_GOAL_U = "infer each target row's private attribute u"
ATTACKS.register("in_training", AttackPart(
    name="in_training", title="in-training adversary Ψ", accepts=("representation",),
    threat=ThreatModel(sees="r of the target rows",
                       knows="nothing beyond its training: the devices' own Ψ_k, trained during "
                             "FedAvg against the encoder (the adversary the defense fights); "
                             "it decides class-balanced with the aux split's attribute "
                             "frequencies, as the fresh attackers do",
                       goal=_GOAL_U),
    function="core.attacks.protocol:in_training_attack", role="in_training",
    family="attribute_privacy", needs=("in_training",), selectable=False))
ATTACKS.register("logreg", AttackPart(
    name="logreg", title="fresh logistic regression", accepts=("representation", "raw"),
    threat=ThreatModel(sees=_SEES_R, knows=_KNOWS_AUX, goal=_GOAL_U),
    function="core.attacks.protocol:fresh_attack", fresh=True, params=("max_train",),
    family="attribute_privacy", needs=("encoder", "aux"), options=(("model", "logreg"),)))
ATTACKS.register("mlp", AttackPart(
    name="mlp", title="fresh MLP", accepts=("representation", "raw"),
    threat=ThreatModel(sees=_SEES_R, knows=_KNOWS_AUX, goal=_GOAL_U),
    function="core.attacks.protocol:fresh_attack", fresh=True,
    params=("mlp_hidden", "mlp_epochs", "max_train"), family="attribute_privacy",
    needs=("encoder", "aux"), options=(("model", "mlp"),)))
ATTACKS.register("prior", AttackPart(
    name="prior", title="prior (no model)", accepts=("representation", "raw", "model", "update"),
    threat=ThreatModel(sees="nothing", knows="the attribute's frequencies in the aux rows",
                       goal=_GOAL_U),
    function="core.attacks.protocol:prior_attack", role="baseline", family="attribute_privacy",
    needs=("aux",), selectable=False))
