"""The region of the ROC an (ε, δ)-DP mechanism allows (Kairouz, Oh & Viswanath 2015): the
largest TPR at each FPR, drawn under the membership ROC beside the accountant's ε. A bound on
numbers and arrays (no config)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from core.foundation.checks import check_array, check_positive, check_range


def dp_region(epsilon: float, delta: float, fpr: Any) -> np.ndarray:
    """Largest TPR an (ε, δ)-DP mechanism allows at each FPR (Kairouz et al. 2015):
    TPR ≤ min(1, e^ε·FPR + δ, 1 − e^{−ε}(1 − δ − FPR)); draw it on the ROC.

    e^ε·FPR is formed as exp(min(ε + ln FPR, 0)): beyond 1 the bound is 1 anyway, and e^ε
    alone overflows a double from ε ≈ 709 (a target ε of 10⁴ is a valid setting), so every
    finite ε ≥ 0 gives a finite curve."""
    epsilon = check_positive("epsilon", epsilon, zero=True)
    check_range("delta", delta, 0, 1, hi_open=True)
    f = check_array("fpr", fpr, 0, 1)
    with np.errstate(divide="ignore"):  # ln 0 = -inf: e^ε·0 = 0
        b1 = np.exp(np.minimum(epsilon + np.log(f), 0.0)) + delta
    b2 = 1.0 - math.exp(-epsilon) * (1.0 - delta - f)
    return np.clip(np.minimum(np.minimum(b1, b2), 1.0), 0.0, 1.0)
