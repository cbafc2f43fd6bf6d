"""Inf2Guard's membership defense (spec 004 §2.1, Algorithm 1): the game's direction,
determinism and input checks on a small digits split."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core.defenses.inf2guard import train_inf2guard


@pytest.fixture(scope="module")
def split():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = torch.tensor(X / 16.0, dtype=torch.float32)
    y = torch.tensor(y)
    rng = np.random.default_rng(0)
    idx = torch.tensor(rng.permutation(len(X))[:600])
    return X[idx[:300]], y[idx[:300]], X[idx[300:]]


def _train(split, lam, seed=0):
    torch.set_num_threads(1)
    Xm, ym, Xn = split
    return train_inf2guard(Xm, ym, Xn, n_classes=10, tradeoff_lambda=lam, epochs=6,
                           pretrain_epochs=3, batch_size=64, seed=seed)


def test_lambda_trades_utility_for_fooling_the_adversary(split):
    plain, private = _train(split, 0.0), _train(split, 1.0)
    Xm, ym, _ = split
    acc = lambda m: float((m.logits(Xm).argmax(-1) == ym).float().mean())
    assert acc(plain) > 0.8  # λ = 0: plain training fits its members (chance 0.1)
    # λ = 1: the encoder only fights the adversary; the utility head's loss rises
    assert private.curves["utility_ce"][-1] > plain.curves["utility_ce"][-1]
    assert private.curves["adversary_ce"][-1] >= plain.curves["adversary_ce"][-1] - 1e-3
    p = private.membership_proba(Xm)
    assert p.shape == (300,) and torch.all((p >= 0) & (p <= 1))
    assert private.representations(Xm).shape == (300, 64)


def test_same_seed_same_model_and_one_line_errors(split):
    a, b = _train(split, 0.5, seed=3), _train(split, 0.5, seed=3)
    for (n, p), (_, q) in zip(a.encoder.state_dict().items(), b.encoder.state_dict().items()):
        assert torch.equal(p, q), n
    Xm, ym, Xn = split
    with pytest.raises(ValueError, match=r"^tradeoff_lambda: got 1.5; allowed range 0 <= value <= 1$"):
        train_inf2guard(Xm, ym, Xn, n_classes=10, tradeoff_lambda=1.5)
    with pytest.raises(ValueError, match="X_nonmembers: got 300 members and 0 non-members"):
        train_inf2guard(Xm, ym, Xn[:0], n_classes=10, tradeoff_lambda=0.5)
