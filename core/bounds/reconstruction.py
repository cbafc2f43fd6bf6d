"""Inf2Guard Theorem 3: a lower bound on the reconstruction error of every attack on the
released representation r + δ (spec 004 §4.1; paper §4, proof App. A.3). Pure numpy (and
``math``), instant: it recomputes on every slider move.

    Pr(‖A(r + δ) − x‖_p ≥ η) ≥ 1 − (I(x; r + δ) + log 2) / (log Vol(X) − log Vol(X(η)))

with Vol(X(η)) = max_x Vol(B_p(x, η) ∩ X), natural logarithms (I in nats). The proof is
continuum Fano with x uniform on X (Duchi & Wainwright 2013). The paper writes the volumes of
boundaries ∂X; the cited result uses the volumes of the sets, which is what is computed here
(spec §9 item 5).

The worked formula for images X = [0, 1]^d (spec §4.1, "Dashboard computation"):

- ℓ∞ balls, η < 1/2: the cube [x − η, x + η]^d fits inside X, so the denominator is exactly
  d·ln(1 / (2η)); at η ≥ 1/2 a ball can cover X and the bound says nothing.
- ℓ2 balls: Vol(B₂(η)) = π^{d/2} η^d / Γ(d/2 + 1) is an upper bound on the intersection, so
  −ln Vol(B₂(η)) is a lower bound on the denominator and the bound computed from it is still
  valid (weaker); when Vol(B₂(η)) ≥ 1 it is vacuous.

I(x; r + δ) is not known; :func:`mi_upper_bound_additive` gives an upper bound for noise δ
added independently of x with known per-coordinate entropy (data processing x → r → r + δ, then
the Gaussian maximum-entropy bound on h(r + δ)); it plugs in the variance of r estimated on
released rows, so the resulting bound is labelled *estimated*. An upper bound on I keeps the
probability bound a valid lower bound (up to that estimate).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from core.foundation.checks import check_choice, check_int, check_positive, check_range

LOG2 = math.log(2.0)
NORMS = ("l2", "linf")


def log_ball_volume(d: int, eta: float, norm: str) -> float:
    """ln Vol(B_p(η)) in R^d: ℓ2 ``(d/2) ln π + d ln η − ln Γ(d/2 + 1)``, ℓ∞ ``d ln(2η)``."""
    check_int("d", d, 1)
    check_positive("eta", eta)
    if norm == "l2":
        return 0.5 * d * math.log(math.pi) + d * math.log(eta) - math.lgamma(0.5 * d + 1.0)
    if norm == "linf":
        return d * math.log(2.0 * eta)
    raise ValueError(f"norm: got {norm!r}; allowed: {', '.join(NORMS)}")


def unit_cube_denominator(d: int, eta: float, norm: str) -> float:
    """log Vol(X) − log Vol(X(η)) for X = [0, 1]^d (Vol(X) = 1): ℓ∞ exact (d·ln(1/(2η)) for
    η < 1/2, else 0); ℓ2 the valid lower estimate −ln Vol(B₂(η)), floored at 0."""
    if norm == "linf":
        check_positive("eta", eta)
        return d * math.log(1.0 / (2.0 * eta)) if eta < 0.5 else 0.0
    return max(0.0, -log_ball_volume(d, eta, norm))


def theorem3(mi_nats: float, denominator: float) -> tuple[float, bool]:
    """(bound, vacuous): 1 − (I + ln 2)/denominator clipped to [0, 1]; vacuous when the
    denominator is not positive, I is infinite, or the bound is <= 0 (it says nothing)."""
    check_range("mi_nats", mi_nats, 0)  # +inf allowed: an unbounded I (vacuous)
    if denominator <= 0 or not math.isfinite(mi_nats):
        return 0.0, True
    b = 1.0 - (mi_nats + LOG2) / denominator
    return (max(0.0, min(1.0, b)), b <= 0.0)


def max_informative_mi(denominator: float) -> float:
    """The largest I(x; r + δ) (nats) at which the bound still says something: D − ln 2."""
    return max(0.0, denominator - LOG2)


def gaussian_entropy(std: np.ndarray | float) -> np.ndarray:
    """h(N(0, s²)) = ½ ln(2πe s²) nats per coordinate (−inf at s = 0)."""
    s = np.asarray(std, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return 0.5 * np.log(2.0 * math.pi * math.e * s**2)


def laplace_entropy(scale: np.ndarray | float) -> np.ndarray:
    """h(Laplace(0, b)) = 1 + ln(2b) nats."""
    b = np.asarray(scale, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return 1.0 + np.log(2.0 * b)


def uniform_entropy(half_width: np.ndarray | float) -> np.ndarray:
    """h(U(−a, a)) = ln(2a) nats."""
    a = np.asarray(half_width, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.log(2.0 * a)


def mi_upper_bound_additive(var_r: np.ndarray, var_noise: np.ndarray,
                            h_noise: np.ndarray) -> float:
    """Upper bound on I(x; r + δ) in nats for δ independent of x with independent coordinates:

        I(x; r + δ) ≤ I(r; r + δ) = h(r + δ) − h(δ) ≤ Σ_i ½ ln(2πe (Var r_i + Var δ_i)) − h(δ_i)

    (data processing; then subadditivity of h and the Gaussian maximum-entropy bound). Infinite
    when some coordinate has no noise (h(δ_i) = −inf: ε = 0)."""
    vr, vn, hn = (np.asarray(a, dtype=np.float64).ravel() for a in (var_r, var_noise, h_noise))
    if not (vr.shape == vn.shape == hn.shape):
        raise ValueError(f"var_noise, h_noise: got shapes {vn.shape}, {hn.shape}; expected "
                         f"{vr.shape} like var_r")
    if np.any(~np.isfinite(hn)) or np.any(vr + vn <= 0):
        return math.inf
    per = 0.5 * np.log(2.0 * math.pi * math.e * (vr + vn)) - hn
    return float(max(0.0, np.sum(per)))


@dataclass(frozen=True)
class Theorem3Point:
    """Theorem 3 at one (norm, η): the ``bound`` on Pr(error ≥ η), its ``denominator`` (nats),
    whether it is ``vacuous``, and ``mi_nats``, the I(x; r + δ) it used."""

    norm: str
    eta: float
    bound: float
    denominator: float
    vacuous: bool
    mi_nats: float


def theorem3_unit_cube(mi_nats: float, d: int, eta: float, norm: str) -> Theorem3Point:
    """Theorem 3 for images in [0, 1]^d (the worked formula above)."""
    den = unit_cube_denominator(d, eta, norm)
    b, vac = theorem3(mi_nats, den)
    return Theorem3Point(norm, float(eta), b, den, vac, float(mi_nats))


def reconstruction_errors(recon: np.ndarray, targets: np.ndarray) -> dict[str, np.ndarray]:
    """Per-target ℓ2 and ℓ∞ distances ‖x̂ − x‖ of flattened reconstructions."""
    r = np.asarray(recon, dtype=np.float64).reshape(len(recon), -1)
    t = np.asarray(targets, dtype=np.float64).reshape(len(targets), -1)
    if r.shape != t.shape:
        raise ValueError(f"recon: got shape {r.shape}; expected {t.shape} like targets")
    diff = r - t
    return {"l2": np.sqrt((diff**2).sum(1)), "linf": np.abs(diff).max(1)}


# ---------------------------------------------------------------------------------------------
# Theorem 3 under an estimated entropy of x (issue #22 item 4)


def theorem3_entropy(mi_nats: float, h_x_nats: float, log_volume: float, d: int, eta: float,
                     norm: str) -> Theorem3Point:
    """Theorem 3 without the uniform prior, for x with differential entropy h(x) supported in a
    set X of log-volume ``log_volume`` (nats) in R^d:

        Pr(‖A(r + δ) − x‖_p ≥ η) ≥ 1 − (I(x; r + δ) + ln 2 + ln Vol X − h(x))
                                         / (ln Vol X − ln Vol B_p(η))

    Proof (the Fano step of the paper's proof with h(x) kept): for E = 1[‖x̂ − x‖ < η],
    h(x) − I ≤ h(x | x̂) ≤ H(E) + Pr(E)·ln Vol B_p(η) + (1 − Pr(E))·ln Vol X (given x̂ and E = 1,
    x lies in the ball; otherwise in X), so Pr(E) ≤ (I + ln 2 + ln Vol X − h)/(ln Vol X −
    ln Vol B). With x uniform (h = ln Vol X) it is the paper's Theorem 3; with any other prior
    the deficit ln Vol X − h(x) ≥ 0 weakens it. Valid for a true h(x) or a LOWER bound on it;
    an upper estimate of h (the Gaussian maximum-entropy value) gives an upper estimate of the
    bound (a point below it is not necessarily a violation; no point below it is conclusive).
    The ball's volume is not intersected with X (an upper bound on the intersection: valid).
    ``h_x_nats`` = −inf (x on a lower-dimensional set) makes the bound vacuous."""
    check_range("mi_nats", mi_nats, 0.0)
    check_range("h_x_nats", h_x_nats, -math.inf, log_volume + 1e-9 * max(1.0, abs(log_volume)),
                note="no density on X has more entropy than uniform: h <= ln Vol X")
    log_ball = log_ball_volume(d, eta, norm)
    den = log_volume - min(log_ball, log_volume)
    if not math.isfinite(h_x_nats):
        return Theorem3Point(norm, float(eta), 0.0, den, True, float(mi_nats))
    deficit = max(0.0, log_volume - h_x_nats)
    b, vac = theorem3(mi_nats + deficit, den)
    return Theorem3Point(norm, float(eta), b, den, vac, float(mi_nats))


def theorem3_dequantised(mi_nats: float, data, eta: float, norm: str, *,
                         entropy: str = "gaussian") -> Theorem3Point:
    """Theorem 3 for pixel data under its own entropy (:func:`theorem3_entropy`), applied to
    the dequantised x̃ = x + u on the varying pixels (``data``: a
    :class:`core.bounds.entropy.DequantisedData`): ‖x̂ − x‖ ≥ ‖x̂_S − x̃_S‖ − ‖u‖, so the
    probability that the error on x is at least η is at least the bound for x̃ at
    η + ‖u‖_max; I(x̃; r + δ) ≤ I(x; r + δ) (u is independent of the release). ``entropy``:
    ``gaussian`` (the maximum-entropy value: an upper estimate of the bound) or ``knn``
    (Kozachenko–Leonenko: an estimate with no guaranteed direction). The returned η is the
    one asked for x."""
    check_choice("entropy", entropy, ("gaussian", "knn"))
    check_positive("eta", eta)
    check_choice("norm", norm, NORMS)
    h = data.h_gaussian if entropy == "gaussian" else data.h_knn
    if math.isnan(h):
        raise ValueError(f"entropy: got {entropy!r}, which this data's estimate left out "
                         "(dequantised(..., knn=False)); allowed: gaussian")
    h = min(h, data.log_volume)  # an estimate above the uniform value carries no information
    pt = theorem3_entropy(mi_nats, h, data.log_volume, data.d, eta + data.u_max[norm], norm)
    return Theorem3Point(norm, float(eta), pt.bound, pt.denominator, pt.vacuous, pt.mi_nats)
