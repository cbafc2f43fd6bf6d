"""Closed-form η ↔ σ ↔ (ε, δ) relations for Fisher information loss (pure numpy, instant).

Hannun, Guo & van der Maaten, "Measuring Data Leakage in Machine-Learning Models with Fisher
Information" (UAI 2021); spec: ``shared/spec/seed-002-fil-and-003-tappfl.md`` Part A.

- η scales as 1/σ (Eq. 17: η = ‖J_f‖₂/σ), so every η is computed once at σ = 1 (the paper's
  reporting convention) and rescaled: :func:`eta_for_sigma`, :func:`sigma_for_eta`.
- Composition (§3, A4): k releases of FIL η have FIL ≤ η√k; in general (Σ η_j²)^{1/2}.
- Cramér–Rao (Eq. 3): any unbiased estimator of one coordinate has variance ≥ 1/η².
- DP calibration (A6, standard results, *not in the paper*): the L2 sensitivity of
  output-perturbed L2-regularised logistic regression on features with ‖x‖ ≤ R is
  Δ₂ = 2R/(nλ) (Chaudhuri, Monteleoni & Sarwate 2011); least squares has no finite sensitivity.
- Local Rényi DP from FIL (A6, **derived**, first order): ε_i(α) ≈ α·η_i²·‖Δ‖²/2.

The page calls these on every slider move: they only touch arrays already computed.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from core.foundation.checks import check_array, check_choice, check_int, check_positive, check_range

DpMethod = Literal["classic", "rdp"]


def check_sigma(sigma: float, name: str = "sigma") -> float:
    """σ must be a finite number > 0 (one-line ValueError naming the parameter otherwise)."""
    return check_positive(name, sigma)


def check_eta(eta: float, name: str = "eta_target") -> float:
    """A target η must be a finite number > 0."""
    return check_positive(name, eta)


def _eta_array(eta_unit: np.ndarray | float) -> np.ndarray:
    e = np.asarray(eta_unit, dtype=np.float64)
    if e.size == 0:
        raise ValueError("eta_unit: got an empty array; expected η at σ = 1 of every example")
    return check_array("eta_unit", e, 0, math.inf, hi_open=True)


def eta_for_sigma(eta_unit: np.ndarray | float, sigma: float) -> np.ndarray | float:
    """η at noise σ from η at σ = 1 (Eq. 17: η = ‖J‖₂/σ)."""
    s = check_sigma(sigma)
    e = _eta_array(eta_unit) / s
    return float(e) if e.ndim == 0 else e


def sigma_for_eta(eta_unit: np.ndarray | float, *, eta_target: float,
                  reduce: Literal["max", "mean"] = "max") -> float:
    """σ such that the worst-case (``max``: the authors' ``σ = max_i ‖J_i‖₂/η``) or the mean
    (``mean``: the paper's Fig. 6 η̄) per-example η equals ``eta_target``."""
    t = check_eta(eta_target)
    e = _eta_array(eta_unit)
    check_choice("reduce", reduce, ("max", "mean"))
    ref = float(e.max() if reduce == "max" else e.mean())
    if ref <= 0:
        raise ValueError("eta_unit: every η is 0 at σ = 1 (the model does not depend on the "
                         "data), so no σ reaches a target η")
    return ref / t


def compose_eta(eta: np.ndarray | float, k: int) -> np.ndarray | float:
    """FIL of k independent releases each with FIL η: η√k (Fisher information adds, A4)."""
    check_int("k", k, 1, note="the number of releases")
    e = _eta_array(eta) * math.sqrt(int(k))
    return float(e) if e.ndim == 0 else e


def compose_etas(etas: np.ndarray) -> float:
    """FIL bound of releases with different η_j: (Σ_j η_j²)^{1/2} (triangle inequality, A4)."""
    e = _eta_array(etas)
    return float(np.sqrt(np.sum(e**2)))


def crb_variance_bound(eta: np.ndarray | float) -> np.ndarray | float:
    """Cramér–Rao bound (Eq. 3): Var(ẑ) ≥ 1/η² for any unbiased estimator ẑ of one coordinate."""
    e = _eta_array(eta)
    with np.errstate(divide="ignore"):
        out = 1.0 / e**2
    return float(out) if out.ndim == 0 else out


def sensitivity_l2(*, n: int, l2: float, model: Literal["linear", "logistic"] = "logistic",
                   feature_norm: float = 1.0) -> float:
    """L2 sensitivity Δ₂ of the minimiser of (1/n)Σℓ + (λ/2)‖w‖² (= the paper's Σℓ + (nλ/2)‖w‖²)
    when one example changes: 2L/(nλ) for an L-Lipschitz loss; logistic loss on ‖x‖ ≤ R has
    L = R (Chaudhuri et al. 2011). Least squares has no finite sensitivity: ValueError."""
    if model == "linear":
        raise ValueError("model: least squares has no finite L2 sensitivity (its loss is not "
                         "Lipschitz unless y and w are bounded), so no (ε, δ) calibration exists; "
                         "use FIL's η, which needs no such bound")
    if model != "logistic":
        raise ValueError(f"model: got {model!r}; allowed: 'linear' or 'logistic'")
    check_int("n", n, 1)
    check_positive("l2", l2, note="DP calibration needs strong convexity")
    check_positive("feature_norm", feature_norm)
    return 2.0 * float(feature_norm) / (int(n) * float(l2))


def sigma_from_dp(epsilon: float, delta: float, *, n: int, l2: float,
                  model: Literal["linear", "logistic"] = "logistic", feature_norm: float = 1.0,
                  method: DpMethod = "rdp") -> float:
    """σ of the Gaussian output perturbation that makes the release (ε, δ)-DP (A6, standard,
    not in the paper). ``classic``: σ = Δ₂√(2 ln(1.25/δ))/ε, valid for ε < 1 (Dwork & Roth
    Thm A.1); ``rdp``: the Gaussian mechanism's RDP ε(α) = αΔ₂²/(2σ²) converted and optimised
    over α, ε = Δ₂²/(2σ²) + (Δ₂/σ)√(2 ln(1/δ)), solved for σ (valid for every ε > 0)."""
    eps = check_positive("epsilon", epsilon)
    dl = check_range("delta", delta, 0, 1, lo_open=True, hi_open=True)
    d2 = sensitivity_l2(n=n, l2=l2, model=model, feature_norm=feature_norm)
    if method == "classic":
        if eps >= 1:
            raise ValueError(f"epsilon: got {epsilon!r}; the classic Gaussian mechanism needs "
                             "0 < epsilon < 1; use method='rdp' for larger epsilon")
        return d2 * math.sqrt(2 * math.log(1.25 / dl)) / eps
    if method != "rdp":
        raise ValueError(f"method: got {method!r}; allowed: 'classic' or 'rdp'")
    c = math.sqrt(2 * math.log(1 / dl))
    u = -c + math.sqrt(c * c + 2 * eps)  # u = Δ₂/σ solves u²/2 + c·u − ε = 0
    return d2 / u


def epsilon_from_sigma(sigma: float, delta: float, *, n: int, l2: float,
                       model: Literal["linear", "logistic"] = "logistic",
                       feature_norm: float = 1.0, method: DpMethod = "rdp") -> float:
    """The (ε, δ) budget a given σ buys (inverse of :func:`sigma_from_dp`; ``classic`` returns
    ε even when ≥ 1, where that formula is no longer a valid guarantee: check ε < 1)."""
    s = check_sigma(sigma)
    check_range("delta", delta, 0, 1, lo_open=True, hi_open=True)
    d2 = sensitivity_l2(n=n, l2=l2, model=model, feature_norm=feature_norm)
    u = d2 / s
    if method == "classic":
        return u * math.sqrt(2 * math.log(1.25 / float(delta)))
    if method != "rdp":
        raise ValueError(f"method: got {method!r}; allowed: 'classic' or 'rdp'")
    return u * u / 2 + u * math.sqrt(2 * math.log(1 / float(delta)))


def local_rdp(eta: np.ndarray | float, *, alpha: float = 1.0,
              delta_norm: float = 2.0) -> np.ndarray | float:
    """**Derived** (A6, first order; not in the paper): the Rényi divergence of order α between
    the releases for data z and z + Δ is α‖f(z+Δ) − f(z)‖²/(2σ²) ≈ (α/2)ΔᵀℐΔ ≤ α·η²·‖Δ‖²/2.
    ``delta_norm`` = ‖Δ‖ (2 for a change anywhere in the unit ball); α = 1 gives the KL."""
    check_range("alpha", alpha, 1, math.inf, hi_open=True)
    check_positive("delta_norm", delta_norm)
    e = _eta_array(eta)
    out = float(alpha) * e**2 * float(delta_norm) ** 2 / 2
    return float(out) if out.ndim == 0 else out
