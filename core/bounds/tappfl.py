"""TAPPFL's theory as live numbers (spec B9): Theorem 2's accuracy bound in the paper's closed
form and the exact binary-entropy form, Theorem 1's utility-privacy trade-off, and estimators
of their ingredients from data. Pure numpy, vectorised, < 1 ms per call.

Entropies are in **bits**. Theorem 2 and Theorem 1 cover a *binary* private attribute u only;
:func:`fano_accuracy_bound` is the k-ary extension via Fano's inequality (not in the paper).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from core.foundation.checks import check_array, range_error

ArrayLike = float | np.ndarray

THM2_BINARY_ONLY = "Theorem 2 covers binary attributes only"
H_ESTIMATE_CAVEAT = (
    "H(u|r) estimated by a trained attacker's cross-entropy, which upper-bounds H(u|r) "
    "(CE = H(u|r) + KL >= H(u|r)); plugged into Theorem 2 it gives an optimistic accuracy bound, "
    "an estimate, not a certificate"
)
THM1_CAVEAT = (
    "Theorem 1 right-hand side from estimated ingredients (empirical Adv is a lower estimate of "
    "the worst-case advantage, the best of several attackers on the test split, so slightly "
    "optimistic for the attacker; C_L is an upper bound): an estimate of the bound, not a certificate"
)


def _out(x: np.ndarray) -> ArrayLike:
    return float(x) if np.ndim(x) == 0 else x


def _bits(h: ArrayLike, hi: float, name: str = "h_bits") -> np.ndarray:
    """``h`` in bits, inside [0, hi] up to round-off (1e-12, clipped away); otherwise the
    one-line range error."""
    a = np.asarray(h, dtype=np.float64)
    bad = np.isnan(a) | (a < -1e-12) | (a > hi + 1e-12)
    if bad.any():
        raise range_error(name, float(a[bad].flat[0]), 0, hi, note="bits")
    return np.clip(a, 0.0, hi)


# ---------------------------------------------------------------------------------------------
# binary entropy


def binary_entropy(p: ArrayLike) -> ArrayLike:
    """H₂(p) = −p log₂ p − (1−p) log₂(1−p) in bits, with 0·log 0 = 0; p ∈ [0, 1]."""
    a = np.asarray(p, dtype=np.float64)
    check_array("p", a, 0, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = np.where(a > 0, -a * np.log2(np.where(a > 0, a, 1.0)), 0.0)
        b = 1.0 - a
        t2 = np.where(b > 0, -b * np.log2(np.where(b > 0, b, 1.0)), 0.0)
    return _out(t1 + t2)


def _h2(a: np.ndarray) -> np.ndarray:
    """binary_entropy without checks, for a ∈ (0, 1) (inner loop of the bisections)."""
    return -(a * np.log2(a) + (1.0 - a) * np.log2(1.0 - a))


def inverse_binary_entropy(h: ArrayLike) -> ArrayLike:
    """H₂⁻¹(h) ∈ [0, 1/2] for h ∈ [0, 1] bits: the p ≤ 1/2 with H₂(p) = h (vectorised bisection,
    |error| < 1e-15 in p for a given h; H₂ is flat near p = 1/2, so round trips through
    binary_entropy there lose accuracy to the float resolution of h, not to this routine)."""
    a = _bits(h, 1.0, "h")
    lo = np.zeros_like(a)
    hi = np.full_like(a, 0.5)
    for _ in range(55):  # 0.5 / 2**55 < 1.4e-17
        mid = 0.5 * (lo + hi)
        below = _h2(mid) < a
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    p = 0.5 * (lo + hi)
    p = np.where(a <= 0.0, 0.0, np.where(a >= 1.0, 0.5, p))
    return _out(p)


# ---------------------------------------------------------------------------------------------
# Theorem 2: Pr(A(r) = u) <= ...


def thm2_paper_bound(h_bits: ArrayLike) -> ArrayLike:
    """Theorem 2 as printed: Pr(A(r*) = u) ≤ 1 − H*/(2·log₂(6/H*)) (via Calabro's lemma
    H₂⁻¹(s) ≥ s/(2 log₂(6/s))); equals 1 at H* = 0 (the limit). Binary u only; H* ∈ [0, 1] bits."""
    a = _bits(h_bits, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        val = 1.0 - a / (2.0 * np.log2(6.0 / np.where(a > 0, a, 1.0)))
    return _out(np.where(a > 0, val, 1.0))


def thm2_exact_bound(h_bits: ArrayLike) -> ArrayLike:
    """The tighter form from the same proof: Pr(A(r*) = u) ≤ 1 − H₂⁻¹(H*) (0.5 at H* = 1 bit).
    Binary u only; H* ∈ [0, 1] bits."""
    return _out(1.0 - np.asarray(inverse_binary_entropy(h_bits)))


def thm2_bounds(h_bits: ArrayLike, n_values: int) -> dict[str, Any]:
    """Both Theorem 2 forms with a validity flag. For ``n_values`` > 2 the theorem does not
    apply: the bounds are NaN, ``valid`` is False and ``message`` says why (see
    :func:`fano_accuracy_bound` for a k-ary bound)."""
    if int(n_values) < 2:
        raise range_error("n_values", n_values, 2, integer=True)
    if int(n_values) > 2:
        nan = _out(np.full(np.shape(h_bits), np.nan))
        return {"paper": nan, "exact": nan, "valid": False, "message": THM2_BINARY_ONLY}
    return {
        "paper": thm2_paper_bound(h_bits),
        "exact": thm2_exact_bound(h_bits),
        "valid": True,
        "message": "",
    }


def fano_accuracy_bound(h_bits: ArrayLike, n_values: int) -> ArrayLike:
    """[MINE, not in the paper] k-ary analogue of the exact Theorem 2 via Fano's inequality:
    H(u|r) ≤ H₂(ε) + ε·log₂(k−1) for ε = Pr(A(r) ≠ u), so Pr(A(r) = u) ≤ 1 − ε_min(H) with
    ε_min the root in [0, (k−1)/k]. Equals :func:`thm2_exact_bound` for k = 2; 1/k at H = log₂ k."""
    k = int(n_values)
    if k < 2:
        raise range_error("n_values", n_values, 2, integer=True)
    hmax = math.log2(k)
    a = _bits(h_bits, hmax)
    c = math.log2(k - 1) if k > 2 else 0.0
    lo = np.zeros_like(a)
    hi = np.full_like(a, (k - 1) / k)
    for _ in range(55):
        mid = 0.5 * (lo + hi)
        below = (_h2(mid) + mid * c) < a
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    eps = 0.5 * (lo + hi)
    eps = np.where(a <= 0.0, 0.0, np.where(a >= hmax, (k - 1) / k, eps))
    return _out(1.0 - eps)


def conditional_entropy_estimate_bits(
    ce_nats: ArrayLike, n_values: int = 2
) -> tuple[ArrayLike, str]:
    """Estimate H(u|r) in bits from an attacker's test cross-entropy: CE / ln 2, clipped to
    [0, log₂ k]. Returns ``(h_bits, caveat)``.

    A (calibrated) attacker's CE is an *upper* bound on H(u|r), so plugging this into
    Theorem 2 gives an optimistic bound (an estimate, not a certificate). A conservative H*
    needs an upper estimate of I(u;r): H* ≥ H(u) − Î_upper (e.g. CLUB)."""
    k = int(n_values)
    if k < 2:
        raise range_error("n_values", n_values, 2, integer=True)
    a = np.asarray(ce_nats, dtype=np.float64)
    if np.any(np.isnan(a)):
        raise ValueError("ce_nats: got NaN; expected a cross-entropy in nats >= 0")
    return _out(np.clip(a / math.log(2.0), 0.0, math.log2(k))), H_ESTIMATE_CAVEAT


# ---------------------------------------------------------------------------------------------
# Theorem 1: Err_0 + Err_1 >= Δ_{y|u} − 2 R C_L Adv


def thm1_tradeoff(
    *, delta_y_u: ArrayLike, R: ArrayLike, C_L: ArrayLike, adv: ArrayLike
) -> dict[str, Any]:
    """Theorem 1 (Eq. 9): every task classifier C∘f has
    Err_{u=0} + Err_{u=1} ≥ rhs = Δ_{y|u} − 2·R·C_L·Adv. ``vacuous`` = rhs ≤ 0 (says nothing).
    Returns rhs, the penalty 2·R·C_L·Adv, vacuous, and the inputs echoed."""
    d = np.asarray(delta_y_u, dtype=np.float64)
    r = np.asarray(R, dtype=np.float64)
    c = np.asarray(C_L, dtype=np.float64)
    v = np.asarray(adv, dtype=np.float64)
    for name, x, lo, hi in (
        ("delta_y_u", d, 0.0, 1.0),
        ("R", r, 0.0, np.inf),
        ("C_L", c, 0.0, np.inf),
        ("adv", v, 0.0, 1.0),
    ):
        check_array(name, x, lo, hi)
    penalty = 2.0 * r * c * v
    rhs = d - penalty
    vac = rhs <= 0
    return {
        "rhs": _out(rhs),
        "penalty": _out(penalty),
        "vacuous": bool(vac) if np.ndim(vac) == 0 else vac,
        "delta_y_u": _out(d),
        "R": _out(r),
        "C_L": _out(c),
        "adv": _out(v),
    }


def thm1_informative_below(delta_y_u: float, R: float, C_L: float) -> float:
    """Theorem 1 says something (right-hand side > 0) only for Adv < Δ_{y|u} / (2·R·C_L)."""
    denom = 2.0 * float(R) * float(C_L)
    return float("inf") if denom <= 0 else float(delta_y_u) / denom


def delta_y_given_u(y: np.ndarray, u: np.ndarray) -> float:
    """Δ_{y|u} = |Pr(y=1 | u=0) − Pr(y=1 | u=1)| from counts (binary y and u, both groups
    present)."""
    y = np.asarray(y)
    u = np.asarray(u)
    if y.shape != u.shape or y.ndim != 1:
        raise ValueError(f"y, u: got shapes {y.shape} and {u.shape}; expected equal 1-D shapes")
    for name, x in (("y", y), ("u", u)):
        vals = np.unique(x)
        if not np.all(np.isin(vals, [0, 1])):
            raise ValueError(
                f"{name}: got values {vals[:8].tolist()}; Theorem 1 needs binary 0/1 codes"
            )
    if not (np.any(u == 0) and np.any(u == 1)):
        raise ValueError("u: both attribute groups u=0 and u=1 must be present")
    return float(abs(np.mean(y[u == 0]) - np.mean(y[u == 1])))


def representation_radius(R_matrix: np.ndarray) -> float:
    """R = max_i ‖r_i‖₂ over the rows of the representation matrix (n, d)."""
    a = np.asarray(R_matrix, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] == 0:
        raise ValueError(f"R_matrix: got shape {a.shape}; expected (n, d) with n >= 1")
    return float(np.sqrt(np.max(np.einsum("ij,ij->i", a, a))))


def lipschitz_logistic(w: np.ndarray) -> float:
    """Lipschitz constant of a logistic head r ↦ σ(wᵀr + b): ‖w‖₂ / 4 (σ' ≤ 1/4)."""
    a = np.asarray(w, dtype=np.float64).ravel()
    return float(np.linalg.norm(a) / 4.0)


def lipschitz_mlp(weights: Sequence[np.ndarray], *, sigmoid_output: bool = True) -> float:
    """Upper bound on an MLP's Lipschitz constant: the product of its layers' spectral norms
    (1-Lipschitz activations such as ReLU), times 1/4 for a sigmoid output. Weight matrices as
    (out, in) or (in, out); biases do not matter. Batch norm in eval mode is a diagonal layer:
    pass diag(γ/√(var+eps)) to include it."""
    if len(weights) == 0:
        raise ValueError("weights: got an empty list; expected at least one weight matrix")
    prod = 1.0
    for i, W in enumerate(weights):
        a = np.asarray(W, dtype=np.float64)
        if a.ndim == 1:
            a = a[None, :]
        if a.ndim != 2:
            raise ValueError(f"weights[{i}]: got shape {a.shape}; expected a 2-D weight matrix")
        prod *= float(np.linalg.norm(a, 2))
    return prod / 4.0 if sigmoid_output else prod


def empirical_advantage(u: np.ndarray, score: np.ndarray) -> float:
    """max over thresholds of TPR − FPR of a score for binary u (:func:`core.foundation.metrics.advantage`,
    the one meaning of advantage in privlab): an empirical *lower* estimate of the worst-case
    advantage Adv (Eq. 8); balanced accuracy of the best threshold = (1+Adv)/2. Signed: a score
    anti-correlated with u earns nothing unless the attacker negates it itself."""
    from core.foundation.metrics import advantage

    u = np.asarray(u)
    s = np.asarray(score, dtype=np.float64)
    if u.shape != s.shape or u.ndim != 1:
        raise ValueError(f"u, score: got shapes {u.shape} and {s.shape}; expected equal 1-D shapes")
    if not np.all(np.isin(np.unique(u), [0, 1])) or np.unique(u).size != 2:
        raise ValueError("u: expected binary 0/1 codes with both values present")
    return advantage(u, s)


# ---------------------------------------------------------------------------------------------
# all at once, for a Result


def tappfl_bounds(
    *,
    n_values: int,
    ce_nats: float | None = None,
    h_u_bits: float | None = None,
    mi_upper_bits: float | None = None,
    delta_y_u: float | None = None,
    R: float | None = None,
    C_L: float | None = None,
    adv: float | None = None,
) -> dict[str, float]:
    """Flat ``bound_*`` floats for a Result from measured ingredients. Every key is always
    present; values that do not apply (ingredient not given, Theorem 1/2 at k > 2) are NaN
    (null in the Result JSON), with ``bound_thm2_valid`` 0/1 saying which.

    - ``bound_h_bits``: H(u|r) estimate from the attacker CE (optimistic, see caveat);
    - ``bound_thm2_paper`` / ``bound_thm2_exact``: Theorem 2 at that estimate (binary u only;
      ``bound_thm2_valid`` 0/1);
    - ``bound_h_conservative_bits`` = H(u) − Î_upper and ``bound_thm2_exact_conservative`` when
      ``h_u_bits`` and ``mi_upper_bits`` are given;
    - ``bound_fano``: the k-ary Fano bound at the CE estimate (any k);
    - ``bound_thm1_rhs``, ``bound_thm1_penalty``, ``bound_thm1_vacuous`` (0/1) and the inputs
      ``bound_thm1_delta`` (Δ_{y|u}), ``bound_thm1_R``,
      ``bound_thm1_CL``, ``bound_thm1_adv`` (contract names).
    Caveat strings for ``info``: ``H_ESTIMATE_CAVEAT``, ``THM1_CAVEAT``, ``THM2_BINARY_ONLY``.
    """
    nan = float("nan")
    k = int(n_values)
    out: dict[str, float] = {"bound_n_values": float(k)}
    h = nan
    if ce_nats is not None:
        h = float(conditional_entropy_estimate_bits(ce_nats, k)[0])
    out["bound_h_bits"] = h
    binary = k == 2
    out["bound_thm2_valid"] = 1.0 if binary else 0.0
    if binary and not math.isnan(h):
        out["bound_thm2_paper"] = float(thm2_paper_bound(h))
        out["bound_thm2_exact"] = float(thm2_exact_bound(h))
    else:
        out["bound_thm2_paper"] = out["bound_thm2_exact"] = nan
    out["bound_fano"] = float(fano_accuracy_bound(h, k)) if not math.isnan(h) else nan
    if h_u_bits is not None and mi_upper_bits is not None:
        hc = float(np.clip(h_u_bits - mi_upper_bits, 0.0, math.log2(k)))
        out["bound_h_conservative_bits"] = hc
        out["bound_thm2_exact_conservative"] = float(thm2_exact_bound(hc)) if binary else nan
        out["bound_fano_conservative"] = float(fano_accuracy_bound(hc, k))
    else:
        out["bound_h_conservative_bits"] = out["bound_thm2_exact_conservative"] = out[
            "bound_fano_conservative"
        ] = nan
    if None not in (delta_y_u, R, C_L, adv) and binary:
        t = thm1_tradeoff(delta_y_u=delta_y_u, R=R, C_L=C_L, adv=adv)
        out.update(
            bound_thm1_rhs=float(t["rhs"]),
            bound_thm1_penalty=float(t["penalty"]),
            bound_thm1_vacuous=1.0 if t["vacuous"] else 0.0,
        )
    else:
        out.update(bound_thm1_rhs=nan, bound_thm1_penalty=nan, bound_thm1_vacuous=nan)
    for name, v in (
        ("delta", delta_y_u),
        ("R", R),
        ("CL", C_L),
        ("adv", adv),
    ):
        out[f"bound_thm1_{name}"] = nan if v is None else float(v)
    return out
