"""Channel-capacity bounds of Tan et al. 2024, "Defending Against Data Reconstruction Attacks in
Federated Learning: An Information Theory Approach" (arXiv 2403.01268; spec seed-001).

Pure numpy/scipy closed forms. Everything except the O(d³) factorisations (covariance
eigendecomposition, β-whitened spectrum, LDLᵀ) is instant: a κ → σ solve over d = 3,072
eigenvalues takes about a millisecond.

Conventions (spec §0):

- logs are natural, information is in **nats**;
- **σ is a variance** everywhere (noise ``N(0, σ I)``); the per-pixel noise std is ``sqrt(σ)``;
- ``eigenvalues`` are those of a covariance matrix (the paper's λ), clipped to ``>= 0``; values
  at or below ``ZERO_REL_TOL · λ_max`` are numerical noise of a zero-variance direction and are
  set to exactly 0 (a direction with no variance carries no information, whatever its noise).

Items marked DERIVED are not in the paper (spec [MINE]): the Laplace bound (§3.7), the tight DP
constant (§4.1), the exact personalized capacity via β-whitening (§3.4) and the elementwise-min
form of Thm 3.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import scipy.linalg as sla

from core.foundation.checks import check_array, check_int, check_positive, check_range, range_error

ArrayLike = float | np.ndarray

#: eigenvalues <= ZERO_REL_TOL · λ_max are treated as exactly zero (eigh round-off is ~d·eps)
ZERO_REL_TOL = 1e-10
#: eigenvalues below −NEG_REL_TOL · λ_max mean the input was not a covariance (not PSD)
NEG_REL_TOL = 1e-6
#: DERIVED (spec §3.7): Laplace(0, b) noise has entropy 1 + ln 2b per dimension, the Gaussian of
#: the same variance 2b² has ½ ln(2πe·2b²); the difference ½ ln(πe) − 1 is paid per dimension.
LAPLACE_PENALTY_PER_DIM = 0.5 * math.log(math.pi * math.e) - 1.0  # 0.0723649 nats
#: the Thm 1 prefactor with a Gaussian plug-in for h(D) is a heuristic for non-Gaussian data
THM1_CAVEAT = (
    "Thm 1 with the Gaussian plug-in h(D) (geometric mean of the eigenvalues): exact for "
    "Gaussian data, an optimistic heuristic (not a certificate) for real data, whose entropy is "
    "at most the Gaussian one"
)

NoiseMode = Literal["redraw", "fixed"]


# ---------------------------------------------------------------------------------------------
# array validation (one-line errors from core.foundation.checks naming the field and the allowed range)


def _eigs(eigenvalues: ArrayLike, name: str = "eigenvalues") -> np.ndarray:
    """1-D float64 copy, finite, clipped to >= 0, numerical zeros set to exactly 0."""
    lam = np.array(eigenvalues, dtype=np.float64, copy=True).ravel()
    if lam.size == 0:
        raise ValueError(f"{name}: got an empty array; expected d >= 1 covariance eigenvalues")
    check_array(name, lam, -math.inf, math.inf, lo_open=True, hi_open=True)
    top = float(np.max(np.abs(lam)))
    if lam.min() < -NEG_REL_TOL * top:
        raise range_error(name, float(lam.min()), 0,
                          note="a covariance is PSD; round-off negatives are set to 0")
    lam[lam <= ZERO_REL_TOL * top] = 0.0
    return lam


def _square(name: str, a: np.ndarray) -> np.ndarray:
    m = np.asarray(a, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] == 0:
        raise ValueError(f"{name}: got shape {m.shape}; expected a square (d, d) matrix")
    if not np.all(np.isfinite(m)):
        raise ValueError(f"{name}: got a non-finite entry; expected a finite covariance")
    return m


def _beta(beta: ArrayLike, d: int) -> np.ndarray:
    b = np.asarray(beta, dtype=np.float64).ravel()
    if b.shape != (d,):
        raise ValueError(f"beta: got shape {np.shape(beta)}; expected ({d},), one weight per dim")
    return check_array("beta", b, 0, math.inf, lo_open=True, hi_open=True)


def _sigmas(sigma: ArrayLike, d: int, name: str = "sigma") -> np.ndarray:
    """Scalar σ > 0 broadcast to (d,), or a per-direction array of σ_i >= 0."""
    s = np.asarray(sigma, dtype=np.float64)
    if s.ndim == 0:
        return np.full(d, check_positive(name, float(s)))
    s = s.ravel()
    if s.shape != (d,):
        raise ValueError(f"{name}: got shape {np.shape(sigma)}; expected a scalar or ({d},)")
    return check_array(name, s, 0)


# ---------------------------------------------------------------------------------------------
# data spectrum


@dataclass(frozen=True, eq=False)
class Spectrum:
    """Eigendecomposition Σ_D = Q Λ Qᵀ of the covariance of the flattened data (Eq. 28).

    ``eigenvalues`` descending float64 (clipped >= 0, numerical zeros set to 0),
    ``eigenvectors`` (d, d) with column j matching eigenvalue j, ``mean`` (d,), and ``scale``: a
    note on the data scale the numbers refer to (e.g. "[0, 1]", "[-1, 1]").
    """

    eigenvalues: np.ndarray
    eigenvectors: np.ndarray
    mean: np.ndarray
    scale: str = "as given"

    @property
    def d(self) -> int:
        return int(self.eigenvalues.size)

    @property
    def trace(self) -> float:
        """tr Σ_D = Σ λ_i (total variance)."""
        return float(self.eigenvalues.sum())

    @property
    def n_zero(self) -> int:
        """Zero-variance directions (λ <= ZERO_REL_TOL·λ_max), e.g. constant border pixels."""
        return int(np.sum(self.eigenvalues <= ZERO_REL_TOL * self.eigenvalues[0]))

    @property
    def d_eff(self) -> int:
        """Directions with nonzero variance: d − n_zero."""
        return self.d - self.n_zero

    def covariance(self) -> np.ndarray:
        """Σ_D rebuilt as Q Λ Qᵀ (O(d³))."""
        q = self.eigenvectors
        return (q * self.eigenvalues) @ q.T

    def rescaled(self, factor: float, scale: str | None = None) -> Spectrum:
        """The spectrum of a·X: eigenvalues × a², mean × a (e.g. a = 2 for [0,1] → [−1,1])."""
        a = check_positive("factor", factor)
        return replace(self, eigenvalues=self.eigenvalues * a * a, mean=self.mean * a,
                       scale=scale if scale is not None else f"{self.scale} × {a:g}")


def data_spectrum(X: np.ndarray, *, ridge: float = 0.0, scale: str = "as given") -> Spectrum:
    """Spectrum of the sample covariance (ddof = 1) of the rows of ``X`` (n, d) — step 1 of
    the Natural Channel (Eq. 18). ``ridge`` >= 0 is added to every eigenvalue (Σ + ridge·I),
    e.g. the dequantisation variance Δ²/12. Divide-and-conquer eigh: a few seconds at d = 3072.
    """
    r = check_positive("ridge", ridge, zero=True)
    x = np.asarray(X)
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 1:
        raise ValueError(f"X: got shape {x.shape}; expected (n, d) with n >= 2 rows")
    mean = x.mean(axis=0, dtype=np.float64)
    xc = x.astype(np.float64) - mean
    if not np.all(np.isfinite(xc)):
        raise ValueError("X: got a non-finite value; expected finite data")
    cov = xc.T @ xc
    cov /= x.shape[0] - 1
    return spectrum_from_cov(cov, mean=mean, ridge=r, scale=scale, overwrite=True)


def spectrum_from_cov(cov: np.ndarray, *, mean: np.ndarray | None = None, ridge: float = 0.0,
                      scale: str = "as given", overwrite: bool = False) -> Spectrum:
    """Spectrum of a given covariance (d, d): LAPACK divide-and-conquer eigh (syevd), reversed
    to descending order; ``overwrite=True`` lets LAPACK destroy ``cov`` (saves a d×d copy)."""
    c = _square("cov", cov)
    r = check_positive("ridge", ridge, zero=True)
    m = np.zeros(c.shape[0]) if mean is None else np.asarray(mean, dtype=np.float64).ravel()
    if m.shape != (c.shape[0],):
        raise ValueError(f"mean: got shape {m.shape}; expected ({c.shape[0]},)")
    w, v = sla.eigh(c, driver="evd", overwrite_a=overwrite, check_finite=False)
    w, v = w[::-1], np.ascontiguousarray(v[:, ::-1])
    return Spectrum(eigenvalues=_eigs(w, "cov") + r, eigenvectors=v, mean=m, scale=scale)


def rescale_eigenvalues(eigs: ArrayLike, factor: float) -> np.ndarray:
    """Eigenvalues of the covariance of a·X: λ × a². privlab images are in [0, 1]; the spec's
    digits table and the paper's eigenvalue table assume [−1, 1], i.e. factor 2."""
    a = check_positive("factor", factor)
    return _eigs(eigs) * (a * a)


def kappa_per_dim(kappa: float, d: int) -> float:
    """κ/d, the per-dimension budget in nats/dim (spec §5.10: the paper's 300/3072 ≈ 0.098)."""
    return check_positive("kappa", kappa) / check_int("d", d, 1)


# ---------------------------------------------------------------------------------------------
# Natural Channel (Thm 2, Eqs. 15/18)


def capacity_per_direction(eigenvalues: ArrayLike, sigmas: ArrayLike) -> np.ndarray:
    """½ ln(1 + λ_i/σ_i) per eigen-direction (Eq. 15 term). A zero-variance direction carries 0;
    an informative direction with σ_i = 0 (noiseless) carries +inf."""
    lam = _eigs(eigenvalues)
    s = _sigmas(sigmas, lam.size, "sigmas")
    out = np.zeros_like(lam)
    live = lam > 0
    noiseless = live & (s == 0)
    ok = live & ~noiseless
    out[ok] = 0.5 * np.log1p(lam[ok] / s[ok])
    out[noiseless] = np.inf
    return out


def capacity(eigenvalues: ArrayLike, sigma: ArrayLike) -> float:
    """f(σ) = ½ Σ_i ln(1 + λ_i/σ) in nats (Eq. 15 / Eq. 18); ``sigma`` is a scalar variance or
    one variance per eigen-direction (then it is the white/colored-noise capacity)."""
    return float(capacity_per_direction(eigenvalues, sigma).sum())


def _bisect_log(f: Callable[[float], float], target: float, t_lo: float, t_hi: float,
                rtol: float, max_iter: int = 400) -> float:
    """Root t of a decreasing f(t) = target with f(t_lo) >= target >= f(t_hi), by bisection on
    t = ln σ until the bracket is narrower than ``rtol`` (a relative σ error)."""
    for _ in range(max_iter):
        if t_hi - t_lo <= rtol:
            break
        mid = 0.5 * (t_lo + t_hi)
        if f(mid) > target:
            t_lo = mid
        else:
            t_hi = mid
    return 0.5 * (t_lo + t_hi)


def _expand_bracket(f: Callable[[float], float], target: float, t_hi: float) -> float:
    """A t_lo < t_hi with f(t_lo) >= target for a decreasing f with f(−∞) = ∞."""
    step = 1.0
    t_lo = t_hi - step
    for _ in range(200):
        if f(t_lo) >= target:
            return t_lo
        step *= 2.0
        t_lo = t_hi - step
    raise ValueError(f"kappa: got {target!r}; no σ reaches it (bracket search failed)")


def _log_expm1(x: float) -> float:
    """ln(e^x − 1) without overflow, x > 0."""
    return x + math.log(-math.expm1(-x)) if x > 1.0 else math.log(math.expm1(x))


def solve_sigma(eigenvalues: ArrayLike, kappa: float, *, rtol: float = 1e-10) -> float:
    """The unique σ > 0 with f(σ) = κ (Thm 2 / Eq. 18), f strictly decreasing in σ.

    Bisection on ln σ (spec §3.2) between σ_hi = tr Σ/(2κ) (f <= tr/(2σ) = κ there) and
    σ_lo = max(λ_min⁺·e^{−2κ/d⁺}, λ_max/(e^{2κ} − 1)) (f >= κ there); f is evaluated with
    log1p(λ_i/σ), or ½ Σ softplus(ln λ_i − ln σ) where λ/σ would overflow. Relative σ error
    <= rtol, hence relative f error <= rtol as well (the elasticity of f is <= f). About 36
    vectorised iterations: ~1 ms at d = 3072.
    """
    lam = _eigs(eigenvalues)
    k = check_positive("kappa", kappa)
    rt = check_positive("rtol", rtol)
    pos = lam[lam > 0]
    if pos.size == 0:
        raise ValueError("eigenvalues: all zero (trace 0); need at least one value > 0")
    log_lam = np.log(pos)
    lam_max = float(pos.max())

    def f(t: float) -> float:
        inv = math.exp(-t) if t > -700.0 else math.inf
        if lam_max * inv < 1e300:  # the fast form, 2-3x cheaper than logaddexp
            return 0.5 * float(np.log1p(pos * inv).sum())
        return 0.5 * float(np.logaddexp(0.0, log_lam - t).sum())

    t_hi = math.log(float(pos.sum()) / (2.0 * k))
    t_lo = max(float(log_lam.min()) - 2.0 * k / pos.size, float(log_lam.max()) - _log_expm1(2 * k))
    sigma = math.exp(_bisect_log(f, k, min(t_lo, t_hi), t_hi, rt))
    if not sigma > 1e-300:
        top = float(f"{0.5 * pos.size * (690.0 + float(log_lam.mean())):.4g}")
        raise range_error("kappa", k, 0, top, lo_open=True, hi_open=True,
                          note="about; above it σ underflows float64")
    return sigma


def solve_sigma_batch(eigenvalues: ArrayLike, kappa: float, batch_size: int) -> float:
    """σ with C_B(σ) = κ for the minibatch-gradient covariance Σ/B (Eq. 24)."""
    return solve_sigma(_eigs(eigenvalues) / check_int("batch_size", batch_size, 1), kappa)


# ---------------------------------------------------------------------------------------------
# White Channel (Eq. 19)


def white_scale(kappa: float, d: int) -> float:
    """s = 1/(e^{2κ/d} − 1): White-Channel noise variance per unit data variance (Eq. 19).
    Beyond 2κ/d ≈ 709 e^{2κ/d} overflows a float; the noise there is below any float's
    resolution, so s = 0 (no noise) instead of an OverflowError."""
    x = 2.0 * check_positive("kappa", kappa) / check_int("d", d, 1)
    return 0.0 if x > 700.0 else 1.0 / math.expm1(x)


def white_sigmas(eigenvalues: ArrayLike, kappa: float, d: int | None = None) -> np.ndarray:
    """σ_i = λ_i/(e^{2κ/d} − 1) (Eq. 19): equal capacity κ/d in each direction, no search.

    What d means when some λ_i = 0: a zero-variance direction gets zero noise and carries zero
    capacity whatever its noise, so the budget is spread over the informative directions only.
    ``d=None`` (default) uses d_eff = the number of nonzero eigenvalues, and then
    ½ Σ ln(1 + λ_i/σ_i) = κ exactly. Passing the nominal d (the paper's formula, e.g. 64 for
    digits with 3 zero pixels) gives capacity κ·d_eff/d <= κ: valid but more noise than needed.
    """
    lam = _eigs(eigenvalues)
    k = check_positive("kappa", kappa)
    d_eff = int(np.sum(lam > 0))
    if d_eff == 0:
        raise ValueError("eigenvalues: all zero (trace 0); need at least one value > 0")
    dd = d_eff if d is None else check_int("d", d, d_eff, note="the nonzero eigenvalues")
    return lam * white_scale(k, dd)


# ---------------------------------------------------------------------------------------------
# Personalized Channel (Eq. 20 corrected, Thm 3)


def personalized_eigenvalues(cov: np.ndarray, beta: ArrayLike) -> np.ndarray:
    """μ = eig(B^{-1/2} Σ_D B^{-1/2}), B = diag β, descending (spec §3.4, DERIVED): with noise
    σ·B the exact capacity is ½ Σ ln(1 + μ_j/σ) — the Natural Channel on β-whitened data."""
    c = _square("cov", cov)
    b = _beta(beta, c.shape[0])
    r = 1.0 / np.sqrt(b)
    w = sla.eigh(c * r[:, None] * r[None, :], eigvals_only=True, driver="evd",
                 overwrite_a=True, check_finite=False)
    return _eigs(w[::-1], "cov")


def solve_personalized(cov_or_mu: np.ndarray, beta: ArrayLike | None, kappa: float) -> float:
    """σ with exact personalized capacity κ; noise Σ_ξ = σ·diag β (§5.2 steps, exact form).

    ``cov_or_mu``: the (d, d) covariance (then ``beta`` is required), or the 1-D precomputed
    :func:`personalized_eigenvalues` (then ``beta`` is ignored)."""
    a = np.asarray(cov_or_mu)
    if a.ndim == 1:
        return solve_sigma(a, kappa)
    if beta is None:
        raise ValueError("beta: got None; required with a (d, d) covariance")
    return solve_sigma(personalized_eigenvalues(a, beta), kappa)


def _logdet_pd(m: np.ndarray, name: str) -> float:
    try:
        c = sla.cholesky(m, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        raise ValueError(f"{name}: not positive definite; add a ridge") from None
    return 2.0 * float(np.log(np.diag(c)).sum())


def personalized_capacity_direct(cov: np.ndarray, beta: ArrayLike, sigma: float) -> float:
    """½ [ln det(Σ_D + σB) − Σ ln(σ β_i)] (Eq. 20 in the corrected difference form, spec §3.4;
    the printed ratio is a typo)."""
    c = _square("cov", cov)
    b = _beta(beta, c.shape[0])
    s = check_positive("sigma", sigma)
    return 0.5 * (_logdet_pd(c + np.diag(s * b), "cov + sigma*diag(beta)")
                  - float(np.log(s * b).sum()))


def thm3_uk(cov: np.ndarray, beta: ArrayLike, *,
            ridge: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Thm 3's u_i (Schur complements c_ii − ρ_iᵀ Σ_{i−1}^{-1} ρ_i) and k_i
    (β_i + aᵀ diag β_{<i} a, a = Σ_{i−1}^{-1} ρ_i), from one LDLᵀ (spec §3.4 shortcut):
    Σ = L diag(u) Lᵀ and k = (L^{-1} ∘ L^{-1}) β.

    ``ridge`` (default 1e-9 · tr Σ/d) is added to the diagonal so Σ is positive definite
    (zero-variance pixels); bounds for Σ + εI are still upper bounds for Σ (ln det is monotone).
    """
    c = _square("cov", cov)
    d = c.shape[0]
    b = _beta(beta, d)
    eps = (1e-9 * max(float(np.trace(c)) / d, 1e-300) if ridge is None
           else check_positive("ridge", ridge, zero=True))
    try:
        chol = sla.cholesky(c + eps * np.eye(d), lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        raise ValueError(f"cov: not positive definite with ridge={eps:g}; pass a larger ridge") from None
    piv = np.diag(chol).copy()
    u = piv * piv
    lower = chol / piv[None, :]  # unit lower-triangular L of the LDLᵀ
    m = sla.solve_triangular(lower, np.eye(d), lower=True, unit_diagonal=True, check_finite=False)
    k = (m * m) @ b
    return u, k


def thm3_bound(u: np.ndarray, k: np.ndarray, c_diag: np.ndarray, beta: ArrayLike, sigma: float,
               *, form: Literal["elementwise", "paper"] = "elementwise") -> float:
    """Thm 3 upper bound U(σ) on the personalized capacity, corrected difference form.

    ``form="elementwise"`` (DERIVED, never looser): ½(Σ ln min(c_ii+σβ_i, u_i+σk_i) − Σ ln σβ_i).
    ``form="paper"``: ½(min[Σ ln(c_ii+σβ_i), Σ ln(u_i+σk_i)] − Σ ln σβ_i).
    """
    uu, kk, cc = (np.asarray(a, dtype=np.float64).ravel() for a in (u, k, c_diag))
    b = _beta(beta, uu.size)
    if kk.shape != uu.shape or cc.shape != uu.shape:
        raise ValueError(f"k, c_diag: got shapes {kk.shape}, {cc.shape}; expected ({uu.size},)")
    s = check_positive("sigma", sigma)
    had = np.log(cc + s * b)
    schur = np.log(uu + s * kk)
    noise = float(np.log(s * b).sum())
    if form == "elementwise":
        return 0.5 * (float(np.minimum(had, schur).sum()) - noise)
    if form == "paper":
        return 0.5 * (min(float(had.sum()), float(schur.sum())) - noise)
    raise ValueError(f"form: got {form!r}; allowed: elementwise, paper")


def solve_thm3_sigma(u: np.ndarray, k: np.ndarray, c_diag: np.ndarray, beta: ArrayLike,
                     kappa: float, *, form: Literal["elementwise", "paper"] = "elementwise",
                     rtol: float = 1e-10) -> float:
    """σ with U(σ) = κ (Thm 3, the paper's procedure); U decreases in σ, and since U bounds the
    exact capacity this σ is >= the exact one (more noise)."""
    kap = check_positive("kappa", kappa)
    b = _beta(beta, np.asarray(u).size)
    c = np.asarray(c_diag, dtype=np.float64).ravel()

    def f(t: float) -> float:
        return thm3_bound(u, k, c, b, math.exp(t), form=form)

    # U <= Hadamard term <= Σ c_ii/(2σβ_i), so this σ_hi gives U <= κ
    t_hi = math.log(max(float((c / b).sum()), 1e-300) / (2.0 * kap))
    return math.exp(_bisect_log(f, kap, _expand_bracket(f, kap, t_hi), t_hi, rtol))


# ---------------------------------------------------------------------------------------------
# Laplace noise (spec §3.7, DERIVED — not in the paper)


def laplace_capacity_bound(eigenvalues: ArrayLike, b: float) -> float:
    """DERIVED (spec §3.7): I(D; D + Laplace(0,b)^d) <= ½ Σ ln(1 + λ_i/(2b²)) + d·(½ ln πe − 1);
    the Gaussian bound at σ = 2b² plus 0.0724 nats per dimension (d = all noised dimensions)."""
    lam = _eigs(eigenvalues)
    bb = check_positive("b", b)
    return capacity(lam, 2.0 * bb * bb) + lam.size * LAPLACE_PENALTY_PER_DIM


def laplace_floor(d: int) -> float:
    """The smallest κ the Laplace bound can approach: 0.0724·d nats (never reached)."""
    return check_int("d", d, 1) * LAPLACE_PENALTY_PER_DIM


def solve_laplace_b(eigenvalues: ArrayLike, kappa: float) -> float:
    """Laplace scale b with bound = κ (DERIVED, spec §3.7): σ from Eq. 18 at κ − 0.0724·d,
    b = sqrt(σ/2). Raises when κ <= 0.0724·d (the bound cannot certify it)."""
    lam = _eigs(eigenvalues)
    k = check_positive("kappa", kappa)
    floor = laplace_floor(lam.size)
    if k <= floor:
        raise range_error("kappa", kappa, floor, lo_open=True,
                          note=f"the Laplace bound cannot certify below "
                               f"{LAPLACE_PENALTY_PER_DIM:.4f}·d = {floor:.4g} nats for d = "
                               f"{lam.size}")
    return math.sqrt(solve_sigma(lam, k - floor) / 2.0)


# ---------------------------------------------------------------------------------------------
# other defenses as channels (§5.3)


def dp_capacity(batch_size: int, noise_multiplier: float, *, tight: bool = False) -> float:
    """Thm 4(1) with σ = z²S²: C_DP <= B/z² as printed (S cancels); ``tight=True`` gives
    B/(2z²) (spec §4.1: the proof drops the ½ of f)."""
    bsz = check_int("batch_size", batch_size, 1)
    z = check_positive("noise_multiplier", noise_multiplier)
    return bsz / (z * z) / (2.0 if tight else 1.0)


def dp_capacity_from_epsilon(batch_size: int, eps: float, delta: float) -> float:
    """Thm 4(2): C_DP <= B ε²/(2 ln(1.25/δ)), with the single-step Dwork–Roth calibration
    (so ε is a per-step ε, not a whole-training accountant ε; spec §4.1)."""
    bsz = check_int("batch_size", batch_size, 1)
    e = check_positive("eps", eps)
    dl = check_range("delta", delta, 0, 1, lo_open=True, hi_open=True)
    return bsz * e * e / (2.0 * math.log(1.25 / dl))


def batch_capacity(eigenvalues: ArrayLike, sigma: float, batch_size: int) -> float:
    """C_B = ½ Σ ln((λ_i/B + σ)/σ) (Eq. 24): the minibatch mean has covariance Σ/B."""
    return capacity(_eigs(eigenvalues) / check_int("batch_size", batch_size, 1),
                    check_positive("sigma", sigma))


def compression_delta(eigenvalues: ArrayLike, sigma: float, drop: Sequence[int]) -> float:
    """ΔC >= 0 from zeroing eigen-directions ``drop`` (indices into ``eigenvalues``, 0 = the
    first/largest): the sum of their terms ½ ln(1 + λ_i/σ) (§5.3, Fig 7)."""
    lam = _eigs(eigenvalues)
    s = check_positive("sigma", sigma)
    idx = np.asarray(list(drop), dtype=np.int64)
    bad = idx[(idx < 0) | (idx >= lam.size)]
    if bad.size:
        raise range_error("drop", int(bad[0]), 0, lam.size - 1, integer=True,
                          note="an eigen-direction index")
    return float(0.5 * np.log1p(lam[np.unique(idx)] / s).sum())


def compression_delta_raw(cov: np.ndarray, sigma: float, k_idx: Sequence[int]) -> float:
    """ΔC = ½ ln[det(Q_k + σI − Rᵀ(P + σI)^{-1}R) / σ^k] (Eq. 52 / App. E): capacity lost by
    dropping raw coordinates ``k_idx``; Σ = [[P, R], [Rᵀ, Q]] with Q the dropped block."""
    c = _square("cov", cov)
    s = check_positive("sigma", sigma)
    d = c.shape[0]
    kk = np.unique(np.asarray(list(k_idx), dtype=np.int64))
    if kk.size == 0:
        raise ValueError("k_idx: got no index; expected at least one coordinate to drop")
    bad = kk[(kk < 0) | (kk >= d)]
    if bad.size:
        raise range_error("k_idx", int(bad[0]), 0, d - 1, integer=True, note="a coordinate index")
    keep = np.setdiff1d(np.arange(d), kk)
    q = c[np.ix_(kk, kk)] + s * np.eye(kk.size)
    if keep.size:
        p = c[np.ix_(keep, keep)] + s * np.eye(keep.size)
        r = c[np.ix_(keep, kk)]
        q = q - r.T @ sla.solve(p, r, assume_a="pos", check_finite=False)
    return 0.5 * (_logdet_pd(0.5 * (q + q.T), "Schur complement") - kk.size * math.log(s))


# ---------------------------------------------------------------------------------------------
# Thm 1: reconstruction-error lower bound, and the Wiener (Bayes) error


def thm1_prefactor(eigenvalues: ArrayLike, *, rel_tol: float = 1e-6) -> tuple[float, int, int]:
    """Gaussian plug-in e^{2h(D)/d}/(2πe) of Thm 1 (Eq. 5) = geometric mean of the eigenvalues,
    restricted to the informative subspace λ > rel_tol·λ_max.

    A single zero eigenvalue makes the full-d geometric mean 0 (a vacuous bound), and image data
    has many: MNIST has more than 100 constant (zero-variance) border pixels, digits 3 of 64.
    Thm 1 applied to the projection onto the informative subspace is still valid (projection
    cannot add information). Returns (prefactor, d_eff, n_dropped). See THM1_CAVEAT."""
    lam = _eigs(eigenvalues)
    tol = check_positive("rel_tol", rel_tol, zero=True)
    keep = lam > tol * lam.max()
    d_eff = int(keep.sum())
    if d_eff == 0:
        raise ValueError("eigenvalues: all zero (trace 0); need at least one value > 0")
    return float(np.exp(np.log(lam[keep]).mean())), d_eff, int(lam.size - d_eff)


def thm1_mse_bound(eigenvalues: ArrayLike, info_nats: float, *,
                   per: Literal["dimension", "pixel"] = "dimension",
                   rel_tol: float = 1e-6) -> float:
    """Thm 1 (Eq. 5): E||D − D̂||²/d_eff >= GM(λ) · exp(−2I/d_eff) on the informative subspace.

    ``per="dimension"``: that per-dimension MSE on the d_eff informative directions.
    ``per="pixel"``: the per-pixel MSE over all d pixels, × d_eff/d (the dropped directions
    contribute >= 0 to the squared error). Heuristic for non-Gaussian data (THM1_CAVEAT)."""
    pref, d_eff, _ = thm1_prefactor(eigenvalues, rel_tol=rel_tol)
    info = check_positive("info_nats", info_nats, zero=True)
    bound = pref * math.exp(-2.0 * info / d_eff)
    if per == "dimension":
        return bound
    if per == "pixel":
        return bound * d_eff / np.asarray(eigenvalues).size
    raise ValueError(f"per: got {per!r}; allowed: dimension, pixel")


def total_info(kappa: float, rounds: int, mode: NoiseMode = "redraw") -> float:
    """Information budget of a run (spec §2.6): n·κ ("TotalInfo") when the noise is redrawn
    every step, κ when one fixed noisy copy of the data is used (DPI on D → D̃ → all W)."""
    k = check_positive("kappa", kappa)
    n = check_int("rounds", rounds, 1)
    if mode == "redraw":
        return n * k
    if mode == "fixed":
        return k
    raise ValueError(f"mode: got {mode!r}; allowed: redraw, fixed")


def thm1_per_round(eigenvalues: ArrayLike, kappa: float, *,
                   per: Literal["dimension", "pixel"] = "dimension") -> float:
    """Thm 1 bound for one round, I = κ."""
    return thm1_mse_bound(eigenvalues, check_positive("kappa", kappa), per=per)


def thm1_over_rounds(eigenvalues: ArrayLike, kappa: float, rounds: int, *,
                     mode: NoiseMode = "redraw",
                     per: Literal["dimension", "pixel"] = "dimension") -> float:
    """Thm 1 bound over n rounds, I = n·κ (redraw) or κ (fixed copy). With redrawn noise it is
    vacuous at the paper's scale: exp(−2·10⁴·300/3072) ≈ 0 (spec §6.5.4)."""
    return thm1_mse_bound(eigenvalues, total_info(kappa, rounds, mode), per=per)


def quantization_floor(levels: int = 256, pixel_range: float = 1.0) -> float:
    """Δ²/12 with Δ = range/(levels − 1): the MSE of rounding to the pixel grid; a reconstruction
    MSE below it is indistinguishable from a perfect one."""
    lv = check_int("levels", levels, 2)
    step = check_positive("pixel_range", pixel_range) / (lv - 1)
    return step * step / 12.0


def is_vacuous(bound: float, floor: float) -> bool:
    """True when an MSE lower bound is at or below ``floor`` (e.g. :func:`quantization_floor`),
    so it excludes nothing an attacker could reach."""
    fl = check_positive("floor", floor, zero=True)
    b = check_range("bound", bound)
    return not (b > fl)


def wiener_mmse(eigenvalues: ArrayLike, sigmas: ArrayLike, d: int | None = None) -> float:
    """(1/d) Σ λ_i σ_i/(λ_i + σ_i): the Bayes (posterior-mean) MSE per dimension of an attacker
    who sees D̃ = D + ξ itself, for Gaussian D and noise diagonal in the data eigenbasis
    (Natural: scalar σ; White: σ_i). Thm 1 gives the geometric mean of the same terms (spec §2.2).
    ``d`` defaults to the number of eigenvalues."""
    lam = _eigs(eigenvalues)
    s = _sigmas(sigmas, lam.size, "sigmas")
    dd = lam.size if d is None else check_int("d", d, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        terms = np.where((lam > 0) & (s > 0), lam * s / (lam + s), 0.0)
    return float(terms.sum() / dd)


def wiener_mmse_diag_noise(cov: np.ndarray, noise_var: ArrayLike) -> float:
    """(1/d) tr(Σ − Σ(Σ + N)^{-1}Σ) with N = diag(noise_var) > 0: the linear-MMSE (Bayes for
    Gaussian data and noise) error for noise not aligned with the eigenbasis (Personalized:
    N = σ·diag β)."""
    c = _square("cov", cov)
    n = _beta(noise_var, c.shape[0])
    sol = sla.solve(c + np.diag(n), c, assume_a="pos", check_finite=False)
    return float((np.trace(c) - np.trace(c @ sol)) / c.shape[0])


# ---------------------------------------------------------------------------------------------
# toy example (§5.2, Fig 4)


def toy_parameter_noise(W: float, lr: float = 1.0, target_capacity: float = 1.0) -> float:
    """Fig 4: F(W;D) = W²D with D ~ N(−1, 1); the update lr·2WD has variance 4W²lr², so
    parameter noise 4W²lr²/(e^{2C} − 1) gives capacity C (16/(e²−1) at W = 2, 144/(e²−1) at 6)."""
    w = check_range("W", W, -math.inf, math.inf, lo_open=True, hi_open=True)
    step = check_positive("lr", lr)
    cap = check_positive("target_capacity", target_capacity)
    return 4.0 * w * w * step * step / math.expm1(2.0 * cap)


def toy_data_noise(target_capacity: float = 1.0) -> float:
    """Fig 4: data noise 1/(e^{2C} − 1) on D (variance 1) gives capacity C for every W."""
    return 1.0 / math.expm1(2.0 * check_positive("target_capacity", target_capacity))
