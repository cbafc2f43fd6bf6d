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
  gap to chance 1/K, each score with its 95 % interval (:func:`core.metrics.attack_intervals`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from core.attacks.attribute import fresh_attacker_proba
from core.metrics import attack_intervals, attack_scores, prior_proba


@dataclass(frozen=True)
class SubsetRelease:
    """What the property attacker observes: the aggregated representations of the target
    subsets (m, d) and the aggregator that made them (``mean`` or ``max``)."""

    aggregates: np.ndarray
    aggregation: str
    kind: str = "subset_representation"


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
                          mlp_epochs: int = 100) -> PropertyAttack:
    """A fresh K-way property classifier trained on the attacker's shadow-subset aggregates
    (``shadow_aggregates``, ``shadow_labels``: the bins it knows), applied to the release."""
    fa = fresh_attacker_proba(shadow_aggregates, shadow_labels, release.aggregates, model=model,
                              seed=seed, mlp_hidden=mlp_hidden, mlp_epochs=mlp_epochs,
                              max_train=len(shadow_labels), n_classes=n_values)
    return PropertyAttack(np.asarray(fa.calibrated, np.float64), fa.decision_weights,
                          {**fa.info, "aggregation": release.aggregation})


def in_training_attack(proba: np.ndarray) -> PropertyAttack:
    """The in-training adversary's probabilities on the release (computed by the defense)."""
    return PropertyAttack(np.asarray(proba, np.float64), None, {})


def prior_property_attack(shadow_labels: np.ndarray, n_targets: int, n_values: int) -> PropertyAttack:
    """The no-model baseline: the shadow subsets' bin frequencies for every target."""
    return PropertyAttack(prior_proba(np.asarray(shadow_labels), n_targets, n_values), None,
                          {"baseline": "prior"})


def majority_rate(labels: np.ndarray, n_values: int) -> float:
    """Share of the most frequent bin among ``labels`` (the prior's accuracy on them)."""
    lab = np.asarray(labels, dtype=np.int64)
    return float(np.bincount(lab, minlength=n_values).max() / max(1, lab.size))


def score_property(attack: PropertyAttack, labels: np.ndarray, *, n_values: int,
                   seed: int = 0) -> tuple[dict[str, float], dict[str, tuple[float, float]]]:
    """(scores, 95 % intervals) of a property attack against the target subsets' true bins:
    ``acc``, ``bacc``, ``auc`` (one-vs-rest macro), ``ce_nats``, ``gap`` (acc − 1/K)."""
    lab = np.asarray(labels, dtype=np.int64)
    if attack.proba.shape != (lab.size, n_values):
        raise ValueError(f"proba: got shape {attack.proba.shape}; expected ({lab.size}, {n_values})")
    s = attack_scores(lab, attack.proba, decision_weights=attack.decision_weights)
    iv = attack_intervals(lab, attack.proba, seed=seed, decision_weights=attack.decision_weights)
    chance = 1.0 / n_values
    scores = {"acc": s["accuracy"], "bacc": s["balanced_accuracy"], "auc": s["auc"],
              "ce_nats": s["cross_entropy_nats"], "gap": s["accuracy"] - chance}
    intervals = {"acc": iv["accuracy"], "bacc": iv["balanced_accuracy"], "auc": iv["auc"],
                 "gap": (iv["accuracy"][0] - chance, iv["accuracy"][1] - chance)}
    return scores, intervals
