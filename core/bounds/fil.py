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

DpMethod = Literal["classic", "rdp"]


def check_sigma(sigma: float, name: str = "sigma") -> float:
    """σ must be a finite number > 0 (one-line ValueError naming the parameter otherwise)."""
    try:
        s = float(sigma)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: got {sigma!r}; allowed: a finite number > 0") from None
    if not math.isfinite(s) or s <= 0:
        raise ValueError(f"{name}: got {sigma!r}; allowed: a finite number > 0")
    return s


def check_eta(eta: float, name: str = "eta_target") -> float:
    """A target η must be a finite number > 0."""
    try:
        e = float(eta)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: got {eta!r}; allowed: a finite number > 0") from None
    if not math.isfinite(e) or e <= 0:
        raise ValueError(f"{name}: got {eta!r}; allowed: a finite number > 0")
    return e


def _eta_array(eta_unit: np.ndarray | float) -> np.ndarray:
    e = np.asarray(eta_unit, dtype=np.float64)
    if e.size == 0 or not np.all(np.isfinite(e)) or np.any(e < 0):
        raise ValueError("eta_unit: allowed: a non-empty array of finite values >= 0 (η at σ = 1)")
    return e


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
    if reduce not in ("max", "mean"):
        raise ValueError(f"reduce: got {reduce!r}; allowed: 'max' or 'mean'")
    ref = float(e.max() if reduce == "max" else e.mean())
    if ref <= 0:
        raise ValueError("eta_unit: every η is 0 at σ = 1 (the model does not depend on the "
                         "data), so no σ reaches a target η")
    return ref / t


def compose_eta(eta: np.ndarray | float, k: int) -> np.ndarray | float:
    """FIL of k independent releases each with FIL η: η√k (Fisher information adds, A4)."""
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k: got {k!r}; allowed: an integer >= 1 (number of releases)")
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
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n: got {n!r}; allowed: an integer >= 1")
    if not (math.isfinite(float(l2)) and float(l2) > 0):
        raise ValueError(f"l2: got {l2!r}; allowed: a finite number > 0 (DP calibration needs "
                         "strong convexity)")
    if not (math.isfinite(float(feature_norm)) and float(feature_norm) > 0):
        raise ValueError(f"feature_norm: got {feature_norm!r}; allowed: a finite number > 0")
    return 2.0 * float(feature_norm) / (int(n) * float(l2))


def _check_eps_delta(epsilon: float, delta: float) -> tuple[float, float]:
    eps, dl = float(epsilon), float(delta)
    if not (math.isfinite(eps) and eps > 0):
        raise ValueError(f"epsilon: got {epsilon!r}; allowed: a finite number > 0")
    if not (0 < dl < 1):
        raise ValueError(f"delta: got {delta!r}; allowed: 0 < delta < 1")
    return eps, dl


def sigma_from_dp(epsilon: float, delta: float, *, n: int, l2: float,
                  model: Literal["linear", "logistic"] = "logistic", feature_norm: float = 1.0,
                  method: DpMethod = "rdp") -> float:
    """σ of the Gaussian output perturbation that makes the release (ε, δ)-DP (A6, standard,
    not in the paper). ``classic``: σ = Δ₂√(2 ln(1.25/δ))/ε, valid for ε < 1 (Dwork & Roth
    Thm A.1); ``rdp``: the Gaussian mechanism's RDP ε(α) = αΔ₂²/(2σ²) converted and optimised
    over α, ε = Δ₂²/(2σ²) + (Δ₂/σ)√(2 ln(1/δ)), solved for σ (valid for every ε > 0)."""
    eps, dl = _check_eps_delta(epsilon, delta)
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
    if not (0 < float(delta) < 1):
        raise ValueError(f"delta: got {delta!r}; allowed: 0 < delta < 1")
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
    if not (math.isfinite(float(alpha)) and float(alpha) >= 1):
        raise ValueError(f"alpha: got {alpha!r}; allowed: a finite number >= 1")
    if not (math.isfinite(float(delta_norm)) and float(delta_norm) > 0):
        raise ValueError(f"delta_norm: got {delta_norm!r}; allowed: a finite number > 0")
    e = _eta_array(eta)
    out = float(alpha) * e**2 * float(delta_norm) ** 2 / 2
    return float(out) if out.ndim == 0 else out
