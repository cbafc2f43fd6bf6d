"""Membership inference against FIL's output-perturbed GLM (issue #22 item 5): LiRA (Carlini et
al., S&P 2022) on the release w' = w* + N(0, σ²I) of :mod:`core.bounds.fil_regression`, to test the FIL paper's
claim that per-example η identifies the examples that leak.

- :func:`shadow_fits`: the same L2-regularised GLM (Eq. 13, regulariser n_k·λ/2‖w‖² with n_k the
  shadow's own training size) fitted on K subsets of a pool at once: least squares by its
  normal equations, logistic regression by damped Newton, both batched over the shadows;
- :func:`irfil_shadow_fits`: the same with IRFIL's reweighting (Algorithm 1) run on each
  shadow's own training set, for an attacker who knows the defender used IRFIL;
- :func:`signed_margin`: LiRA's statistic for a GLM, y±·wᵀx. For logistic regression it is
  exactly the logit-scaled true-class confidence ln(p/(1 − p)) that LiRA uses; for least
  squares on ±1 targets it is the same functional; either way it is Gaussian in the release
  noise (wᵀx is linear in w'), which is what LiRA's Gaussian fits assume;
- :func:`fil_lira`: online LiRA scores of one or several target releases against shadow
  releases (:func:`core.attacks.membership.lira_online`), HIGHER = MORE LIKELY MEMBER;
- :func:`per_example_separation`: each example's d' = (μ_in − μ_out)/√((σ²_in + σ²_out)/2)
  between its statistic's IN and OUT shadow distributions, the exposure LiRA expects of it
  whatever the target's noise draw;
- :func:`spearman_interval`: Spearman's ρ with a paired percentile bootstrap interval (scipy).

Every shadow is released with its own noise draw (the mechanism the attacker simulates).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from core.bounds.fil_regression import (
    _check_model,
    _check_xy,
    _derivs,
    _logistic_labels,
    check_l2,
    check_sigma,
)
from core.foundation.checks import check_range

_NEWTON_MAX_ITER = 100
_CHUNK_FLOATS = 2**25  # (chunk·n·d) floats in a batched Hessian product: 256 MB at most


def _mask(in_mask: Any, n: int) -> np.ndarray:
    m = np.asarray(in_mask)
    if m.ndim != 2 or m.shape[1] != n or m.shape[0] == 0:
        raise ValueError(f"in_mask: got shape {m.shape}; expected (K >= 1, n={n}) booleans")
    if m.dtype != bool and not np.all(np.isin(m, (0, 1))):
        raise ValueError("in_mask: got values other than 0/1; expected booleans")
    m = m.astype(bool)
    if np.any(m.sum(1) == 0):
        raise ValueError("in_mask: a shadow model has no training rows; each needs >= 1")
    return m


def _batched_hessians(X: np.ndarray, w: np.ndarray, n_reg: np.ndarray, l2: float) -> np.ndarray:
    """H_k = Σ_i w_ki x_i x_iᵀ + n_k λ I for every row k of ``w`` (K, n), chunked over K."""
    K, n = w.shape
    d = X.shape[1]
    out = np.empty((K, d, d))
    step = max(1, _CHUNK_FLOATS // max(1, n * d))
    for a in range(0, K, step):
        wk = w[a:a + step]
        out[a:a + step] = np.matmul(X.T[None, :, :] * wk[:, None, :], X)
    out[:, np.arange(d), np.arange(d)] += (n_reg * l2)[:, None]
    return 0.5 * (out + out.transpose(0, 2, 1))


def shadow_fits(X: Any, y: Any, in_mask: Any, *, model: str, l2: float,
                weights: Any = None, tol: float = 1e-10) -> np.ndarray:
    """θ_k minimising Σ_{i ∈ S_k} ω_i ℓ(θᵀx_i, y_i) + (n_k λ/2)‖θ‖² for every shadow k
    (``in_mask`` (K, n): S_k; n_k = |S_k|), the objective of :func:`core.bounds.fil_regression.fit_glm` on each
    subset, all shadows in one batched computation. ``weights`` (n,) or (K, n) per-shadow
    ω (IRFIL), default 1. Least squares: exact normal equations. Logistic: damped Newton with
    Armijo backtracking per shadow until ‖∇‖ ≤ tol·max(1, n_k). Returns (K, d)."""
    _check_model(model)
    X, y = _check_xy(X, y)
    lam = check_l2(l2, model)
    n, d = X.shape
    M = _mask(in_mask, n)
    K = M.shape[0]
    om = np.ones((K, n)) if weights is None else np.broadcast_to(
        np.asarray(weights, dtype=np.float64), (K, n)).copy()
    if not np.all(np.isfinite(om)) or np.any(om < 0):
        raise ValueError("weights: got negative or non-finite values; allowed: ω >= 0")
    W = om * M  # rows outside S_k weigh 0
    n_k = M.sum(1).astype(np.float64)
    if model == "linear":
        H = _batched_hessians(X, W, n_k, lam)
        rhs = (W * y[None, :]) @ X
        try:
            return np.linalg.solve(H, rhs[:, :, None])[:, :, 0]
        except np.linalg.LinAlgError:
            raise ValueError(f"l2: a shadow's XᵀX is singular at l2={lam:g}; allowed: l2 > 0 "
                             "for this data") from None
    y01 = _logistic_labels(y)[0]

    def objective(T: np.ndarray, rows: np.ndarray) -> np.ndarray:
        A = T @ X.T
        return (W[rows] * (np.logaddexp(0.0, A) - y01[None, :] * A)).sum(1) + 0.5 * lam * n_k[
            rows] * (T * T).sum(1)

    theta = np.zeros((K, d))
    f = objective(theta, np.arange(K))
    active = np.ones(K, dtype=bool)
    for _ in range(_NEWTON_MAX_ITER):
        d1, d2 = _derivs(model, theta @ X.T, y01[None, :])
        G = (W * d1) @ X + lam * n_k[:, None] * theta
        active &= np.linalg.norm(G, axis=1) > tol * np.maximum(1.0, n_k)
        if not active.any():
            break
        idx = np.flatnonzero(active)
        H = _batched_hessians(X, W[idx] * d2[idx], n_k[idx], lam)
        step = np.linalg.solve(H, G[idx][:, :, None])[:, :, 0]
        t = np.ones(idx.size)
        slope = (G[idx] * step).sum(1)
        todo = np.ones(idx.size, dtype=bool)
        cand = theta[idx].copy()
        fc = f[idx].copy()
        while todo.any() and t.max() > 1e-12:
            c = theta[idx] - t[:, None] * step
            fv = objective(c, idx)
            ok = todo & (fv <= f[idx] - 1e-4 * t * slope)
            cand[ok], fc[ok] = c[ok], fv[ok]
            todo &= ~ok
            t = np.where(todo, t * 0.5, t)
        # a shadow that can make no further decrease in floating point is at its minimiser
        active[idx[todo]] = False
        theta[idx], f[idx] = cand, fc
    return theta


def irfil_shadow_fits(X: Any, y: Any, in_mask: Any, *, model: str, l2: float, iterations: int,
                      method: str = "sample", clamp: tuple[float, float] = (0.0, math.inf),
                      columns: Any = None) -> np.ndarray:
    """θ_k of IRFIL's last iterate (:func:`core.bounds.fil_regression.irfil`, Algorithm 1) run on each shadow's
    own training set. A loop over shadows: each IRFIL iteration needs every training row's η
    under that shadow's fit, which :func:`core.bounds.fil_regression.per_example_fil` computes one model at a
    time. Returns (K, d)."""
    from core.bounds.fil_regression import irfil

    X, y = _check_xy(X, y)
    M = _mask(in_mask, X.shape[0])
    out = np.empty((M.shape[0], X.shape[1]))
    for k, rows in enumerate(M):
        tr = irfil(X[rows], y[rows], model=model, l2=l2, iterations=iterations, method=method,
                   clamp=clamp, columns=columns)
        out[k] = tr.final.fit.theta
    return out


def signed_margin(X: Any, y: Any, thetas: Any) -> np.ndarray:
    """y±·θᵀx for every model row of ``thetas`` ((d,) or (K, d)) and example: (n,) or (K, n).
    Labels in {0, 1} or {−1, +1} (y± = 2·y01 − 1)."""
    X, y = _check_xy(X, y)
    vals = set(np.unique(y).tolist())
    if not (vals <= {0.0, 1.0} or vals <= {-1.0, 1.0}):
        raise ValueError("y: got labels other than {0, 1} or {-1, +1}; LiRA's statistic "
                         "needs a binary label")
    ypm = np.where(y > 0, 1.0, -1.0)
    T = np.asarray(thetas, dtype=np.float64)
    if T.shape[-1] != X.shape[1] or T.ndim not in (1, 2):
        raise ValueError(f"thetas: got shape {T.shape}; expected (d={X.shape[1]},) or (K, d)")
    return (T @ X.T) * ypm


def releases(thetas: Any, *, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """Each row θ_k released with its own draw: θ_k + N(0, σ²I) (the mechanism of
    :func:`core.bounds.fil_regression.release`, one draw per model)."""
    T = np.asarray(thetas, dtype=np.float64)
    return T + check_sigma(sigma) * rng.standard_normal(T.shape)


def fil_lira(target_stat: Any, shadow_stat: Any, in_mask: Any, *,
             fix_variance: bool = False) -> np.ndarray:
    """Online LiRA scores (:func:`core.attacks.membership.lira_online`) of target statistics
    ``target_stat`` (n,) or (T, n) (one row per target release draw) against the shadow
    releases' ``shadow_stat`` (K, n) with training sets ``in_mask`` (K, n). Per-example
    variances by default (the paper's choice with many shadows; cheap for a GLM). HIGHER =
    MORE LIKELY MEMBER; shape of ``target_stat``."""
    from core.attacks.membership import lira_online

    S = np.asarray(shadow_stat, dtype=np.float64)
    if S.ndim != 2:
        raise ValueError(f"shadow_stat: got shape {S.shape}; expected (K, n)")
    M = _mask(in_mask, S.shape[1])
    if M.shape != S.shape:
        raise ValueError(f"in_mask: got shape {M.shape}; expected {S.shape} like shadow_stat")
    t = np.asarray(target_stat, dtype=np.float64)
    rows = t[None, :] if t.ndim == 1 else t
    if rows.ndim != 2 or rows.shape[1] != S.shape[1]:
        raise ValueError(f"target_stat: got shape {t.shape}; expected (n={S.shape[1]},) or "
                         "(T, n)")
    inn, out = np.where(M, S, np.nan).T, np.where(~M, S, np.nan).T
    sc = np.stack([lira_online(r, inn, out, fix_variance=fix_variance) for r in rows])
    return sc[0] if t.ndim == 1 else sc


def per_example_separation(shadow_stat: Any, in_mask: Any) -> np.ndarray:
    """d'_i = (μ_in − μ_out)/√((σ²_in + σ²_out)/2) of example i's statistic over its IN and OUT
    shadows (NaN where it has fewer than 2 of either): how far apart LiRA's two Gaussians for
    that example sit, the exposure it expects of the example over the release noise."""
    S = np.asarray(shadow_stat, dtype=np.float64)
    M = _mask(in_mask, S.shape[1])
    if M.shape != S.shape:
        raise ValueError(f"in_mask: got shape {M.shape}; expected {S.shape} like shadow_stat")
    out = np.full(S.shape[1], np.nan)
    ci, co = M.sum(0), (~M).sum(0)
    ok = (ci >= 2) & (co >= 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        mi = np.where(M, S, 0).sum(0) / ci
        mo = np.where(~M, S, 0).sum(0) / co
        vi = np.where(M, (S - mi) ** 2, 0).sum(0) / (ci - 1)
        vo = np.where(~M, (S - mo) ** 2, 0).sum(0) / (co - 1)
        dp = (mi - mo) / np.sqrt(np.maximum((vi + vo) / 2.0, 1e-300))
    out[ok] = dp[ok]
    return out


def spearman_interval(a: Any, b: Any, *, n_boot: int = 1000, confidence: float = 0.95,
                      seed: int = 0) -> tuple[float, float, float]:
    """(ρ, lo, hi): Spearman's rank correlation of the pairs (a_i, b_i) (NaN pairs dropped)
    with a paired percentile bootstrap interval (``scipy.stats.bootstrap``)."""
    from scipy.stats import bootstrap, spearmanr

    x, z = np.asarray(a, dtype=np.float64).ravel(), np.asarray(b, dtype=np.float64).ravel()
    if x.shape != z.shape:
        raise ValueError(f"b: got {z.size} values; expected {x.size} like a")
    ok = np.isfinite(x) & np.isfinite(z)
    x, z = x[ok], z[ok]
    if x.size < 3:
        raise ValueError(f"a, b: got {x.size} finite pairs; need at least 3")
    check_range("confidence", confidence, 0.0, 1.0, lo_open=True, hi_open=True)
    rho = float(spearmanr(x, z).statistic)
    res = bootstrap((x, z), lambda u, v: spearmanr(u, v).statistic, paired=True,
                    vectorized=False, n_resamples=int(n_boot), confidence_level=confidence,
                    method="percentile", rng=np.random.default_rng(seed))
    return rho, float(res.confidence_interval.low), float(res.confidence_interval.high)


#: the verdict's threshold: η "identifies the leaking examples" when the whole 95 % interval of
#: Spearman's ρ (η vs the per-example LiRA score) lies above it (a strong rank agreement)
ETA_IDENTIFIES_RHO = 0.5


def eta_verdict(rho: float, lo: float, hi: float) -> str:
    """The sentence the FIL page shows, generated from the measured ρ and its interval."""
    yes = lo > ETA_IDENTIFIES_RHO
    how = ("" if yes else " (weakly positive: the interval lies above 0)" if lo > 0 else
           " (no rank agreement distinguishable from 0)" if hi > 0 else " (negative)")
    return (f"η identifies the leaking examples: {'yes' if yes else 'no'}, ρ = {rho:.2f} "
            f"[{lo:.2f}, {hi:.2f}]{how}; 'yes' needs the 95 % interval above "
            f"{ETA_IDENTIFIES_RHO:g}.")
