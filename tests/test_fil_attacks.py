"""Attacks on an output-perturbed GLM release (core/attacks/fil_attacks.py; issue #11, §A10)."""

from __future__ import annotations

import numpy as np
import pytest

from core.attacks.fil_attacks import (
    accuracy_by_decile,
    black_box_attack,
    candidate_models,
    crb_report,
    performance_stats,
    prior_attack,
    reconstruct_feature,
    reconstruct_label,
    true_codes,
    white_box_attack,
)
from core.bounds.fil_regression import fit_glm, per_example_fil, release

ONEHOT = [2, 3]  # a 3-level one-hot group with the last level dropped
CANDS = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])


def _data(n: int = 120, d: int = 6, seed: int = 1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    level = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    X[:, ONEHOT] = CANDS[level]
    beta = rng.normal(size=d)
    beta[ONEHOT] = [1.5, -1.0]
    y = np.where(X @ beta + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y, level


def _refits(X, y, model, l2, w, targets):
    out = np.zeros((len(targets), len(CANDS), X.shape[1]))
    for a, i in enumerate(targets):
        for c, v in enumerate(CANDS):
            Xc = X.copy()
            Xc[i, ONEHOT] = v
            out[a, c] = fit_glm(Xc, y, model=model, l2=l2, weights=w, tol=1e-14).theta
    return out


@pytest.mark.parametrize("weighted", [False, True])
def test_rank2_update_equals_refit(weighted):
    X, y, _ = _data()
    w = np.random.default_rng(3).uniform(0.5, 2.0, len(y)) if weighted else None
    fit = fit_glm(X, y, model="linear", l2=1e-3, weights=w)
    tg = np.array([0, 5, 17, 60])
    got = candidate_models(fit, X, y, columns=ONEHOT, candidates=CANDS, targets=tg)
    np.testing.assert_allclose(got, _refits(X, y, "linear", 1e-3, w, tg), rtol=1e-9, atol=1e-12)


def test_newton_step_close_to_exact_refit():
    """Logistic regression: one Newton step per candidate is an approximation; from a release
    at small σ its error is a few percent of the distance between candidates' models, and the
    attack's decisions equal those made with exact refits."""
    X, y, _ = _data()
    fit = fit_glm(X, y, model="logistic", l2=1e-2)
    tg = np.array([1, 8, 30, 99])
    exact = _refits(X, y, "logistic", 1e-2, None, tg)
    gap = np.linalg.norm(exact[:, :, None] - exact[:, None], axis=-1).max(axis=(1, 2))
    R = release(fit, sigma=1e-3, trials=5, rng=0)
    for start in (None, R[0]):
        approx = candidate_models(fit, X, y, columns=ONEHOT, candidates=CANDS, targets=tg,
                                  expansion=start)
        err = np.linalg.norm(approx - exact, axis=-1).max(axis=1)
        assert np.all(err < 0.05 * gap), err / gap
    g = white_box_attack(R, fit=fit, X=X, y=y, columns=ONEHOT, candidates=CANDS, targets=tg)
    ref = np.argmin(((R[:, None, None, :] - exact[None]) ** 2).sum(-1), axis=2)
    np.testing.assert_array_equal(g.guesses, ref)


@pytest.mark.parametrize("model,l2", [("linear", 1e-3), ("logistic", 1e-2)])
def test_white_box_ignores_the_stored_target_value_and_reads_it_at_small_sigma(model, l2):
    X, y, level = _data()
    fit = fit_glm(X, y, model=model, l2=l2)
    tg = np.arange(0, 120, 7)
    R = release(fit, sigma=1e-4, trials=3, rng=1)
    g = white_box_attack(R, fit=fit, X=X, y=y, columns=ONEHOT, candidates=CANDS, targets=tg)
    assert g.guesses.shape == (3, tg.size)
    acc = g.accuracy(level[tg])
    assert np.all(acc == 1.0), acc
    # the attacker's copy of target i's attribute is never used for i: overwrite the targets'
    # stored values (refitting the model the attacker thinks it knows) — guesses do not move.
    # With a wrong stored value the fit changes, so use the exact model and the same release.
    Xw = X.copy()
    Xw[tg[0], ONEHOT] = CANDS[(level[tg[0]] + 1) % 3]
    fit_w = fit_glm(Xw, y, model=model, l2=l2)
    if model == "linear":  # exact: the candidate models are identical, so are the guesses
        a = candidate_models(fit, X, y, columns=ONEHOT, candidates=CANDS, targets=tg[:1])
        b = candidate_models(fit_w, Xw, y, columns=ONEHOT, candidates=CANDS, targets=tg[:1])
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    g2 = white_box_attack(R, fit=fit_w, X=Xw, y=y, columns=ONEHOT, candidates=CANDS,
                          targets=tg[:1])
    np.testing.assert_array_equal(g2.guesses[:, 0], g.guesses[:, 0])


def test_white_box_falls_to_the_prior_when_noise_dominates():
    X, y, level = _data(n=300)
    fit = fit_glm(X, y, model="linear", l2=1e-3)
    prior = np.bincount(level, minlength=3) / len(level)
    R = release(fit, sigma=1e3, trials=20, rng=2)
    m = white_box_attack(R, fit=fit, X=X, y=y, columns=ONEHOT, candidates=CANDS,
                         sigma=1e3, prior=prior)  # MAP: at huge σ the prior decides
    assert np.mean(m.guesses == 0) > 0.95
    ml = white_box_attack(R, fit=fit, X=X, y=y, columns=ONEHOT, candidates=CANDS)
    assert ml.accuracy(level).mean() < 0.6  # maximum likelihood: near chance
    assert prior_attack(prior, m=300).accuracy(level)[0] == pytest.approx(prior[0])


def test_black_box_uses_prior_when_attribute_does_not_move_predictions():
    X, y, level = _data()
    Xz = X.copy()
    Xz[:, ONEHOT] = 0.0  # the model never sees the attribute: θ_S = 0
    fit = fit_glm(Xz, y, model="linear", l2=1e-3)
    R = release(fit, sigma=1e-3, trials=2, rng=0)
    stats = [performance_stats(r, model="linear", X=Xz, y=y) for r in R]
    prior = np.array([0.2, 0.5, 0.3])
    g = black_box_attack(R, model="linear", X_targets=X, y_targets=y, columns=ONEHOT,
                         candidates=CANDS, prior=prior, stats=stats)
    assert np.all(g.guesses == 1)
    # on a model that uses the attribute, the black box beats the prior on these data
    fit = fit_glm(X, y, model="linear", l2=1e-3)
    R = release(fit, sigma=1e-3, trials=2, rng=0)
    for model, pi in (("linear", "gaussian"), ("linear", "confusion")):
        stats = [performance_stats(r, model=model, X=X, y=y) for r in R]
        emp = np.bincount(level, minlength=3) / len(level)
        g = black_box_attack(R, model=model, X_targets=X, y_targets=y, columns=ONEHOT,
                             candidates=CANDS, prior=emp, stats=stats, pi=pi)
        assert g.guesses.shape == (2, 120)
        assert g.accuracy(level).mean() >= emp.max() - 1e-12


def test_black_box_reads_pi_with_the_labels_coding_of_the_statistics():
    """Targets that all hold one label (±1 coding, every target +1) are scored with the
    statistics' threshold (0 for ±1 labels), not one guessed from the targets' labels: the
    guesses on the subset equal the full attack's guesses on those rows."""
    X, y, _ = _data()
    fit = fit_glm(X, y, model="linear", l2=1e-3)
    R = release(fit, sigma=1e-3, trials=2, rng=0)
    stats = [performance_stats(r, model="linear", X=X, y=y) for r in R]
    assert all(st["threshold"] == 0.0 and st["label_cut"] == 0.0 for st in stats)
    emp = np.full(3, 1 / 3)  # a flat prior: π alone decides
    full = black_box_attack(R, model="linear", X_targets=X, y_targets=y, columns=ONEHOT,
                            candidates=CANDS, prior=emp, stats=stats, pi="confusion")
    pos = np.flatnonzero(y > 0)
    part = black_box_attack(R, model="linear", X_targets=X[pos], y_targets=y[pos],
                            columns=ONEHOT, candidates=CANDS, prior=emp, stats=stats,
                            pi="confusion")
    assert np.array_equal(part.guesses, full.guesses[:, pos])
    # one +1 target whose candidates score 0 and 0.3: the ±1 statistics' threshold 0 tells
    # them apart (π favours the candidate predicted +1); a threshold of 0.5 guessed from the
    # targets' labels alone would predict −1 for both and fall to the prior's mode
    st = {"s2": 1.0, "confusion": np.array([[0.5, 0.5], [0.1, 0.9]]), "label_cut": 0.0,
          "threshold": 0.0}
    one = black_box_attack(np.array([[0.3, 0.0]]), model="linear",
                           X_targets=np.array([[0.0, 1.0]]), y_targets=np.array([1.0]),
                           columns=[0], candidates=np.array([[0.0], [1.0]]),
                           prior=np.array([0.6, 0.4]), stats=[st], pi="confusion")
    assert one.guesses.tolist() == [[1]]
    with pytest.raises(ValueError, match="stats"):
        black_box_attack(R, model="linear", X_targets=X, y_targets=y, columns=ONEHOT,
                         candidates=CANDS, prior=emp, stats=[{"s2": 1.0}] * 2, pi="confusion")


def test_label_reconstruction_attains_the_cramer_rao_bound():
    """The note's Monte Carlo case: ŷ_i is unbiased with variance σ²/‖a_i‖² = 1/η_{i,y}²."""
    X, y, _ = _data(n=80)
    w = np.random.default_rng(4).uniform(0.5, 2.0, 80)
    for weights in (None, w):
        fit = fit_glm(X, y, model="linear", l2=1e-3, weights=weights)
        sigma = 0.05
        R = release(fit, sigma=sigma, trials=3000, rng=5)
        tg = np.array([0, 3, 40])
        est = reconstruct_label(R, fit=fit, X=X, y=y, targets=tg)
        eta = per_example_fil(fit, X, y, sigma=sigma, granularity="label")[tg]
        rep = crb_report(est, y[tg], eta)
        se = np.sqrt(rep["variance"] / 3000)
        assert np.all(np.abs(rep["bias"]) < 4 * se)
        assert np.all(rep["ratio_lo"] <= 1.0) and np.all(rep["ratio_hi"] >= 1.0), rep["ratio"]
        assert np.all(np.abs(rep["ratio"] - 1) < 0.12)


def test_feature_reconstruction_and_crb_report_flags_a_biased_estimator():
    X, y, _ = _data(n=80)
    fit = fit_glm(X, y, model="linear", l2=1e-3)
    sigma = 1e-4
    R = release(fit, sigma=sigma, trials=400, rng=6)
    tg = np.array([2, 9])
    est = reconstruct_feature(R, fit=fit, X=X, y=y, column=0, targets=tg)
    eta = per_example_fil(fit, X, y, sigma=sigma, granularity="attribute", columns=[0])[tg]
    rep = crb_report(est, X[tg, 0], eta)
    assert np.all(np.abs(rep["bias"]) < 5 * np.sqrt(rep["variance"] / 400))
    assert np.all(rep["ratio_lo"] <= 1.0) and np.all(rep["ratio"] > 0.8)
    shrunk = 0.5 * est + 0.5 * X[tg, 0]  # a (cheating) biased estimator beats 1/η²
    assert np.all(crb_report(shrunk, X[tg, 0], eta)["ratio_hi"] < 1.0)
    logi = fit_glm(X, y, model="logistic", l2=1e-2)
    with pytest.raises(ValueError, match="^model:"):
        reconstruct_label(R, fit=logi, X=X, y=y)


def test_scoring_helpers():
    X, _, level = _data()
    np.testing.assert_array_equal(true_codes(X, ONEHOT, CANDS), level)
    eta = np.arange(120, dtype=float)
    guesses = np.where(eta[None, :] >= 60, level, (level + 1) % 3)
    mean_eta, acc = accuracy_by_decile(guesses, level, eta, bins=4)
    np.testing.assert_allclose(acc, [0, 0, 1, 1])
    assert np.all(np.diff(mean_eta) > 0)
