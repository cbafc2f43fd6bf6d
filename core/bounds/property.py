"""Inf2Guard's property-leakage bound in its K-ary form (spec 004 §4.1, Theorem 2 and the note
below it). Pure numpy, < 1 ms.

Theorem 2 as printed covers a *binary* property: Pr(A(R) = u) ≤ 1 − H/(2·log₂(6/H)). The
experiments use K = 4, 7, 11 ratio classes, for which the same Fano argument gives the K-ary
form Pr(A(R) ≠ u) ≥ (H(u|R) − 1)/log₂(K − 1) (bits), i.e.

    Pr(A(R) = u) ≤ 1 − (H(u|R) − 1) / log₂(K − 1)                       (K-ary, weak form)

which says nothing (≥ 1: *vacuous*) whenever H(u|R) ≤ 1 bit. The tight form inverts Fano's
inequality H(u|R) ≤ H₂(ε) + ε·log₂(K − 1) exactly (:func:`core.bounds.tappfl.
fano_accuracy_bound`): 1/K at H = log₂ K, never vacuous for H > 0.

H(u|R) is *estimated* from an attacker's cross-entropy, an upper estimate of H (CE = H + KL),
so both values are estimates of the bound, optimistic for the defender, not certificates.
"""

from __future__ import annotations

import math

import numpy as np

from core.bounds.tappfl import (
    ArrayLike,
    _bits,
    _out,
    conditional_entropy_estimate_bits,
    fano_accuracy_bound,
)
from core.foundation.checks import range_error

PIA_ESTIMATE_CAVEAT = (
    "H(u|R) estimated by the lowest test cross-entropy among the property attackers, an upper "
    "estimate of H(u|R) (CE = H + KL); the bounds at it are optimistic estimates, not "
    "certificates")
PIA_K_ARY_NOTE = ("Theorem 2 is stated for a binary property; for K classes the same Fano "
                  "argument gives the K-ary form 1 − (H − 1)/log₂(K − 1)")


def _k(n_values: int) -> int:
    if int(n_values) < 3:
        raise range_error("n_values", n_values, 3, integer=True,
                          note="the K-ary form; binary u: core.bounds.tappfl.thm2_bounds")
    return int(n_values)


def kary_fano_bound(h_bits: ArrayLike, n_values: int) -> ArrayLike:
    """The K-ary weak Fano form: Pr(A(R) = u) ≤ min(1, 1 − (H − 1)/log₂(K − 1)), H ∈ [0, log₂ K]
    bits. Non-increasing in H; equals 1 (vacuous) for H ≤ 1 bit."""
    k = _k(n_values)
    a = _bits(h_bits, math.log2(k))
    return _out(np.minimum(1.0, 1.0 - (a - 1.0) / math.log2(k - 1)))


def kary_vacuous(h_bits: ArrayLike, n_values: int) -> ArrayLike:
    """True where the weak K-ary form says nothing (bound ≥ 1, i.e. H ≤ 1 bit)."""
    b = np.asarray(kary_fano_bound(h_bits, n_values))
    v = b >= 1.0 - 1e-12
    return bool(v) if v.ndim == 0 else v


def property_bounds(ce_nats: float, n_values: int) -> dict[str, float]:
    """Flat metrics from an attacker's test cross-entropy (nats): ``property_h_bits`` (the H
    estimate), ``bound_pia_fano`` (weak K-ary form), ``bound_pia_fano_exact`` (tight Fano),
    ``bound_pia_vacuous`` (1.0 when the weak form is ≥ 1)."""
    k = _k(n_values)
    h = float(conditional_entropy_estimate_bits(ce_nats, k)[0])
    return {"property_h_bits": h,
            "bound_pia_fano": float(kary_fano_bound(h, k)),
            "bound_pia_fano_exact": float(fano_accuracy_bound(h, k)),
            "bound_pia_vacuous": 1.0 if kary_vacuous(h, k) else 0.0}
