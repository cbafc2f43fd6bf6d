"""Attackers that do not under-read (issue #20): the in-training adversaries decide
class-balanced as the fresh attackers do, learned attackers train until their validation loss
stops falling (one helper, a seeded split), and accuracy gaps are measured against the
majority value's rate, not 1/k."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from core.attacks.attribute import (
    fresh_attacker_proba,
    in_training_attack,
    majority_rate,
    prior_shift_weights,
    score_in_training,
)
from core.attacks.property import SubsetRelease, in_training_on_release, score_property
from core.attacks.protocol import score_attack
from core.engine.training import MIN_PATIENCE_STEPS, PATIENCE, train_until_plateau, validation_rows
from core.foundation.knowledge import AdversaryKnowledge, GroundTruth


def _patience(n_train: int, batch: int) -> int:
    """Epochs without a fall before a stop: PATIENCE, and at least MIN_PATIENCE_STEPS steps."""
    return max(PATIENCE, math.ceil(MIN_PATIENCE_STEPS / math.ceil(n_train / batch)))


def _imbalanced(n: int = 4000, seed: int = 0):
    """An attribute whose majority holds ~86 % of the rows, and probabilities calibrated to that
    prior with a weak signal: argmax always says 'majority', yet the ranking is informative."""
    rng = np.random.default_rng(seed)
    u = (rng.random(n) < 0.14).astype(np.int64)
    score = rng.normal(0.8 * u, 1.0)  # a likelihood ratio of a weak signal
    lr = np.exp(0.8 * score - 0.32)
    p1 = 0.14 * lr / (0.14 * lr + 0.86)
    return u, np.stack([1 - p1, p1], axis=1)


def test_prior_shift_weights_are_inverse_frequencies_and_zero_for_unseen_classes():
    w = prior_shift_weights(np.array([0, 0, 0, 1]), 3)
    np.testing.assert_allclose(w, [4 / 3, 4.0, 0.0])


def test_in_training_adversary_decides_class_balanced_like_the_fresh_attackers():
    u, proba = _imbalanced()
    u_aux, _ = _imbalanced(seed=1)
    plain = score_attack(in_training_attack(None, None, proba=proba), GroundTruth(u))
    assert plain.values["bacc"] < 0.53  # argmax: all but stuck at chance (the bug)
    know = AdversaryKnowledge(n_classes=2, aux_features=np.zeros((u_aux.size, 1)),
                              aux_labels=u_aux)
    out = in_training_attack(None, know, proba=proba)
    np.testing.assert_allclose(out.decision_weights, prior_shift_weights(u_aux, 2))
    fixed = score_attack(out, GroundTruth(u))
    assert fixed.values["auc"] == pytest.approx(plain.values["auc"])  # the ranking is unchanged
    assert fixed.values["bacc"] > plain.values["bacc"] + 0.08  # reads what the AUC sees
    # the per-round curve's scorer decides the same way
    assert score_in_training(proba, u, u_known=u_aux).scores["balanced_accuracy"] == pytest.approx(
        fixed.values["bacc"])
    # and the fresh attacker's decision uses the very same weights
    R = np.random.default_rng(2).normal(size=(u_aux.size, 3))
    fa = fresh_attacker_proba(R, u_aux, R[:5], model="logreg", seed=0)
    np.testing.assert_allclose(fa.decision_weights, prior_shift_weights(u_aux, 2))


def test_property_in_training_adversary_decides_class_balanced():
    rng = np.random.default_rng(0)
    known = np.repeat([0, 1, 2, 3], [70, 10, 10, 10])
    proba = rng.dirichlet(np.ones(4), size=20)
    out = in_training_on_release(SubsetRelease(np.zeros((20, 2)), "mean", in_training_proba=proba),
                                 AdversaryKnowledge(n_classes=4, aux_features=np.zeros((100, 2)),
                                                    aux_labels=known))
    np.testing.assert_allclose(out.decision_weights, prior_shift_weights(known, 4))


def test_gap_is_measured_against_the_majority_rate_not_one_over_k():
    labels = np.repeat([0, 1, 2, 3], [86, 5, 5, 4])
    assert majority_rate(labels, 4) == pytest.approx(0.86)
    from core.attacks.property import PropertyAttack

    always_majority = PropertyAttack(np.tile([0.97, 0.01, 0.01, 0.01], (100, 1)), None, {})
    sc, iv = score_property(always_majority, labels, n_values=4)
    assert sc["acc"] == pytest.approx(0.86)
    assert sc["gap"] == pytest.approx(0.0)  # guessing the majority is no leakage (was 0.61)
    assert iv["gap"][0] <= 0.0 <= iv["gap"][1]


def test_validation_rows_are_seeded_stratified_and_purpose_separated():
    y = np.repeat([0, 1], [900, 100])
    a = validation_rows(1000, 0.1, 7, "x", strata=y)
    np.testing.assert_array_equal(a, validation_rows(1000, 0.1, 7, "x", strata=y))
    assert a.sum() == 100 and a[y == 1].sum() == 10
    assert not np.array_equal(a, validation_rows(1000, 0.1, 7, "y", strata=y))
    assert not np.array_equal(a, validation_rows(1000, 0.1, 8, "x", strata=y))
    assert validation_rows(10, 0.1, 0).sum() == 0  # too few rows: no split


def _regression(n: int, noise: float, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, 20, generator=g)
    y = X[:, :1] + noise * torch.randn(n, 1, generator=g)
    return X, y


def test_train_until_plateau_stops_when_the_validation_loss_stops_falling():
    # few noisy rows and a wide net: the validation loss turns up, training stops early
    X, y = _regression(60, 2.0)
    net = torch.nn.Sequential(torch.nn.Linear(20, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))
    val = validation_rows(60, 0.3, 0, "t")
    log = train_until_plateau(net, lambda r: ((net(X[r]) - y[r]) ** 2).mean(), val,
                              max_epochs=2000, batch_size=16, lr=1e-2,
                              generator=torch.Generator().manual_seed(0))
    assert log.stopped_early and log.epochs_run < 2000
    assert log.epochs_run - log.best_epoch == _patience(int((~val).sum()), 16)
    assert min(log.val_loss) == pytest.approx(log.best_val_loss)
    # a clean problem with a tight cap: still falling when the cap is hit
    X, y = _regression(400, 0.0)
    lin = torch.nn.Linear(20, 1)
    log = train_until_plateau(lin, lambda r: ((lin(X[r]) - y[r]) ** 2).mean(),
                              validation_rows(400, 0.2, 0, "t"), max_epochs=5, batch_size=64,
                              lr=1e-2, generator=torch.Generator().manual_seed(0))
    assert not log.stopped_early and log.epochs_run == 5


def test_mlp_attacker_trains_until_its_validation_loss_stops_falling():
    rng = np.random.default_rng(0)
    u = rng.integers(0, 3, 1500)
    R = rng.normal(size=(1500, 8)) + 0.7 * np.eye(8)[u]
    fa = fresh_attacker_proba(R, u, R[:10], model="mlp", seed=0, mlp_epochs=1000)
    assert fa.info["stopped_early"] == 1 and fa.info["epochs_run"] < 1000
    assert fa.info["epochs_run"] - fa.info["best_epoch"] == _patience(1350, 256)
    again = fresh_attacker_proba(R, u, R[:10], model="mlp", seed=0, mlp_epochs=1000)
    np.testing.assert_array_equal(fa.proba, again.proba)
