"""Attribute-inference attacks on released representations: the in-training adversary, fresh
attackers and the prior.

Each attack's registration is its one declaration (:mod:`core.catalog`).
"""

from __future__ import annotations

from typing import Annotated

from annotated_types import Ge, Le
from pydantic import Field

from core.config.base import Block
from core.foundation.knowledge import ThreatModel
from core.foundation.parts import ATTACKS, AttackPart

#: the seeded cap on the aux rows a fresh attacker trains on
_MaxTrain = Annotated[int, Ge(50), Le(1_000_000)]


class LogregSettings(Block):
    """The fresh logistic regression's training rows."""

    max_train: _MaxTrain = 10_000


class MlpSettings(Block):
    """The fresh MLP attacker: its width, its epoch cap and its training rows."""

    mlp_hidden: Annotated[int, Ge(2), Le(4096)] = 64
    mlp_epochs: Annotated[int, Ge(1), Le(1000)] = Field(
        500, description="the MLP attacker's epoch cap: it trains until its validation loss "
                         "stops falling (patience core.engine.training.PATIENCE), at most this many")
    max_train: _MaxTrain = 10_000


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
    function="core.attacks.attribute:in_training_attack", role="in_training",
    family="attribute_privacy", needs=("in_training",), selectable=False))
ATTACKS.register("logreg", AttackPart(
    name="logreg", title="fresh logistic regression", accepts=("representation", "raw"),
    threat=ThreatModel(sees=_SEES_R, knows=_KNOWS_AUX, goal=_GOAL_U),
    function="core.attacks.attribute:fresh_on_release", fresh=True, settings=LogregSettings,
    family="attribute_privacy", needs=("encoder", "aux"), options=(("model", "logreg"),)))
ATTACKS.register("mlp", AttackPart(
    name="mlp", title="fresh MLP", accepts=("representation", "raw"),
    threat=ThreatModel(sees=_SEES_R, knows=_KNOWS_AUX, goal=_GOAL_U),
    function="core.attacks.attribute:fresh_on_release", fresh=True,
    settings=MlpSettings, family="attribute_privacy",
    needs=("encoder", "aux"), options=(("model", "mlp"),)))
ATTACKS.register("prior", AttackPart(
    name="prior", title="prior (no model)", accepts=("representation", "raw", "model", "update"),
    threat=ThreatModel(sees="nothing", knows="the attribute's frequencies in the aux rows",
                       goal=_GOAL_U),
    function="core.attacks.attribute:prior_on_release", role="baseline", family="attribute_privacy",
    needs=("aux",), selectable=False))
