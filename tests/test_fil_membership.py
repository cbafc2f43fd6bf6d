"""LiRA against FIL's output-perturbed GLM (core/attacks/fil_membership.py; issue #22 item 5)."""

from __future__ import annotations

import numpy as np
import pytest

from core.attacks.fil_membership import (
    fil_lira,
    irfil_shadow_fits,
    per_example_separation,
    releases,
    shadow_fits,
    signed_margin,
    spearman_interval,
)
from core.bounds.fil_regression import fit_glm, irfil
from core.engine.shadow_training import shadow_splits
from core.foundation.metrics import roc_curve_points


def _data(n=80, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    y01 = (X @ rng.normal(size=d) + 0.8 * rng.normal(size=n) > 0).astype(float)
    return X, y01


def _auc(scores, y):
    fpr, tpr = roc_curve_points(np.asarray(y, dtype=int), scores, drop_intermediate=False)
    return float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2))


@pytest.mark.parametrize("model", ["linear", "logistic"])
@pytest.mark.parametrize("weighted", [False, True])
def test_batched_shadow_fits_equal_one_fit_per_subset(model, weighted):
    X, y01 = _data()
    y = 2 * y01 - 1 if model == "linear" else y01
    M = shadow_splits(len(y), 6, seed=1)
    w = np.random.default_rng(2).uniform(0.5, 2.0, (6, len(y))) if weighted else None
    got = shadow_fits(X, y, M, model=model, l2=0.05, weights=w, tol=1e-12)
    for k in range(6):
        ref = fit_glm(X[M[k]], y[M[k]], model=model, l2=0.05,
                      weights=None if w is None else w[k][M[k]], tol=1e-12).theta
        np.testing.assert_allclose(got[k], ref, rtol=1e-7, atol=1e-9)


def test_irfil_shadow_fits_run_irfil_on_each_subset():
    X, y01 = _data(n=50)
    y = 2 * y01 - 1
    M = shadow_splits(len(y), 2, seed=3)
    got = irfil_shadow_fits(X, y, M, model="linear", l2=0.05, iterations=2)
    for k in range(2):
        ref = irfil(X[M[k]], y[M[k]], model="linear", l2=0.05, iterations=2).final.fit.theta
        np.testing.assert_allclose(got[k], ref, rtol=1e-10)


def test_signed_margin_is_the_logit_of_the_true_class_for_logistic_regression():
    X, y01 = _data(n=20)
    th = fit_glm(X, y01, model="logistic", l2=0.1).theta
    p = 1 / (1 + np.exp(-(X @ th)))
    p_true = np.where(y01 == 1, p, 1 - p)
    np.testing.assert_allclose(signed_margin(X, y01, th), np.log(p_true / (1 - p_true)),
                               rtol=1e-9)
    assert signed_margin(X, y01, np.stack([th, th])).shape == (2, 20)


def test_lira_reads_membership_of_an_overfit_release_and_not_of_a_noisy_one():
    # half of a pool trains the target; a tiny L2 weight and d close to n: members stand out
    X, y01 = _data(n=60, d=20, seed=4)
    y = 2 * y01 - 1
    rng = np.random.default_rng(5)
    member = np.zeros(60, bool)
    member[rng.choice(60, 30, replace=False)] = True
    M = shadow_splits(60, 32, seed=6)
    th_t = shadow_fits(X, y, member[None], model="linear", l2=1e-3)
    th_s = shadow_fits(X, y, M, model="linear", l2=1e-3)
    aucs = {}
    for sigma in (1e-3, 1e3):
        t = signed_margin(X, y, releases(np.repeat(th_t, 20, 0), sigma=sigma, rng=rng))
        s = signed_margin(X, y, releases(th_s, sigma=sigma, rng=rng))
        sc = fil_lira(t, s, M)
        assert sc.shape == (20, 60)
        aucs[sigma] = np.mean([_auc(row, member) for row in sc])
    assert aucs[1e-3] > 0.7 and abs(aucs[1e3] - 0.5) < 0.1
    sep = per_example_separation(signed_margin(X, y, th_s), M)
    assert np.nanmean(sep) > 0.5  # IN margins sit above OUT margins


def test_spearman_interval_brackets_the_estimate():
    rng = np.random.default_rng(0)
    a = rng.normal(size=200)
    rho, lo, hi = spearman_interval(a, a + rng.normal(size=200), n_boot=200)
    assert lo <= rho <= hi and rho > 0.5
    _, lo0, hi0 = spearman_interval(a, rng.normal(size=200), n_boot=200)
    assert lo0 < 0 < hi0


@pytest.mark.parametrize("call, match", [
    (lambda X, y: shadow_fits(X, y, np.zeros((2, 5), bool), model="linear", l2=0.1),
     r"^in_mask: got shape \(2, 5\)"),
    (lambda X, y: shadow_fits(X, y, np.zeros((2, 30), bool), model="linear", l2=0.1),
     "^in_mask: a shadow model has no training rows"),
    (lambda X, y: signed_margin(X, y * 3, np.zeros(6)), "^y: got labels other than"),
    (lambda X, y: fil_lira(np.zeros(30), np.zeros((2, 30)), np.ones((3, 30), bool)),
     r"^in_mask: got shape \(3, 30\)"),
    (lambda X, y: spearman_interval([1, 2], [1, 2]), "^a, b: got 2 finite pairs"),
])
def test_bad_input_gives_one_line_errors(call, match):
    X, y01 = _data(n=30)
    with pytest.raises(ValueError, match=match) as e:
        call(X, y01)
    assert "\n" not in str(e.value)
