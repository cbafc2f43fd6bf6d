"""The attacker protocol (DESIGN: Metrics): class-balanced fresh attackers, the one Adam loop
(core.engine.training) and picking the strongest attacker."""

import math

import numpy as np
import pytest
import torch

from core.attacks.attribute import AttackOutcome, fresh_attacker, prior_attack, strongest
from core.engine.training import adam_train, balanced_class_weights, train_classifier

MLP = {"mlp_hidden": 32, "mlp_epochs": 40}


def _imbalanced_binary(n: int, seed: int, delta: float = 0.8):
    """u ~ Bernoulli(0.1), r = N(0, I_8) + delta·u·e_0: the Bayes rule at the true prior never
    says u = 1 (the likelihood ratio would need r_0 > 3.2), the balanced rule r_0 > 0.4 gets a
    balanced accuracy of Φ(0.4) ≈ 0.66."""
    rng = np.random.default_rng(seed)
    u = (rng.random(n) < 0.1).astype(np.int64)
    R = rng.normal(size=(n, 8))
    R[:, 0] += delta * u
    return R, u


@pytest.mark.parametrize("seed", [0, 1])
def test_balanced_attackers_read_an_imbalanced_attribute_the_unweighted_ones_miss(seed):
    R, u = _imbalanced_binary(7000, 100 + seed)
    a, t = slice(0, 3000), slice(3000, None)
    prior = prior_attack(u[a], u[t])
    for model in ("logreg", "mlp"):
        plain = fresh_attacker(
            R[a], u[a], R[t], u[t], model=model, seed=seed, class_weight=None, **MLP
        )
        one_class = np.unique(plain.prediction).size == 1
        assert plain.scores["balanced_accuracy"] <= 0.52 or one_class, model
        # the protocol's default: calibrated training, class-balanced decision (prior shift)
        shift = fresh_attacker(R[a], u[a], R[t], u[t], model=model, seed=seed, **MLP)
        assert shift.info["class_weight"] == "prior_shift" and shift.decision_weights is not None
        assert shift.scores["balanced_accuracy"] >= 0.58, model
        # its ranking is the calibrated model's: AUC and CE equal the unweighted attacker's
        assert shift.scores["auc"] == pytest.approx(plain.scores["auc"])
        assert shift.ce_nats == pytest.approx(plain.ce_nats) and shift.ce_nats < prior.ce_nats
        # balanced training: probabilities skewed to the rare value; the CE is prior-corrected
        bal = fresh_attacker(R[a], u[a], R[t], u[t], model=model, seed=seed, class_weight="balanced", **MLP)
        assert bal.scores["balanced_accuracy"] >= 0.58, model
        assert bal.info["class_weight"] == "balanced" and plain.info["class_weight"] == "none"
        assert bal.ce_nats == bal.scores["cross_entropy_nats"]
        assert bal.info["ce_nats_weighted"] > bal.ce_nats + 0.1
        assert bal.ce_nats < prior.ce_nats and abs(bal.ce_nats - plain.ce_nats) < 0.03


def _four_values(n: int, seed: int, strength: float = 1.0):
    rng = np.random.default_rng(seed)
    u = rng.choice(4, size=n, p=[0.45, 0.32, 0.20, 0.03])
    R = rng.normal(size=(n, 8))
    R[np.arange(n), u] += strength
    return R, u


def test_balanced_attackers_recall_a_rare_value_of_a_four_valued_attribute():
    R, u = _four_values(6000, 200)
    a, t = slice(0, 3000), slice(3000, None)
    rare = u[t] == 3
    plain = fresh_attacker(R[a], u[a], R[t], u[t], model="logreg", seed=0, class_weight=None)
    plain_recall = np.mean(plain.prediction[rare] == 3)
    for model in ("logreg", "mlp"):
        for cw in ("prior_shift", "balanced"):
            o = fresh_attacker(R[a], u[a], R[t], u[t], model=model, seed=0, class_weight=cw, **MLP)
            assert o.proba.shape == (3000, 4)
            recall = np.mean(o.prediction[rare] == 3)
            assert recall >= 0.25 and recall > plain_recall + 0.2, (model, cw)
            assert o.scores["balanced_accuracy"] >= 0.45 and o.scores["chance"] == 0.25, (model, cw)
    # the rare value missing from the aux rows: still 4 columns, the unseen one at 0
    keep = u[a] != 3
    for model in ("logreg", "mlp"):
        for k in (None, 4):
            o = fresh_attacker(
                R[a][keep], u[a][keep], R[t], u[t], model=model, seed=0, n_classes=k, **MLP
            )
            assert o.proba.shape == (3000, 4)
            assert np.all(o.proba[:, 3] == 0)
            np.testing.assert_allclose(o.proba.sum(1), 1.0, atol=1e-6)
            assert math.isfinite(o.ce_nats) and o.scores["balanced_accuracy"] > 0.25


def test_fresh_attacker_rejects_an_unknown_class_weight():
    R, u = _four_values(200, 1)
    with pytest.raises(ValueError, match="class_weight"):
        fresh_attacker(
            R[:100], u[:100], R[100:], u[100:], model="logreg", seed=0, class_weight="auto"
        )


def test_adam_train_keeps_the_best_epoch_and_stops_early():
    # train pulls w towards 1, the validation loss is smallest at w = 0.3: the best epoch is
    # early, training stops `patience` epochs later and the best weights come back
    w = torch.zeros(1, requires_grad=True)
    seen: list[float] = []
    log = adam_train(
        [w],
        lambda idx: ((w - 1.0) ** 2).sum() + 0.0 * idx.sum(),
        10,
        epochs=50,
        batch_size=10,
        lr=0.05,
        generator=torch.Generator().manual_seed(0),
        val_loss_fn=lambda: float((w - 0.3) ** 2),
        patience=3,
        on_epoch=lambda e, _log: seen.append(float(w.detach())),
    )
    assert log.stopped_early and log.epochs_run == log.best_epoch + 3 < 50
    assert log.best_epoch == int(np.argmin(log.val_loss)) + 1
    assert log.best_val_loss == min(log.val_loss)
    assert float(w.detach()) == seen[log.best_epoch - 1]
    assert len(log.train_loss) == len(log.val_loss) == log.epochs_run
    assert log.train_loss == sorted(log.train_loss, reverse=True)


def _fit(seed: int, class_weight="balanced"):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5)).astype(np.float32)
    y = (X[:, 0] + 0.5 * rng.normal(size=300) > 0.8).astype(np.int64)
    g = torch.Generator().manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    with torch.no_grad():  # same initial weights for every call; only the generator differs
        for i, p in enumerate(net.parameters()):
            p.copy_(torch.linspace(-0.3, 0.3, p.numel()).reshape(p.shape) * (-1) ** i)
    info = train_classifier(
        net,
        X,
        y,
        class_weight=class_weight,
        epochs=6,
        batch_size=32,
        lr=1e-2,
        generator=g,
        val_fraction=0.2,
        patience=2,
    )
    return net, info, y


def test_train_classifier_is_deterministic_per_generator_seed():
    a, ia, y = _fit(1)
    b, ib, _ = _fit(1)
    c, _, _ = _fit(2)
    for pa, pb in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(pa, pb, rtol=0, atol=0)
    assert ia["train_loss"] == ib["train_loss"] and ia["val_loss"] == ib["val_loss"]
    assert any(not torch.equal(pa, pc) for pa, pc in zip(a.parameters(), c.parameters()))
    assert ia["n_train"] + ia["n_val"] == 300 and ia["n_val"] == 60
    np.testing.assert_allclose(ia["class_weight"], balanced_class_weights(y, 2))
    _, iu, _ = _fit(1, class_weight=None)
    np.testing.assert_array_equal(iu["class_weight"], [1.0, 1.0])


def test_balanced_class_weights_follow_sklearn():
    from sklearn.utils.class_weight import compute_class_weight

    y = np.array([0, 0, 0, 0, 0, 2, 2, 1])
    np.testing.assert_allclose(
        balanced_class_weights(y, 3), compute_class_weight("balanced", classes=np.arange(3), y=y)
    )
    np.testing.assert_allclose(balanced_class_weights(np.array([0, 0, 0, 2]), 4), [4 / 6, 0, 2, 0])


def _o(name: str, **scores: float) -> AttackOutcome:
    return AttackOutcome(
        name=name,
        scores=scores,
        proba=np.zeros((0, 2)),
        ce_nats=scores.get("cross_entropy_nats", 0.0),
    )


def test_strongest_picks_the_best_ignores_nan_and_keeps_order_on_ties():
    outs = {
        "prior": _o("prior", auc=0.5, cross_entropy_nats=0.69),
        "logreg": _o("logreg", auc=0.81, cross_entropy_nats=0.5),
        "mlp": _o("mlp", auc=0.81, cross_entropy_nats=0.45),
        "broken": _o("broken", auc=float("nan"), cross_entropy_nats=float("nan")),
    }
    assert strongest(outs) == "logreg"  # tie at 0.81: first in order
    assert strongest(outs, by="cross_entropy_nats") == "mlp"  # lower CE is stronger
    assert strongest({"a": _o("a", auc=float("nan")), "b": _o("b", auc=0.6)}) == "b"
    assert strongest({"a": _o("a", auc=float("nan"))}) == "a"
    with pytest.raises(ValueError, match="outcomes"):
        strongest({})
    with pytest.raises(ValueError, match="by"):
        strongest(outs, by="nope")
