"""The FIL output-perturbation defense's builder (spec 002 Part A, Eq. 17): the noise scale σ
of the release w' = w* + N(0, σ²I), from the defense block (given, from a target η, or from
(ε, δ)). The runner (:mod:`core.runs.fisher_information`) and the page's closed form call it.
"""

from __future__ import annotations

import numpy as np


def resolve_sigma(block, eta_unit: np.ndarray, *, model: str, n: int, l2: float,
                  feature_norm: float) -> tuple[float, str]:
    """σ of the FIL output perturbation: given, solved from the target η (worst case or mean
    of ``eta_unit``, η at σ = 1), or from (ε, δ) with the sensitivity 2R/(nλ) (logistic;
    R = the largest training-row norm). Returns (σ, how it was set)."""
    from core.bounds import fil as B

    if block.sigma is not None:
        return float(block.sigma), "σ given"
    if block.eta_target is not None:
        s = B.sigma_for_eta(eta_unit, eta_target=block.eta_target, reduce=block.eta_reduce)
        return s, f"σ solved so that the {block.eta_reduce} η = {block.eta_target:g}"
    s = B.sigma_from_dp(block.epsilon, block.delta, n=n, l2=l2, model=model,
                        feature_norm=feature_norm, method=block.dp_method)
    return s, (f"σ solved for ({block.epsilon:g}, {block.delta:g})-DP ({block.dp_method}; "
               f"sensitivity 2R/(nλ), R = {feature_norm:.3g})")
