"""Fisher information loss (FIL) of output-perturbed linear and logistic regression (issue #11).

Hannun, Guo & van der Maaten, "Measuring Data Leakage in Machine-Learning Models with Fisher
Information" (UAI 2021); spec ``shared/spec/seed-002-fil-and-003-tappfl.md`` Part A.

The release is w' = w* + b, b ~ N(0, σ²I), where w* minimises (Eq. 13, no intercept)

    Σ_i ω_i ℓ(wᵀx_i, y_i) + (nλ/2)‖w‖²          (ω ≡ 1 unless IRFIL reweights; λ = ``l2``)

Its Fisher information about the data is ℐ = J_fᵀJ_f/σ² (Eq. 16), so η = ‖J_f‖₂/σ (Eq. 17).
The per-example Jacobian of w* w.r.t. (x_i, y_i) follows from the implicit function theorem
(Eq. 18, corrected weighted form of Eq. 29, spec A8):

    H_ω = Σ_j ω_j ℓ''_j x_j x_jᵀ + nλI,   A = H_ω⁻¹,   a_i = A x_i,   b = A w*
    J_{i,x} = −ω_i (ℓ''_i a_i w*ᵀ + ℓ'_i A)        (d×d)       (A7.3)
    J_{i,y} = +ω_i a_i                               (d×1)

with ℓ' = ∂ℓ/∂a, ℓ'' = ∂²ℓ/∂a² at a = w*ᵀx_i (linear: a − y and 1; logistic: s − y and s(1−s)).
Its Gram matrix (A7.3) is J_iJ_iᵀ = ω_i²[(ℓ''²‖w*‖² + 1) a aᵀ + ℓ''ℓ'(a bᵀ + b aᵀ) + ℓ'² A²].

**How the per-example spectral norm is computed without a per-example d×d eigenproblem.** In
the eigenbasis of A = U diag(α) Uᵀ, J_iJ_iᵀ = ω²[ℓ'² diag(α²) + W C Wᵀ] with W = [ã, b̃]
(ã = α ⊙ Uᵀx_i, b̃ = α ⊙ Uᵀw*) and C = [[p, q], [q, 0]], p = ℓ''²‖w*‖² + 1, q = ℓ''ℓ': a
diagonal matrix plus a rank-2 update. Its top eigenvalue is found by bisection on the number
of eigenvalues above λ, which Haynsworth's inertia additivity reduces to the inertia of a 2×2
matrix (the secular equation of a rank-2 update): O(d) per example and step, vectorised over
examples, memory O(chunk·d). ``method="eigh"`` forces a batched ``numpy.linalg.eigvalsh`` of
the d×d Gram matrices instead (tests and the benchmark compare the two; they agree to 1e-13).

Granularities (A7.4): ``example`` (all d+1 coordinates), ``attribute`` (a set S of columns: a
feature, a one-hot group, optionally the label, index d), ``label`` (‖ω_i a_i‖/σ), ``group``
(η_G = √λ_max(Σ_{i∈G} J_iJ_iᵀ)/σ, a d×d eigenproblem per group, :func:`group_fil`) and the
whole data set (:func:`dataset_fil`). Everything is computed at σ = 1 and divided by σ.

IRFIL (Algorithm 1, :func:`irfil`): reweight ω_i ← n(ω_i/η_i)/Σ_j(ω_j/η_j) so that every
example ends with the same η.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from core.bounds.fil import (
    check_eta,
    check_sigma,
    compose_eta,
    compose_etas,
    crb_variance_bound,
    epsilon_from_sigma,
    eta_for_sigma,
    local_rdp,
    sensitivity_l2,
    sigma_for_eta,
    sigma_from_dp,
)
from core.foundation.checks import check_array, check_int, check_range

__all__ = [
    "L2_MAX",
    "FittedGLM",
    "IRFILStep",
    "IRFILTrace",
    "check_eta",
    "check_l2",
    "check_sigma",
    "compose_eta",
    "compose_etas",
    "crb_variance_bound",
    "dataset_fil",
    "epsilon_from_sigma",
    "eta_for_sigma",
    "fil_jacobians",
    "fit_glm",
    "group_fil",
    "irfil",
    "local_rdp",
    "per_example_fil",
    "release",
    "sensitivity_l2",
    "sigma_for_eta",
    "sigma_from_dp",
]

Model = Literal["linear", "logistic"]
Granularity = Literal["example", "attribute", "label"]
WeightMethod = Literal["sample", "class", "hybrid"]

L2_MAX = 1e6  # a larger L2 weight flattens every model to w* ≈ 0; the UI's log slider ends at 10
DEFAULT_CHUNK = 8192  # rows per chunk: O(chunk·d) floats in the fast path, O(chunk·d²) in eigh
_NEWTON_MAX_ITER = 100
_BISECT_STEPS = 60  # halvings of the bracket: 2⁻⁶⁰ ≈ 1e-18 of its width, round-off level


# ---------------------------------------------------------------------------------------------
# validation


def check_l2(l2: float, model: str) -> float:
    """The L2 weight λ: finite, 0 ≤ λ ≤ 1e6 for least squares, 0 < λ ≤ 1e6 for logistic
    regression (whose minimiser need not exist without it on separable data)."""
    return check_range("l2", l2, 0, L2_MAX, lo_open=model == "logistic",
                       note=f"{model} regression")


def _check_model(model: str) -> str:
    if model not in ("linear", "logistic"):
        raise ValueError(f"model: got {model!r}; allowed: 'linear' or 'logistic'")
    return model


def _check_xy(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"X: got shape {X.shape}; expected a non-empty (n, d) matrix")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"y: got {y.shape[0]} values for {X.shape[0]} rows of X")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise ValueError("X, y: got NaN or infinite values; allowed: finite numbers")
    return X, y


def _check_weights(weights: np.ndarray | None, n: int) -> np.ndarray | None:
    if weights is None:
        return None
    w = np.asarray(weights, dtype=np.float64).reshape(-1)
    if w.shape[0] != n:
        raise ValueError(f"weights: got {w.shape[0]} values; expected {n} (one per example)")
    return check_array("weights", w, 0, math.inf, hi_open=True)


def _logistic_labels(y: np.ndarray) -> tuple[np.ndarray, tuple[float, float]]:
    """Logistic labels in {0, 1} (Eq. 23); {−1, +1} is mapped by (y + 1)/2 (the label Jacobian
    is then w.r.t. the {0, 1} coding)."""
    vals = set(np.unique(y).tolist())
    if vals <= {0.0, 1.0}:
        return y, (0.0, 1.0)
    if vals <= {-1.0, 1.0}:
        return (y + 1.0) / 2.0, (-1.0, 1.0)
    raise ValueError(f"y: logistic regression needs labels in {{0, 1}} or {{-1, 1}}; got "
                     f"{sorted(vals)[:5]}")


# ---------------------------------------------------------------------------------------------
# the model


def _sigmoid(a: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * a))  # overflow-free logistic function


def _derivs(model: str, margin: np.ndarray, y01: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ℓ' = ∂ℓ/∂a and ℓ'' = ∂²ℓ/∂a² at a = wᵀx (Eqs. 21, 24, 25); ∂²ℓ/∂a∂y = −1 for both."""
    if model == "linear":
        return margin - y01, np.ones_like(margin)
    s = _sigmoid(margin)
    return s - y01, s * (1.0 - s)


@dataclass(frozen=True, eq=False)  # holds arrays: compare fits by their fields
class FittedGLM:
    """An L2-regularised GLM trained to optimality (Eq. 13), with what the Jacobians need.

    ``hessian`` is H_ω = Σ ω_j ℓ''_j x_j x_jᵀ + nλI at w* and ``hessian_inv`` its inverse A;
    ``n`` is the training size (the regulariser is nλ/2‖w‖², whatever the weights sum to);
    ``label_values`` is the label coding the caller used ((0, 1), (−1, 1) or ``None`` for a
    continuous least-squares target)."""

    model: str
    theta: np.ndarray
    l2: float
    n: int
    weights: np.ndarray | None
    hessian: np.ndarray
    hessian_inv: np.ndarray
    grad_norm: float
    iterations: int
    label_values: tuple[float, float] | None
    _eig: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def d(self) -> int:
        return int(self.theta.shape[0])

    def eig(self) -> tuple[np.ndarray, np.ndarray]:
        """(α, U) with A = H_ω⁻¹ = U diag(α) Uᵀ (cached; from H's eigenpairs for accuracy)."""
        if "eig" not in self._eig:
            h, U = np.linalg.eigh(self.hessian)
            self._eig["eig"] = (1.0 / h, U)
        return self._eig["eig"]

    def encode(self, y: np.ndarray) -> np.ndarray:
        """Labels in the coding the loss uses ({0, 1} for logistic regression)."""
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if self.model == "logistic" and self.label_values == (-1.0, 1.0):
            return (y + 1.0) / 2.0
        return y

    def margins(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(X, dtype=np.float64) @ self.theta

    def loss(self, X: np.ndarray, y: np.ndarray, theta: np.ndarray | None = None) -> np.ndarray:
        """Per-example loss ℓ(wᵀx_i, y_i) (Eqs. 20, 23), unweighted (Fig. 4's x-axis)."""
        a = np.asarray(X, dtype=np.float64) @ (self.theta if theta is None else theta)
        y01 = self.encode(y)
        if self.model == "linear":
            return 0.5 * (a - y01) ** 2
        return np.logaddexp(0.0, a) - y01 * a  # −y log s − (1−y) log(1−s)

    def grad_norm_per_example(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """‖∇_w ℓ_i‖₂ = |ℓ'_i|·‖x_i‖ (Eqs. 21, 24; Fig. 4's second x-axis)."""
        X = np.asarray(X, dtype=np.float64)
        d1, _ = _derivs(self.model, X @ self.theta, self.encode(y))
        return np.abs(d1) * np.linalg.norm(X, axis=1)

    def predict(self, X: np.ndarray, theta: np.ndarray | None = None) -> np.ndarray:
        """Predicted label in the caller's coding (sign for least squares on ±1 targets,
        threshold 0 on the margin for logistic regression); the raw margin for a continuous
        least-squares target."""
        a = np.asarray(X, dtype=np.float64) @ (self.theta if theta is None else theta)
        if self.label_values is None:
            return a
        lo, hi = self.label_values
        return np.where(a > (0.0 if self.model == "logistic" or lo == -1.0 else 0.5), hi, lo)

    def accuracy(self, X: np.ndarray, y: np.ndarray, theta: np.ndarray | None = None) -> float:
        """Classification accuracy (fraction) of w* (or of a release ``theta``)."""
        if self.label_values is None:
            raise ValueError("accuracy: the target is continuous; use mse()")
        return float(np.mean(self.predict(X, theta) == np.asarray(y, dtype=np.float64)))

    def mse(self, X: np.ndarray, y: np.ndarray, theta: np.ndarray | None = None) -> float:
        a = np.asarray(X, dtype=np.float64) @ (self.theta if theta is None else theta)
        return float(np.mean((a - np.asarray(y, dtype=np.float64)) ** 2))


def _hessian(X: np.ndarray, d2w: np.ndarray, n: int, l2: float) -> np.ndarray:
    H = (X * d2w[:, None]).T @ X
    H[np.diag_indices_from(H)] += n * l2
    return 0.5 * (H + H.T)


def _label_values(model: str, y: np.ndarray) -> tuple[float, float] | None:
    vals = set(np.unique(y).tolist())
    if model == "logistic":
        return (0.0, 1.0) if vals <= {0.0, 1.0} else (-1.0, 1.0)
    if vals <= {-1.0, 1.0}:
        return (-1.0, 1.0)
    if vals <= {0.0, 1.0}:
        return (0.0, 1.0)
    return None


def fit_glm(X: np.ndarray, y: np.ndarray, *, model: Model, l2: float,
            weights: np.ndarray | None = None, tol: float = 1e-10,
            theta0: np.ndarray | None = None) -> FittedGLM:
    """Minimise Σ ω_i ℓ(wᵀx_i, y_i) + (nλ/2)‖w‖² (Eq. 13; weighted as IRFIL's line 3).

    Least squares: the exact normal equations (XᵀWX + nλI)w = XᵀWy. Logistic regression:
    damped Newton from ``theta0`` (0) until ‖∇‖ ≤ tol·max(1, n) — the minimiser "to
    optimality" the implicit-function Jacobian assumes (the authors used L-BFGS; Newton is exact
    to round-off in a handful of d×d solves for the small d of this paper)."""
    _check_model(model)
    X, y = _check_xy(X, y)
    lam = check_l2(l2, model)
    n, d = X.shape
    w = _check_weights(weights, n)
    om = np.ones(n) if w is None else w
    labels = _label_values(model, y)
    y01 = _logistic_labels(y)[0] if model == "logistic" else y
    nl = n * lam
    if model == "linear":
        H = _hessian(X, om, n, lam)
        try:
            L = np.linalg.cholesky(H)
        except np.linalg.LinAlgError:
            raise ValueError("l2: XᵀX is singular, so least squares has no unique minimiser at "
                             f"l2={lam:g}; allowed: l2 > 0 for this data") from None
        theta = np.linalg.solve(L.T, np.linalg.solve(L, X.T @ (om * y01)))
        g = X.T @ (om * (X @ theta - y01)) + nl * theta
        iters = 1
    else:
        theta = np.zeros(d) if theta0 is None else np.asarray(theta0, dtype=np.float64).copy()

        def objective(t: np.ndarray) -> float:
            a = X @ t
            return float(om @ (np.logaddexp(0.0, a) - y01 * a) + 0.5 * nl * t @ t)

        f = objective(theta)
        iters = 0
        for iters in range(1, _NEWTON_MAX_ITER + 1):
            d1, d2 = _derivs(model, X @ theta, y01)
            g = X.T @ (om * d1) + nl * theta
            if np.linalg.norm(g) <= tol * max(1.0, n):
                break
            H = _hessian(X, om * d2, n, lam)
            step = np.linalg.solve(H, g)
            t = 1.0
            while t > 1e-12:  # Armijo backtracking keeps the damped Newton step a descent step
                cand = theta - t * step
                fc = objective(cand)
                if fc <= f - 1e-4 * t * (g @ step):
                    break
                t *= 0.5
            else:  # no decrease possible in floating point: we are at the minimiser
                break
            theta, f = cand, fc
        d1, d2 = _derivs(model, X @ theta, y01)
        g = X.T @ (om * d1) + nl * theta
        H = _hessian(X, om * d2, n, lam)
    try:
        Hinv = np.linalg.inv(H)
    except np.linalg.LinAlgError:
        raise ValueError(f"l2: the Hessian is singular at l2={lam:g}; allowed: a larger l2"
                         ) from None
    return FittedGLM(model=model, theta=theta, l2=lam, n=n, weights=w, hessian=H,
                     hessian_inv=0.5 * (Hinv + Hinv.T), grad_norm=float(np.linalg.norm(g)),
                     iterations=iters, label_values=labels)


def release(fit: FittedGLM, *, sigma: float, trials: int = 1,
            rng: np.random.Generator | int | None = None) -> np.ndarray:
    """Gaussian output perturbation w' = w* + b, b ~ N(0, σ²I) (the mechanism 𝒜 of A7);
    ``trials`` independent draws, shape (trials, d)."""
    s = check_sigma(sigma)
    check_int("trials", trials, 1)
    g = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    return fit.theta[None, :] + s * g.standard_normal((int(trials), fit.d))


# ---------------------------------------------------------------------------------------------
# Jacobians and per-example FIL


def _columns(columns: Sequence[int] | np.ndarray | None, d: int) -> np.ndarray:
    """Coordinate indices of (x, y): 0..d−1 the features, d the label."""
    if columns is None:
        return np.arange(d + 1)
    c = np.unique(np.asarray(columns, dtype=np.int64).reshape(-1))
    if c.size == 0 or c.min() < 0 or c.max() > d:
        raise ValueError(f"columns: got {list(np.asarray(columns).reshape(-1))[:8]}; allowed: "
                         f"indices 0..{d} (0..{d - 1} features, {d} the label), at least one")
    return c


def _row_terms(fit: FittedGLM, X: np.ndarray, y: np.ndarray, rows: slice
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x rows, ℓ', ℓ'', ω) for a chunk of rows."""
    Xc = X[rows]
    d1, d2 = _derivs(fit.model, Xc @ fit.theta, fit.encode(y[rows]))
    om = np.ones(Xc.shape[0]) if fit.weights is None else fit.weights[rows]
    return Xc, d1, d2, om


def _check_rows(fit: FittedGLM, X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    X, y = _check_xy(X, y)
    if X.shape[1] != fit.d:
        raise ValueError(f"X: got {X.shape[1]} columns; the model has d={fit.d}")
    if fit.weights is not None and X.shape[0] != fit.n:
        raise ValueError("X: a weighted (IRFIL) model's Jacobians need its own training rows, "
                         f"in order ({fit.n} rows); got {X.shape[0]}")
    return X, y


def _chunk(chunk_size: int) -> int:
    return check_int("chunk_size", chunk_size, 1)


def fil_jacobians(fit: FittedGLM, X: np.ndarray, y: np.ndarray, *,
                  columns: Sequence[int] | None = None) -> np.ndarray:
    """The per-example Jacobians J_i[:, S] of w* w.r.t. coordinates S of (x_i, y_i), shape
    (n, d, |S|), from the closed form (Eq. 18 / A7.3, weighted Eq. 29 corrected). Builds the
    whole tensor: for small problems and tests; use :func:`per_example_fil` for norms."""
    X, y = _check_rows(fit, X, y)
    cols = _columns(columns, fit.d)
    A = fit.hessian_inv
    Xc, d1, d2, om = _row_terms(fit, X, y, slice(None))
    a = Xc @ A  # rows a_i = A x_i (A symmetric)
    full = np.empty((Xc.shape[0], fit.d, fit.d + 1))
    full[:, :, : fit.d] = -(d2[:, None, None] * a[:, :, None] * fit.theta[None, None, :]
                            + d1[:, None, None] * A[None, :, :])
    full[:, :, fit.d] = a
    return full[:, :, cols] * om[:, None, None]


def _top_eig_rank2(c: np.ndarray, alpha2: np.ndarray, at: np.ndarray, bt: np.ndarray,
                   p: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """λ_max of M = c·diag(α²) + W C Wᵀ (W = [ã, b̃], C = [[p, q], [q, 0]]) for a batch of rows.

    Bisection on the count of eigenvalues of M above λ, #neg(λI − M), which Haynsworth's inertia
    additivity gives from a 2×2 matrix: with R = λI − c·diag(α²) (diagonal, its inertia
    known) and G = WᵀR⁻¹W, #neg(λI − M) = #neg(R) + #neg(C⁻¹ − G) − #neg(C⁻¹), and
    #neg(C⁻¹) = 1 when q ≠ 0 (det C = −q² < 0); the 2×2 is scaled by q² (a congruence) so no
    1/q appears. For q = 0 the update is rank one: #neg(R) + [1/p − G₁₁ < 0]. The bracket is
    [c·α²₍₂₎, c·α²₍₁₎ + ‖WCWᵀ‖] (interlacing: one negative rank-1 term lowers λ_max at most to
    the second diagonal value). O(d) per row and step; exact to the bracket's round-off.
    Returns (λ_max, ok); ok is False only where the count was undefined (λ on a pole)."""
    srt = np.sort(alpha2)[::-1]
    a1, a2 = srt[0], (srt[1] if srt.size > 1 else 0.0)
    na, nb = np.linalg.norm(at, axis=1), np.linalg.norm(bt, axis=1)
    lo = c * a2
    hi = c * a1 + np.abs(p) * na**2 + 2 * np.abs(q) * na * nb
    hi = hi + 1e-12 * np.maximum(hi, 1e-300)
    ab, a_sq, b_sq = at * bt, at * at, bt * bt
    q2 = q * q
    rank1 = q == 0
    ok = np.ones(c.shape, dtype=bool)
    ca = c[:, None] * alpha2[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(_BISECT_STEPS):
            mid = 0.5 * (lo + hi)
            diff = mid[:, None] - ca
            r = 1.0 / diff
            g11 = np.einsum("ij,ij->i", a_sq, r)
            g12 = np.einsum("ij,ij->i", ab, r)
            g22 = np.einsum("ij,ij->i", b_sq, r)
            neg_r = np.count_nonzero(diff < 0, axis=1)
            s11, s12, s22 = -q2 * g11, q - q2 * g12, -p - q2 * g22
            det = s11 * s22 - s12 * s12
            neg_s = np.where(det < 0, 1, np.where(s11 + s22 < 0, 2, 0))
            count = np.where(rank1, neg_r + (1.0 / p - g11 < 0), neg_r + neg_s - 1)
            bad = ~np.isfinite(det) | ~np.isfinite(g11)
            ok &= ~bad
            above = count == 0  # no eigenvalue of M above mid
            hi = np.where(above, mid, hi)
            lo = np.where(above, lo, mid)
    return 0.5 * (lo + hi), ok


def _example_sq_norms(fit: FittedGLM, X: np.ndarray, y: np.ndarray, chunk: int,
                      method: str) -> np.ndarray:
    """‖J_i‖₂² for every row (all d+1 coordinates), chunked."""
    alpha, U = fit.eig()
    alpha2 = alpha**2
    A = fit.hessian_inv
    th = fit.theta
    b = A @ th
    bt_row = alpha * (U.T @ th)
    out = np.empty(X.shape[0])
    for s in range(0, X.shape[0], chunk):
        rows = slice(s, min(s + chunk, X.shape[0]))
        Xc, d1, d2, om = _row_terms(fit, X, y, rows)
        p = d2**2 * (th @ th) + 1.0
        q = d2 * d1
        c = d1**2
        if method == "fast":
            at = (Xc @ U) * alpha[None, :]
            bt = np.broadcast_to(bt_row, at.shape)
            top, ok = _top_eig_rank2(c, alpha2, at, bt, p, q)
            bad = np.flatnonzero(~ok)  # λ landed on a pole: vanishingly rare, solved densely
        else:
            top = np.empty(Xc.shape[0])
            bad = np.arange(Xc.shape[0])
        if bad.size:
            a = Xc[bad] @ A
            G = ((p[bad, None, None] * a[:, :, None] * a[:, None, :])
                 + q[bad, None, None] * (a[:, :, None] * b[None, None, :]
                                         + b[None, :, None] * a[:, None, :])
                 + c[bad, None, None] * (A @ A)[None])
            top[bad] = np.linalg.eigvalsh(G)[:, -1]
        out[rows] = np.maximum(top, 0.0) * om**2
    return out


def per_example_fil(fit: FittedGLM, X: np.ndarray, y: np.ndarray, *, sigma: float = 1.0,
                    granularity: Granularity = "example",
                    columns: Sequence[int] | None = None, chunk_size: int = DEFAULT_CHUNK,
                    method: Literal["fast", "eigh"] = "fast") -> np.ndarray:
    """η_i = ‖J_i[:, S]‖₂/σ for every row (Eq. 17 restricted to example i, A7.4).

    ``granularity``: ``example`` (S = all d+1 coordinates of (x_i, y_i)), ``attribute``
    (S = ``columns``: feature indices 0..d−1 and/or d for the label; a one-hot group is several
    columns), ``label`` (S = {d}: ‖ω_i H⁻¹x_i‖/σ). Vectorised over rows in chunks of
    ``chunk_size``: memory O(chunk·d·|S|), never the (n, d, d+1) tensor."""
    s = check_sigma(sigma)
    X, y = _check_rows(fit, X, y)
    chunk = _chunk(chunk_size)
    d = fit.d
    if granularity == "example":
        if columns is not None:
            raise ValueError("columns: only for granularity='attribute'")
        if method not in ("fast", "eigh"):
            raise ValueError(f"method: got {method!r}; allowed: 'fast' or 'eigh'")
        return np.sqrt(_example_sq_norms(fit, X, y, chunk, method)) / s
    if granularity == "label":
        cols = np.array([d])
    elif granularity == "attribute":
        if columns is None:
            raise ValueError("columns: granularity='attribute' needs the column indices (0..d−1 "
                             f"features, {d} the label)")
        cols = _columns(columns, d)
        if cols.size == d + 1:
            return per_example_fil(fit, X, y, sigma=s, chunk_size=chunk, method=method)
    else:
        raise ValueError(f"granularity: got {granularity!r}; allowed: 'example', 'attribute', "
                         "'label' (groups and the data set: group_fil, dataset_fil)")
    A = fit.hessian_inv
    feat = cols[cols < d]
    has_label = bool(np.any(cols == d))
    A_S, th_S = A[:, feat], fit.theta[feat]
    out = np.empty(X.shape[0])
    for start in range(0, X.shape[0], chunk):
        rows = slice(start, min(start + chunk, X.shape[0]))
        Xc, d1, d2, om = _row_terms(fit, X, y, rows)
        a = Xc @ A
        parts = []
        if feat.size:  # J_i[:, k] = −(ℓ'' θ_k a_i + ℓ' A[:, k])
            parts.append(-(d2[:, None, None] * a[:, :, None] * th_S[None, None, :]
                           + d1[:, None, None] * A_S[None, :, :]))
        if has_label:
            parts.append(a[:, :, None])
        J = np.concatenate(parts, axis=2) if len(parts) > 1 else parts[0]
        if J.shape[2] == 1:
            sq = np.einsum("ijk,ijk->i", J, J)
        elif J.shape[2] <= d:
            sq = np.linalg.eigvalsh(np.einsum("ijk,ijl->ikl", J, J))[:, -1]
        else:
            sq = np.linalg.eigvalsh(np.einsum("ijk,ilk->ijl", J, J))[:, -1]
        out[rows] = np.sqrt(np.maximum(sq, 0.0)) * om
    return out / s


def _group_gram(fit: FittedGLM, X: np.ndarray, y: np.ndarray, mask: np.ndarray,
                cols: np.ndarray) -> np.ndarray:
    """Σ_{i∈G} J_i[:, S] J_i[:, S]ᵀ in closed form (A7.4), O(|G| d²): with a_i = A x_i,
    b_S = A_S θ_S, the sum is A Xᵀdiag(s)X A + (A Xᵀt) b_Sᵀ + b_S (A Xᵀt)ᵀ + (Σ u) A_S A_Sᵀ,
    s = ω²(ℓ''²‖θ_S‖² + [label∈S]), t = ω²ℓ''ℓ', u = ω²ℓ'²."""
    d = fit.d
    A = fit.hessian_inv
    feat = cols[cols < d]
    lab = float(np.any(cols == d))
    Xg = X[mask]
    d1, d2 = _derivs(fit.model, Xg @ fit.theta, fit.encode(y[mask]))
    om2 = (np.ones(Xg.shape[0]) if fit.weights is None else fit.weights[mask]) ** 2
    th_S = fit.theta[feat]
    s = om2 * (d2**2 * (th_S @ th_S) + lab)
    t = om2 * d2 * d1
    u = float(np.sum(om2 * d1**2))
    aX = Xg @ A  # rows a_i
    G = (aX * s[:, None]).T @ aX
    if feat.size:
        bS = A[:, feat] @ th_S
        at = aX.T @ t
        G += np.outer(at, bS) + np.outer(bS, at) + u * A[:, feat] @ A[:, feat].T
    return 0.5 * (G + G.T)


def group_fil(fit: FittedGLM, X: np.ndarray, y: np.ndarray, *, groups: np.ndarray,
              sigma: float = 1.0, columns: Sequence[int] | None = None) -> dict:
    """η_G = √λ_max(Σ_{i∈G} J_i[:,S] J_i[:,S]ᵀ)/σ for every group id in ``groups`` (one per row:
    a class, a value of a sensitive attribute), A7.4. The identity ‖[J_i]_{i∈G}‖₂² =
    λ_max(Σ J_iJ_iᵀ) makes this a d×d eigenproblem. max_i η_i ≤ η_G ≤ (Σ η_i²)^{1/2}.
    Returns {group id: η_G}."""
    sg = check_sigma(sigma)
    X, y = _check_rows(fit, X, y)
    cols = _columns(columns, fit.d)
    g = np.asarray(groups).reshape(-1)
    if g.shape[0] != X.shape[0]:
        raise ValueError(f"groups: got {g.shape[0]} ids for {X.shape[0]} rows")
    out = {}
    for gid in np.unique(g):
        G = _group_gram(fit, X, y, g == gid, cols)
        out[gid.item() if hasattr(gid, "item") else gid] = float(
            np.sqrt(max(np.linalg.eigvalsh(G)[-1], 0.0)) / sg)
    return out


def dataset_fil(fit: FittedGLM, X: np.ndarray, y: np.ndarray, *, sigma: float = 1.0,
                columns: Sequence[int] | None = None) -> float:
    """FIL of the whole data set (or of attribute S over all examples): ‖J_f‖₂/σ (Eq. 17)."""
    return group_fil(fit, X, y, groups=np.zeros(np.asarray(X).shape[0], dtype=np.int64),
                     sigma=sigma, columns=columns)[0]


# ---------------------------------------------------------------------------------------------
# IRFIL (Algorithm 1)


@dataclass(frozen=True)
class IRFILStep:
    """One IRFIL iterate t: the weights ω^t, the fit with them, its per-example η (at the
    given σ), mean/std of η and the accuracy (or MSE) of the unperturbed w*."""

    iteration: int
    weights: np.ndarray
    eta: np.ndarray
    eta_mean: float
    eta_std: float
    accuracy: float
    fit: FittedGLM


@dataclass(frozen=True)
class IRFILTrace:
    steps: list[IRFILStep]
    method: str
    sigma: float

    @property
    def final(self) -> IRFILStep:
        return self.steps[-1]

    def series(self, name: str) -> np.ndarray:
        """``eta_mean``, ``eta_std`` or ``accuracy`` per iteration (Fig. 5, Fig. 7a/c)."""
        return np.array([getattr(s, name) for s in self.steps], dtype=np.float64)


def _renormalise(w: np.ndarray, n: int, lo: float, hi: float) -> np.ndarray:
    """Scale to sum n, then clip to [lo, hi] and rescale the unclipped part until both hold
    (the clamp of the authors' code, applied so that the sum stays n; needs lo ≤ 1 ≤ hi)."""
    w = w * (n / w.sum())
    for _ in range(100):
        c = np.clip(w, lo, hi)
        free = (c > lo) & (c < hi)
        gap = n - c.sum()
        if abs(gap) <= 1e-10 * n or not free.any():
            return c
        w = c.copy()
        w[free] *= 1 + gap / c[free].sum()
    return np.clip(w, lo, hi)


def irfil(X: np.ndarray, y: np.ndarray, *, model: Model, l2: float, iterations: int,
          sigma: float = 1.0, method: WeightMethod = "sample",
          clamp: tuple[float, float] = (0.0, math.inf), columns: Sequence[int] | None = None,
          X_test: np.ndarray | None = None, y_test: np.ndarray | None = None,
          progress: Callable[[float, str], None] | None = None) -> IRFILTrace:
    """Iteratively reweighted FIL (Algorithm 1) with the corrected weighted Jacobian (Eq. 29:
    J_i = −ω_i H_ω⁻¹∇_{x,y}∇_wℓ_i, H_ω = Σ ω_j ∇²ℓ_j + nλI).

    Step t fits with ω^{t−1}, measures η_i (per example, or over ``columns`` as the attack
    experiments do), and updates ω_i^t ∝ ω_i^{t−1}/η_i, normalised to sum n. ``method``:
    ``sample`` (that update), ``class`` (each weight replaced by its class mean), ``hybrid``
    (the per-sample update times the class mean of 1/η: class-level and sample-level
    equalisation together). ``clamp`` = (min, max) weight, applied keeping Σω = n.
    The trace has iterations + 1 entries: entry 0 is the unweighted model. The noise b of
    line 4 does not change η, so it is not drawn here (:func:`release` draws it)."""
    _check_model(model)
    X, y = _check_xy(X, y)
    check_l2(l2, model)
    s = check_sigma(sigma)
    if not isinstance(iterations, (int, np.integer)) or isinstance(iterations, bool) \
            or not 0 <= iterations <= 1000:
        raise ValueError(f"iterations: got {iterations!r}; allowed: an integer 0..1000")
    if method not in ("sample", "class", "hybrid"):
        raise ValueError(f"method: got {method!r}; allowed: 'sample', 'class' or 'hybrid'")
    lo, hi = float(clamp[0]), float(clamp[1])
    if not (0 <= lo <= 1 <= hi):
        raise ValueError(f"clamp: got {tuple(clamp)!r}; allowed: 0 <= min <= 1 <= max "
                         "(weights average 1)")
    n = X.shape[0]
    classes = None
    if method != "sample":
        if _label_values(model, y) is None:
            raise ValueError(f"method: {method!r} needs class labels; the target is continuous")
        classes = np.unique(y, return_inverse=True)[1]
    Xe, ye = (X, y) if X_test is None else _check_xy(X_test, y_test)
    gran = "example" if columns is None else "attribute"

    def measure(w: np.ndarray | None, it: int, theta0: np.ndarray | None) -> IRFILStep:
        fit = fit_glm(X, y, model=model, l2=l2, weights=w, theta0=theta0)
        eta = per_example_fil(fit, X, y, sigma=s, granularity=gran, columns=columns)
        score = fit.accuracy(Xe, ye) if fit.label_values is not None else fit.mse(Xe, ye)
        return IRFILStep(iteration=it, weights=np.ones(n) if w is None else w, eta=eta,
                         eta_mean=float(eta.mean()), eta_std=float(eta.std()),
                         accuracy=score, fit=fit)

    steps = [measure(None, 0, None)]
    for t in range(1, int(iterations) + 1):
        prev = steps[-1]
        eta = np.maximum(prev.eta, 1e-300)
        u = prev.weights / eta  # line 6: ω_i/η_i
        if classes is not None:
            cm = np.bincount(classes, weights=u) / np.bincount(classes)
            if method == "class":
                u = cm[classes]
            else:
                inv = 1.0 / eta
                u = u * (np.bincount(classes, weights=inv) / np.bincount(classes))[classes]
        w = _renormalise(u, n, lo, hi)
        steps.append(measure(w, t, prev.fit.theta))
        if progress is not None:
            progress(t / max(1, iterations), f"IRFIL iteration {t}/{iterations}")
    return IRFILTrace(steps=steps, method=method, sigma=s)
