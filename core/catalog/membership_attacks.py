"""Membership-inference attacks (config names without the ``mia_`` prefix): thresholds,
LiRA, RMIA and the representation attacks on Inf2Guard's r.

Each attack's registration is its one declaration (:mod:`core.catalog`).
"""

from __future__ import annotations

from typing import Annotated

from annotated_types import Ge, Le

from core.config.base import Block
from core.foundation.knowledge import ThreatModel
from core.foundation.parts import ATTACKS, AttackPart


class RmiaSettings(Block):
    """RMIA's settings (Zarifzadeh et al. 2024): the reference (OUT) models per candidate and
    the offline approximation's a (Pr(x) ≈ ½((1 + a)·Pr_OUT(x) + (1 − a)))."""

    rmia_references: Annotated[int, Ge(1), Le(64)] = 2
    rmia_a: Annotated[float, Ge(0.0), Le(1.0)] = 0.3


_SEES_MODEL = "the released model's outputs (class probabilities) on the candidate records"
_KNOWS_REC = "each candidate record (x, y)"
_KNOWS_SHADOW = (_KNOWS_REC + "; a shadow pool of the same distribution and the training "
                 "algorithm, defense included (it trains shadow models the target's way)")
_GOAL_M = "decide whether each candidate record was in the training set"
_MEM = "core.attacks.membership"
for _n, _t, _k, _needs, _pool in (
        ("loss", "loss threshold (Yeom et al.)", _KNOWS_REC, ("labels",), True),
        ("confidence", "confidence threshold", _KNOWS_REC, ("labels",), True),
        ("entropy", "entropy threshold", "each candidate record x", (), False),
        ("modified_entropy", "modified entropy (Song & Mittal)", _KNOWS_REC, ("labels",), False),
        ("lira_offline", "LiRA (offline)", _KNOWS_SHADOW, ("labels", "shadows"), True),
        ("lira_online", "LiRA (online)", _KNOWS_SHADOW, ("labels", "shadows"), True),
        ("rmia", "RMIA (offline)", _KNOWS_SHADOW + "; population records z never used in "
         "training", ("labels", "shadows", "references"), True)):
    ATTACKS.register(f"mia_{_n}", AttackPart(
        name=f"mia_{_n}", title=_t, accepts=("model",),
        threat=ThreatModel(sees=_SEES_MODEL, knows=_k, goal=_GOAL_M),
        function=f"{_MEM}:{_n}_on_release", fresh=True, family="membership", config_name=_n,
        needs=_needs, pools_targets=_pool,
        settings=RmiaSettings if _n == "rmia" else None))
ATTACKS.register("mia_representation", AttackPart(
    name="mia_representation", title="representation attack (fresh MLP on r)",
    accepts=("representation",),
    threat=ThreatModel(sees="Inf2Guard's released representations r of the candidate records",
                       knows="the membership of 80 % of the pool (its training folds)",
                       goal=_GOAL_M),
    function=f"{_MEM}:representation_attack", fresh=True, family="membership",
    config_name="representation", needs=("aux",)))
_SEES_R_Y = ("Inf2Guard's released representations r of the candidate records; the encoder "
             "as a query interface (served as an API, Inf2Guard §3)")
_KNOWS_POP = ("each candidate's label y; population records z (aux rows outside D0, in no "
              "training set) with their labels, encoded by the target encoder")
ATTACKS.register("mia_representation_head", AttackPart(
    name="mia_representation_head", title="representation head statistic (r, y; no shadows)",
    accepts=("representation",),
    threat=ThreatModel(sees=_SEES_R_Y,
                       knows=_KNOWS_POP + "; it fits a logistic head on the population's (r, y) "
                             "and thresholds φ = logit p(y | r) (Yeom's loss attack carried to r)",
                       goal=_GOAL_M),
    function=f"{_MEM}:representation_head_on_release", fresh=True, family="membership",
    config_name="representation_head", needs=("labels", "encoder", "references")))
ATTACKS.register("mia_representation_lira", AttackPart(
    name="mia_representation_lira", title="representation LiRA (r, y; shadow encoders)",
    accepts=("representation",),
    threat=ThreatModel(sees=_SEES_R_Y,
                       knows=_KNOWS_POP + "; the architecture and the training algorithm "
                             "(Inf2Guard at the target's λ): it trains `shadows` shadow encoders "
                             "on halves of the candidate pool and runs online LiRA on the head "
                             "statistic φ of each encoder (recipe: mnist5k, 500 members, 60 "
                             "epochs, 16 shadows; the shadows cost about 16 target trainings)",
                       goal=_GOAL_M),
    function=f"{_MEM}:representation_lira_on_release", fresh=True, family="membership",
    config_name="representation_lira",
    needs=("labels", "encoder", "references", "shadow_encoders")))
ATTACKS.register("mia_in_training", AttackPart(
    name="mia_in_training", title="the defense's own membership adversary",
    accepts=("adversary_output",),
    threat=ThreatModel(sees="what the defense's adversary reads of the candidate records "
                            "(Inf2Guard's Ψ: r; adversarial regularisation's h: f(x) and y)",
                       knows="nothing beyond its training: the adversary trained inside the "
                             "game against the model (the one the defense fights)",
                       goal=_GOAL_M),
    function=f"{_MEM}:in_training_attack", role="in_training", family="membership",
    config_name="in_training", needs=("in_training",)))
