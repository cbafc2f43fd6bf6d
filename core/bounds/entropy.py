"""Differential entropy h(x) of data, estimated from a sample (nats), for bounds whose proofs
assume a prior on x (Inf2Guard Theorem 3 assumes x uniform; :mod:`core.bounds.reconstruction`
replaces that with h(x)).

- :func:`gaussian_entropy`: ½ ln det(2πe Σ) of the sample covariance (plus ``ridge``·I). For
  the true covariance it is an UPPER bound on h(x) for every distribution with that covariance
  (the Gaussian maximises entropy at fixed covariance; Cover & Thomas Thm 8.6.5). Plugged into
  a bound that needs h(x) from below it makes that bound optimistic: an upper estimate of it.
- :func:`knn_entropy`: the Kozachenko–Leonenko k-nearest-neighbour estimator (Kozachenko &
  Leonenko 1987; Kraskov et al. 2004, Eq. 20) with scikit-learn's ``NearestNeighbors``:
  ĥ = ψ(n) − ψ(k) + ln V_d + (d/n) Σ_i ln ε_i, ε_i the Euclidean distance from x_i to its k-th
  neighbour, V_d the unit ball's volume. Consistent, but with no guaranteed direction in high
  dimension (data near a low-dimensional set drives it far below the Gaussian value): an
  estimate, labelled as such wherever it is used.
- :func:`dequantised`: pixel data on a grid of step Δ has h = −∞ (it is discrete); x̃ = x + u,
  u ~ U(−Δ/2, Δ/2)^d independent, has finite entropy and covariance Σ + (Δ²/12)·I; a bound
  for x̃ at η + ‖u‖_max is a bound for x at η (see :mod:`core.bounds.reconstruction`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import digamma, gammaln

from core.foundation.checks import check_int, check_positive


def _sample(X: np.ndarray, name: str = "X") -> np.ndarray:
    a = np.asarray(X, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] < 2 or a.shape[1] < 1:
        raise ValueError(f"{name}: got shape {a.shape}; expected (n >= 2, d >= 1) samples")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: got NaN or inf; expected finite samples")
    return a


def gaussian_entropy(X: np.ndarray, *, ridge: float = 0.0) -> float:
    """½ ln det(2πe (Σ̂ + ridge·I)) nats, Σ̂ the sample covariance of the rows of ``X`` (n, d).
    −inf when that matrix is singular (x on a lower-dimensional set: h = −∞)."""
    a = _sample(X)
    check_positive("ridge", ridge, zero=True)
    d = a.shape[1]
    c = np.atleast_2d(np.cov(a, rowvar=False)) + ridge * np.eye(d)
    ev = np.linalg.eigvalsh(0.5 * (c + c.T))
    # eigenvalues at round-off of the largest are zero: the covariance is singular there
    if ev.min() <= max(ev.max(), 1e-300) * d * np.finfo(np.float64).eps:
        return -math.inf
    return float(0.5 * (d * math.log(2.0 * math.pi * math.e) + np.sum(np.log(ev))))


def log_unit_ball_volume(d: int) -> float:
    """ln V_d of the Euclidean unit ball in R^d: (d/2) ln π − ln Γ(d/2 + 1)."""
    check_int("d", d, 1)
    return 0.5 * d * math.log(math.pi) - float(gammaln(0.5 * d + 1.0))


def knn_entropy(X: np.ndarray, *, k: int = 3) -> float:
    """Kozachenko–Leonenko estimate of h(x) in nats from the rows of ``X`` (n, d), Euclidean
    k-th-neighbour distances (scikit-learn ``NearestNeighbors``). A row repeated more than k
    times gives ε = 0 and −inf (a discrete sample has h = −∞: dequantise first,
    :func:`dequantised`)."""
    from sklearn.neighbors import NearestNeighbors

    a = _sample(X)
    n, d = a.shape
    check_int("k", k, 1, n - 1, note="n - 1")
    dist, _ = NearestNeighbors(n_neighbors=int(k) + 1).fit(a).kneighbors(a)
    eps = dist[:, int(k)]  # column 0 is the point itself
    if np.any(eps <= 0):
        return -math.inf
    return float(digamma(n) - digamma(int(k)) + log_unit_ball_volume(d)
                 + d * np.mean(np.log(eps)))


@dataclass(frozen=True)
class DequantisedData:
    """x̃ = x + U(−Δ/2, Δ/2)^d on the informative coordinates: ``columns`` (those that vary in
    the sample; a constant pixel is known to every attacker and can only lower its error),
    ``step`` Δ, ``h_gaussian`` (½ ln det(2πe(Σ̂ + Δ²/12 I)): the maximum-entropy value, an upper
    estimate of h(x̃)), ``h_knn`` (Kozachenko–Leonenko on a dequantised draw, an estimate),
    ``log_volume`` ln Vol of x̃'s support [−Δ/2, 1 + Δ/2]^{d_S} for x in [0, 1]^{d_S}, and
    ``u_max`` = Δ/2 (ℓ∞) and √d_S·Δ/2 (ℓ2), the most the dequantising noise moves x."""

    columns: np.ndarray
    step: float
    h_gaussian: float
    h_knn: float
    log_volume: float
    u_max: dict[str, float]

    @property
    def d(self) -> int:
        return int(self.columns.size)


def grid_step(X: np.ndarray) -> float:
    """The smallest gap between distinct values of ``X`` (the pixel grid's step Δ); 0 for a
    constant array."""
    v = np.unique(np.asarray(X, dtype=np.float64))
    return float(np.min(np.diff(v))) if v.size > 1 else 0.0


def dequantised(X: np.ndarray, *, step: float | None = None, k: int = 3, knn: bool = True,
                seed: int = 0) -> DequantisedData:
    """:class:`DequantisedData` of pixel rows ``X`` (n, d) in [0, 1]: Δ = ``step`` or the grid
    step read from the data (:func:`grid_step`), both entropies on the varying columns
    (``knn=False`` skips the k-NN estimate, O(n²·d), and leaves it NaN)."""
    a = _sample(X)
    if a.min() < 0 or a.max() > 1:
        raise ValueError("X: got values outside [0, 1]; expected pixel rows scaled to [0, 1]")
    cols = np.flatnonzero(a.std(0) > 0)
    if cols.size == 0:
        raise ValueError("X: every column is constant; no entropy to estimate")
    s = grid_step(a[:, cols]) if step is None else float(step)
    check_positive("step", s)
    xs = a[:, cols]
    rng = np.random.default_rng(seed)
    h_g = gaussian_entropy(xs, ridge=s * s / 12.0)
    h_k = knn_entropy(xs + rng.uniform(-s / 2, s / 2, xs.shape), k=k) if knn else math.nan
    return DequantisedData(columns=cols, step=s, h_gaussian=h_g, h_knn=h_k,
                           log_volume=cols.size * math.log1p(s),
                           u_max={"linf": s / 2, "l2": math.sqrt(cols.size) * s / 2})
