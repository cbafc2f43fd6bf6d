"""Property inference attacks on aggregated subset representations (Inf2Guard, spec 004 §3.2),
as pure functions over arrays. No function here sees the target subsets' true properties
except :func:`score_property`, which only scores.

- :func:`fresh_property_attack`: the attacker builds shadow subsets from its auxiliary rows
  (whose properties it knows), passes them through the released encoder and the aggregator,
  trains a K-way classifier (an MLP or a logistic regression, :func:`core.attacks.attribute.
  fresh_attacker_proba`: calibrated training, class-balanced decision) and applies it to the
  target subsets' aggregates;
- :func:`in_training_attack`: the probabilities of the adversary Ψ the defense trained against;
- :func:`prior_property_attack`: the no-model baseline (shadow bin frequencies);
- :func:`score_property`: accuracy, balanced accuracy, one-vs-rest AUC, cross-entropy and the
  gap to chance 1/K, each score with its 95 % interval (:func:`core.foundation.metrics.attack_intervals`).

The registered parts (:mod:`core.foundation.parts`) name the protocol functions ``*_on_release``: each takes
a :class:`SubsetRelease` and an :class:`~core.foundation.knowledge.AdversaryKnowledge` (the shadow subsets'
aggregates and bins, K) and returns a :class:`PropertyAttack`; the runner calls them through
:func:`core.attacks.protocol.run_attack`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from core.attacks.attribute import fresh_attacker_proba, majority_rate, prior_shift_weights

__all__ = ["majority_rate"]  # re-exported: the runner and the bench read it from here
from core.foundation.metrics import attack_intervals, attack_scores, prior_proba


@dataclass(frozen=True)
class SubsetRelease:
    """What the property attacker observes: the aggregated representations of the target
    subsets (m, d) and the aggregator that made them (``mean`` or ``max``); with the defense's
    own adversary Ψ, its probabilities ``in_training_proba`` (m, K) on the targets aggregated
    the defender's way (``in_training_aggregation``)."""

    aggregates: np.ndarray
    aggregation: str
    kind: str = "subset_representation"
    in_training_proba: np.ndarray | None = None
    in_training_aggregation: str | None = None


@dataclass
class PropertyAttack:
    """One attack's output on the target subsets: ``proba`` (m, K), ``decision_weights`` of its
    decision argmax_k p_k·w_k (None = argmax), ``info``."""

    proba: np.ndarray
    decision_weights: np.ndarray | None
    info: dict


def fresh_property_attack(shadow_aggregates: np.ndarray, shadow_labels: np.ndarray,
                          release: SubsetRelease, *, n_values: int,
                          model: Literal["mlp", "logreg"], seed: int, mlp_hidden: int = 64,
                          mlp_epochs: int = 500) -> PropertyAttack:
    """A fresh K-way property classifier trained on the attacker's shadow-subset aggregates
    (``shadow_aggregates``, ``shadow_labels``: the bins it knows), applied to the release."""
    fa = fresh_attacker_proba(shadow_aggregates, shadow_labels, release.aggregates, model=model,
                              seed=seed, mlp_hidden=mlp_hidden, mlp_epochs=mlp_epochs,
                              max_train=len(shadow_labels), n_classes=n_values)
    return PropertyAttack(np.asarray(fa.calibrated, np.float64), fa.decision_weights,
                          {**fa.info, "aggregation": release.aggregation})


def in_training_attack(proba: np.ndarray, known_labels: np.ndarray | None = None) -> PropertyAttack:
    """The in-training adversary's probabilities on the release (computed by the defense); with
    ``known_labels`` (the bins of the subsets the attacker's side knows) it decides
    class-balanced as the fresh attackers do (:func:`core.attacks.attribute.
    prior_shift_weights`)."""
    p = np.asarray(proba, np.float64)
    w = None if known_labels is None else prior_shift_weights(known_labels, p.shape[1])
    return PropertyAttack(p, w, {})


def prior_property_attack(shadow_labels: np.ndarray, n_targets: int, n_values: int) -> PropertyAttack:
    """The no-model baseline: the shadow subsets' bin frequencies for every target."""
    return PropertyAttack(prior_proba(np.asarray(shadow_labels), n_targets, n_values), None,
                          {"baseline": "prior"})


def in_training_on_release(release: SubsetRelease, knowledge: Any = None,
                           **_: Any) -> PropertyAttack:
    """The defense's own adversary Ψ on the release (its probabilities, computed in the
    defender's aggregation)."""
    if release.in_training_proba is None:
        raise ValueError("release.in_training_proba: the release carries no in-training adversary")
    out = in_training_attack(release.in_training_proba,
                             getattr(knowledge, "aux_labels", None))
    out.info["aggregation"] = release.in_training_aggregation
    return out


def fresh_on_release(release: SubsetRelease, knowledge: Any, *, model: Literal["mlp", "logreg"],
                     seed: int, mlp_hidden: int = 64, mlp_epochs: int = 500,
                     **_: Any) -> PropertyAttack:
    """:func:`fresh_property_attack` trained on the knowledge's shadow-subset aggregates
    (``aux_features``) and bins (``aux_labels``)."""
    return fresh_property_attack(knowledge.aux_features, knowledge.aux_labels, release,
                                 n_values=knowledge.n_classes, model=model, seed=seed,
                                 mlp_hidden=mlp_hidden, mlp_epochs=mlp_epochs)


def prior_on_release(release: SubsetRelease, knowledge: Any, **_: Any) -> PropertyAttack:
    """:func:`prior_property_attack` from the shadow subsets' bins."""
    out = prior_property_attack(knowledge.aux_labels, len(release.aggregates),
                                knowledge.n_classes)
    out.info["aggregation"] = release.aggregation
    return out


def score_property(attack: PropertyAttack, labels: np.ndarray, *, n_values: int,
                   seed: int = 0) -> tuple[dict[str, float], dict[str, tuple[float, float]]]:
    """(scores, 95 % intervals) of a property attack against the target subsets' true bins:
    ``acc``, ``bacc``, ``auc`` (one-vs-rest macro), ``ce_nats``, ``gap`` (acc − the targets'
    majority-bin rate, :func:`~core.attacks.attribute.majority_rate`: the accuracy of always
    guessing the most frequent bin; 1/K when the bins are balanced)."""
    lab = np.asarray(labels, dtype=np.int64)
    if attack.proba.shape != (lab.size, n_values):
        raise ValueError(f"proba: got shape {attack.proba.shape}; expected ({lab.size}, {n_values})")
    s = attack_scores(lab, attack.proba, decision_weights=attack.decision_weights)
    iv = attack_intervals(lab, attack.proba, seed=seed, decision_weights=attack.decision_weights)
    chance = majority_rate(lab, n_values)
    scores = {"acc": s["accuracy"], "bacc": s["balanced_accuracy"], "auc": s["auc"],
              "ce_nats": s["cross_entropy_nats"], "gap": s["accuracy"] - chance}
    intervals = {"acc": iv["accuracy"], "bacc": iv["balanced_accuracy"], "auc": iv["auc"],
                 "gap": (iv["accuracy"][0] - chance, iv["accuracy"][1] - chance)}
    return scores, intervals
