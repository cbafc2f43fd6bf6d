"""Fisher information loss engine (core/bounds/fil_regression.py, core/bounds/fil.py; issue #11, spec 002 Part A)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from core.bounds.fil_regression import (
    compose_eta,
    compose_etas,
    crb_variance_bound,
    dataset_fil,
    epsilon_from_sigma,
    eta_for_sigma,
    fil_jacobians,
    fit_glm,
    group_fil,
    irfil,
    local_rdp,
    per_example_fil,
    release,
    sensitivity_l2,
    sigma_for_eta,
    sigma_from_dp,
)


def _data(n: int = 40, d: int = 4, seed: int = 0, outliers: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if outliers:
        X[:outliers] *= 4.0
    X /= np.linalg.norm(X, axis=1).max()
    y = np.where(X @ rng.normal(size=d) + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


CASES = [("linear", 1e-3, False), ("linear", 1e-3, True),
         ("logistic", 1e-2, False), ("logistic", 1e-2, True)]


def _weights(flag: bool, n: int) -> np.ndarray | None:
    return np.random.default_rng(7).uniform(0.3, 3.0, n) if flag else None


def _autograd_jacobian(fit, x: np.ndarray, y01: float, w: float) -> np.ndarray:
    """−H⁻¹ ∂/∂(x, y) [ω ∇_w ℓ(w*ᵀx, y)] with torch.autograd (the implicit-function expression)."""
    theta = torch.tensor(fit.theta)

    def grad_w(z: torch.Tensor) -> torch.Tensor:
        xx, yy = z[:-1], z[-1]
        a = xx @ theta
        d1 = a - yy if fit.model == "linear" else torch.sigmoid(a) - yy
        return w * d1 * xx

    z = torch.tensor(np.append(x, y01))
    mixed = torch.autograd.functional.jacobian(grad_w, z).numpy()
    return -fit.hessian_inv @ mixed


@pytest.mark.parametrize("model,l2,weighted", CASES)
def test_jacobian_matches_autograd_and_finite_differences(model, l2, weighted):
    X, y = _data()
    if model == "logistic":
        y = (y > 0).astype(float)
    w = _weights(weighted, len(y))
    fit = fit_glm(X, y, model=model, l2=l2, weights=w)
    J = fil_jacobians(fit, X, y)
    assert J.shape == (40, 4, 5)
    for i in (0, 7, 23):
        ref = _autograd_jacobian(fit, X[i], y[i], 1.0 if w is None else w[i])
        np.testing.assert_allclose(J[i], ref, rtol=1e-10, atol=1e-12)
        eps = 1e-6
        cols = range(5) if model == "linear" else range(4)  # logistic labels stay in {0, 1}
        for k in cols:
            Xp, Xm, yp, ym = X.copy(), X.copy(), y.copy(), y.copy()
            if k < 4:
                Xp[i, k] += eps
                Xm[i, k] -= eps
            else:
                yp[i] += eps
                ym[i] -= eps
            tp = fit_glm(Xp, yp, model=model, l2=l2, weights=w, tol=1e-14).theta
            tm = fit_glm(Xm, ym, model=model, l2=l2, weights=w, tol=1e-14).theta
            np.testing.assert_allclose(J[i][:, k], (tp - tm) / (2 * eps), rtol=1e-4,
                                       atol=1e-7 * np.abs(J[i]).max())


def test_fit_is_the_optimum():
    X, y = _data(n=60, d=5)
    fit = fit_glm(X, y, model="linear", l2=1e-2)
    # ridge as least squares on [X; √(nλ) I] (an independent solver)
    aug = np.vstack([X, math.sqrt(60 * 1e-2) * np.eye(5)])
    ref = np.linalg.lstsq(aug, np.append(y, np.zeros(5)), rcond=None)[0]
    np.testing.assert_allclose(fit.theta, ref, rtol=1e-9)
    lf = fit_glm(X, y, model="logistic", l2=1e-3)
    assert lf.grad_norm < 1e-8
    # {−1, 1} labels are the {0, 1} problem
    np.testing.assert_allclose(lf.theta, fit_glm(X, (y > 0).astype(float), model="logistic",
                                                 l2=1e-3).theta, rtol=1e-10)
    assert 0.5 < lf.accuracy(X, y) <= 1.0 and set(np.unique(lf.predict(X))) <= {-1.0, 1.0}


@pytest.mark.parametrize("model,l2,weighted", CASES)
def test_per_example_eta_is_the_spectral_norm(model, l2, weighted):
    X, y = _data(n=80, d=6, seed=3, outliers=5)
    fit = fit_glm(X, y, model=model, l2=l2, weights=_weights(weighted, 80))
    J = fil_jacobians(fit, X, y)
    svd = np.linalg.svd(J, compute_uv=False)[:, 0]
    fast = per_example_fil(fit, X, y, chunk_size=17)
    np.testing.assert_allclose(fast, svd, rtol=1e-10)
    np.testing.assert_allclose(per_example_fil(fit, X, y, method="eigh"), svd, rtol=1e-10)
    # attribute (one column, a group, with the label) and label slices
    for cols in ([2], [1, 3], [0, 6], [6]):
        ref = np.linalg.svd(J[:, :, cols], compute_uv=False)[:, 0]
        got = per_example_fil(fit, X, y, granularity="attribute", columns=cols)
        np.testing.assert_allclose(got, ref, rtol=1e-10)
    np.testing.assert_allclose(per_example_fil(fit, X, y, granularity="label"),
                               np.linalg.norm(J[:, :, 6], axis=1), rtol=1e-12)


def test_eta_scales_as_one_over_sigma():
    X, y = _data()
    fit = fit_glm(X, y, model="logistic", l2=1e-2)
    e1 = per_example_fil(fit, X, y, sigma=1.0)
    for s in (1e-3, 0.5, 7.0):
        np.testing.assert_allclose(per_example_fil(fit, X, y, sigma=s), e1 / s, rtol=1e-12)
        np.testing.assert_allclose(eta_for_sigma(e1, s), e1 / s)
    assert dataset_fil(fit, X, y, sigma=4.0) == pytest.approx(dataset_fil(fit, X, y) / 4)


@pytest.mark.parametrize("model", ["linear", "logistic"])
def test_group_identity_and_bounds(model):
    X, y = _data(n=30, d=4, seed=5)
    fit = fit_glm(X, y, model=model, l2=1e-2, weights=_weights(True, 30))
    J = fil_jacobians(fit, X, y)
    groups = np.arange(30) % 3
    eta = per_example_fil(fit, X, y)
    out = group_fil(fit, X, y, groups=groups)
    for g, val in out.items():
        m = groups == g
        stacked = np.concatenate(list(J[m]), axis=1)  # d × |G|(d+1): the FIM's sub-block
        assert val == pytest.approx(np.linalg.svd(stacked, compute_uv=False)[0], rel=1e-10)
        assert eta[m].max() <= val * (1 + 1e-12)
        assert val <= math.sqrt(np.sum(eta[m] ** 2)) * (1 + 1e-12)
    # attribute over all examples, and the whole data set
    cols = [1, 4]
    whole = np.concatenate(list(J[:, :, cols]), axis=1)
    assert dataset_fil(fit, X, y, columns=cols) == pytest.approx(
        np.linalg.svd(whole, compute_uv=False)[0], rel=1e-10)
    assert dataset_fil(fit, X, y) >= max(out.values())


def test_irfil_equalises_eta_and_keeps_weights_summing_to_n():
    X, y = _data(n=120, d=5, seed=2, outliers=8)
    for model, l2 in (("linear", 1e-3), ("logistic", 1e-2)):
        tr = irfil(X, y, model=model, l2=l2, iterations=8)
        assert len(tr.steps) == 9 and tr.steps[0].weights.sum() == 120
        for s in tr.steps:
            assert s.weights.sum() == pytest.approx(120, rel=1e-10)
            # η reported is the weighted model's own per-example FIL (Eq. 29 corrected)
            np.testing.assert_allclose(s.eta, per_example_fil(s.fit, X, y), rtol=1e-12)
        std = tr.series("eta_std")
        assert std[-1] / std[0] < 1e-2, std
        assert abs(tr.final.accuracy - tr.steps[0].accuracy) <= 0.05
    # class / hybrid methods, the clamp, and attribute-level η all keep Σω = n
    for method in ("class", "hybrid"):
        tr = irfil(X, y, model="linear", l2=1e-3, iterations=3, method=method, clamp=(0.5, 2.0))
        w = tr.final.weights
        assert w.sum() == pytest.approx(120) and w.min() >= 0.5 - 1e-12 and w.max() <= 2 + 1e-12
        if method == "class":
            assert all(np.ptp(w[y == c]) < 1e-9 for c in (-1, 1))
    tr = irfil(X, y, model="linear", l2=1e-3, iterations=12, columns=[2])
    assert tr.series("eta_std")[-1] < 0.05 * tr.series("eta_std")[0]


def test_composition_and_sigma_calibration():
    assert compose_eta(0.3, 4) == pytest.approx(0.6)
    np.testing.assert_allclose(compose_eta(np.array([1.0, 2.0]), 9), [3.0, 6.0])
    assert compose_etas(np.array([3.0, 4.0])) == pytest.approx(5.0)
    assert compose_etas(np.full(9, 0.5)) == pytest.approx(compose_eta(0.5, 9))
    e1 = np.array([0.2, 0.5, 1.0])
    s = sigma_for_eta(e1, eta_target=0.1, reduce="max")
    assert eta_for_sigma(e1, s).max() == pytest.approx(0.1)
    s = sigma_for_eta(e1, eta_target=0.1, reduce="mean")
    assert eta_for_sigma(e1, s).mean() == pytest.approx(0.1)
    assert crb_variance_bound(0.5) == pytest.approx(4.0)
    # DP: Δ₂ = 2/(nλ) (logistic, unit ball); classic and RDP calibrations invert
    assert sensitivity_l2(n=1000, l2=1e-2) == pytest.approx(0.2)
    sc = sigma_from_dp(0.5, 1e-5, n=1000, l2=1e-2, method="classic")
    assert sc == pytest.approx(0.2 * math.sqrt(2 * math.log(1.25e5)) / 0.5)
    for eps in (0.3, 2.0, 8.0):
        sr = sigma_from_dp(eps, 1e-5, n=1000, l2=1e-2)
        assert epsilon_from_sigma(sr, 1e-5, n=1000, l2=1e-2) == pytest.approx(eps)
    assert local_rdp(0.5, alpha=2.0) == pytest.approx(2.0 * 0.25 * 4 / 2)


@pytest.mark.parametrize("call,field", [
    (lambda f, X, y: per_example_fil(f, X, y, sigma=0.0), "sigma"),
    (lambda f, X, y: per_example_fil(f, X, y, sigma=float("nan")), "sigma"),
    (lambda f, X, y: release(f, sigma=-1.0), "sigma"),
    (lambda f, X, y: fit_glm(X, y, model="logistic", l2=0.0), "l2"),
    (lambda f, X, y: fit_glm(X, y, model="linear", l2=-1e-3), "l2"),
    (lambda f, X, y: fit_glm(X, y, model="linear", l2=1e9), "l2"),
    (lambda f, X, y: sigma_for_eta(np.ones(3), eta_target=0.0), "eta_target"),
    (lambda f, X, y: sigma_for_eta(np.ones(3), eta_target=-2.0), "eta_target"),
    (lambda f, X, y: irfil(X, y, model="linear", l2=1e-3, iterations=-1), "iterations"),
    (lambda f, X, y: compose_eta(0.1, 0), "k"),
    (lambda f, X, y: sigma_from_dp(1.0, 1e-5, n=100, l2=1e-2, model="linear"), "model"),
    (lambda f, X, y: sigma_from_dp(2.0, 1e-5, n=100, l2=1e-2, method="classic"), "epsilon"),
    (lambda f, X, y: per_example_fil(f, X, y, granularity="attribute", columns=[9]), "columns"),
])
def test_invalid_input_gives_one_line_errors(call, field):
    X, y = _data()
    fit = fit_glm(X, y, model="linear", l2=1e-3)
    with pytest.raises(ValueError) as err:
        call(fit, X, y)
    msg = str(err.value)
    assert msg.startswith(field + ":") and "\n" not in msg
    if field in ("sigma", "l2", "eta_target", "iterations"):
        assert "allowed" in msg


def test_least_squares_has_no_dp_sensitivity_message():
    with pytest.raises(ValueError, match="no finite L2 sensitivity"):
        sensitivity_l2(n=10, l2=1.0, model="linear")


def test_rank2_top_eigenvalue_matches_dense_solver_in_hard_cases():
    """The inertia-count bisection behind per_example_fil: random rows, rows whose top
    eigenvalue falls below the diagonal's maximum, q = 0 (rank one) and c = 0."""
    from core.bounds.fil_regression import _top_eig_rank2

    rng = np.random.default_rng(11)
    m, d = 400, 7
    alpha2 = np.sort(rng.uniform(0.1, 2.0, d))
    at = rng.normal(size=(m, d)) * rng.choice([1.0, 1e-4], size=(m, 1))
    bt = np.broadcast_to(rng.normal(size=d), (m, d)).copy()
    p = 1 + rng.uniform(0, 3, m)
    q = rng.normal(size=m) * 2
    c = rng.uniform(0, 1, m)
    q[:20] = 0.0
    c[20:40] = 0.0
    at[40:60, -1] = 0.0  # no component on the top diagonal direction
    top, ok = _top_eig_rank2(c, alpha2, at, bt, p, q)
    M = (c[:, None, None] * np.diag(alpha2)[None]
         + p[:, None, None] * at[:, :, None] * at[:, None, :]
         + q[:, None, None] * (at[:, :, None] * bt[:, None, :] + bt[:, :, None] * at[:, None, :]))
    ref = np.linalg.eigvalsh(M)[:, -1]
    assert ok.all()
    np.testing.assert_allclose(top, ref, rtol=1e-10, atol=1e-14)
    assert np.any(ref < c * alpha2.max() - 1e-6)  # the case a plain secular root misses
