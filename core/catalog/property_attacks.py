"""Property-inference attacks on aggregated subset representations (Inf2Guard, spec 004 §3.2).

Each attack's registration is its one declaration (:mod:`core.catalog`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from annotated_types import Ge, Le
from pydantic import Field

from core.config.base import Block
from core.foundation.knowledge import ThreatModel
from core.foundation.parts import ATTACKS, AttackPart


class FreshPropertySettings(Block):
    """The fresh property attackers (MLP and logistic regression read the same block): the
    aggregator they apply and the MLP's width and epoch cap."""

    mlp_hidden: Annotated[int, Ge(2), Le(4096)] = 64
    mlp_epochs: Annotated[int, Ge(1), Le(1000)] = Field(
        500, description="the fresh MLP's epoch cap: it trains until its validation loss stops "
                         "falling (patience core.engine.training.PATIENCE), at most this many")
    aggregation: Literal["same", "mean", "max"] = Field(
        "same", description="the fresh attackers' aggregator: the defender's ('same') or a "
                            "substitute (Table 17: mean defense, max attacker)")


_SEES_AGG = ("the aggregated representation Agg({f(x)}) (mean or max) of each target subset "
             "of the test split")
_KNOWS_SHADOW = ("the released encoder and the aggregator; shadow subsets it builds from its "
                 "auxiliary rows (aux split) with their attribute values, so their properties")
_GOAL_P = "infer each target subset's property: the share of the attribute value, binned into K"
_PA = "core.attacks.property"
ATTACKS.register("property_in_training", AttackPart(
    name="property_in_training", title="in-training property adversary Ψ",
    accepts=("subset_representation",),
    threat=ThreatModel(sees=_SEES_AGG,
                       knows="nothing beyond its training: Ψ was trained in Algorithm 2 against "
                             "the encoder, on the defender's subsets (the adversary the defense "
                             "fights); it decides class-balanced with the shadow subsets' bin "
                             "frequencies, as the fresh attackers do", goal=_GOAL_P),
    function=f"{_PA}:in_training_on_release", role="in_training", family="property",
    config_name="in_training", needs=("in_training",)))
ATTACKS.register("property_mlp", AttackPart(
    name="property_mlp", title="fresh MLP on shadow subsets", accepts=("subset_representation",),
    threat=ThreatModel(sees=_SEES_AGG, knows=_KNOWS_SHADOW, goal=_GOAL_P),
    function=f"{_PA}:fresh_on_release", role="fresh", family="property", config_name="mlp",
    settings=FreshPropertySettings, needs=("encoder", "aux"), options=(("model", "mlp"),)))
ATTACKS.register("property_logreg", AttackPart(
    name="property_logreg", title="fresh logistic regression on shadow subsets",
    accepts=("subset_representation",),
    threat=ThreatModel(sees=_SEES_AGG, knows=_KNOWS_SHADOW, goal=_GOAL_P),
    function=f"{_PA}:fresh_on_release", role="fresh", family="property", config_name="logreg",
    settings=FreshPropertySettings, needs=("encoder", "aux"), options=(("model", "logreg"),)))
ATTACKS.register("property_prior", AttackPart(
    name="property_prior", title="prior (no model)", accepts=("subset_representation",),
    threat=ThreatModel(sees="nothing", knows="the bin frequencies of its shadow subsets",
                       goal=_GOAL_P + ": always its most frequent bin"),
    function=f"{_PA}:prior_on_release", role="baseline", family="property",
    config_name="prior", needs=("aux",)))
