"""Attribute-inference attacks on synthetic representations (no FL needed)."""

import numpy as np
import pytest

from core.attacks.attribute import AttackOutcome, fresh_attacker, prior_attack, score_in_training


def _data(n, d, k, strength, seed):
    rng = np.random.default_rng(seed)
    u = rng.integers(0, k, n)
    R = rng.normal(size=(n, d))
    if strength:
        W = rng.normal(size=(k, d))
        R = R + strength * W[u]
    return R, u


def test_logreg_finds_a_linearly_encoded_attribute_and_not_an_independent_one():
    R, u = _data(1200, 16, 2, 1.0, 0)
    o = fresh_attacker(R[:800], u[:800], R[800:], u[800:], model="logreg", seed=0)
    assert isinstance(o, AttackOutcome) and o.proba.shape == (400, 2)
    assert o.scores["auc"] > 0.9 and o.ce_nats == o.scores["cross_entropy_nats"]
    R0, u0 = _data(1200, 16, 2, 0.0, 1)
    z = fresh_attacker(R0[:800], u0[:800], R0[800:], u0[800:], model="logreg", seed=0)
    assert abs(z.scores["auc"] - 0.5) < 0.07
    assert z.ce_nats > o.ce_nats


def test_mlp_is_deterministic_and_learns():
    R, u = _data(900, 8, 2, 0.8, 2)
    a = fresh_attacker(
        R[:600], u[:600], R[600:], u[600:], model="mlp", seed=3, mlp_hidden=16, mlp_epochs=30
    )
    b = fresh_attacker(
        R[:600], u[:600], R[600:], u[600:], model="mlp", seed=3, mlp_hidden=16, mlp_epochs=30
    )
    np.testing.assert_array_equal(a.proba, b.proba)
    assert a.scores["auc"] > 0.85 and a.info["epochs_run"] >= 1


def test_seven_values_with_absent_values():
    R, u = _data(1400, 16, 7, 1.5, 4)
    aux, test = slice(0, 1000), slice(1000, None)
    u_aux = u[aux].copy()
    keep = u_aux != 1  # value 1 never seen by the attacker (like Adult's AF-spouse)
    u_test = u[test].copy()
    u_test[u_test == 5] = 4  # value 5 absent from the test split
    for model in ("logreg", "mlp"):
        o = fresh_attacker(
            R[aux][keep],
            u_aux[keep],
            R[test],
            u_test,
            model=model,
            seed=0,
            mlp_epochs=20,
            n_classes=7,
        )
        assert o.proba.shape == (400, 7)
        np.testing.assert_allclose(o.proba.sum(1), 1.0, atol=1e-6)
        assert np.all(o.proba[:, 1] == 0)
        assert o.scores["chance"] == pytest.approx(1 / 7)
        assert o.scores["balanced_accuracy"] > 0.4 and o.scores["auc"] > 0.8
    p = prior_attack(u_aux, u_test, n_classes=7)
    assert p.scores["auc"] == 0.5 and p.proba.shape == (400, 7)


def test_max_train_single_class_fallback_and_in_training():
    R, u = _data(300, 4, 2, 1.0, 5)
    o = fresh_attacker(R[:200], np.zeros(200, int), R[200:], u[200:], model="logreg", seed=0)
    assert o.info.get("fallback") == "prior" and o.scores["auc"] == 0.5
    small = fresh_attacker(R[:200], u[:200], R[200:], u[200:], model="logreg", seed=0, max_train=50)
    assert small.info["n_train"] == 50
    s = score_in_training(np.where(u[200:] == 1, 0.9, 0.1), u[200:])
    assert s.name == "in_training" and s.scores["accuracy"] == 1.0
    with pytest.raises(ValueError, match="R_test"):
        fresh_attacker(R[:200], u[:200], R[200:, :2], u[200:], model="logreg", seed=0)
    with pytest.raises(ValueError, match="model"):
        fresh_attacker(R[:200], u[:200], R[200:], u[200:], model="knn", seed=0)
