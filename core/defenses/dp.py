"""DP-Gaussian / DP-Laplace on the uploaded device updates (TAPPFL baselines, spec B10).

Each sampled device k uploads Δ_k = Θ_k − Θ_global (all shared tensors, stacked with a leading
dim K). :class:`DPUpload` clips every device's flattened update and adds noise calibrated to a
per-round (ε, δ) before the server sees it (the noise is added on the device, so the guarantee
holds against the honest-but-curious server of the threat model, not only for the aggregate).

Sensitivity. The server sees each device's noisy upload on its own, so the guarantee is about
one upload: any two clipped updates are neighbours (``neighbouring='replace'``, the default),
sensitivity 2C. ``'add_remove'`` (sensitivity C) is the user-level notion of DP-FedAvg for the
*aggregate* only (central DP with a trusted aggregator) — not this threat model. Gaussian clips in L2 (L2 sensitivity); Laplace clips in **L1** (Laplace calibrates to L1
sensitivity) — note the L1 ball is much smaller than the L2 ball for the same C.

Calibration. Gaussian σ from the analytic Gaussian mechanism (Balle & Wang 2018, Thm 8): the
smallest σ with Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ) ≤ δ, valid for every ε > 0 (the classic
σ = Δ√(2 ln(1.25/δ))/ε, Dwork & Roth Thm A.1, needs ε < 1 and is looser). Laplace b = Δ₁/ε.
Non-floating tensors (e.g. BatchNorm's ``num_batches_tracked``) pass through untouched; floating
buffers (running mean/var) are part of the upload and are clipped/noised with the weights.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import torch
from scipy.stats import norm

from core.catalog.dp_gaussian import DPGaussianDefense
from core.foundation.checks import check_field, check_positive

Deltas = dict[str, torch.Tensor]


# ---------------------------------------------------------------------------------------------
# calibration


def _check_eps_delta(epsilon: float, delta: float, sensitivity: float) -> None:
    """(ε, δ) and the sensitivity of every calibration below (core.foundation.checks writes the errors)."""
    # DP-Gaussian's and DP-Laplace's blocks share these ranges (core.config.base)
    check_field(DPGaussianDefense, "epsilon", epsilon)
    check_field(DPGaussianDefense, "delta", delta)
    check_positive("sensitivity", sensitivity)


def classic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """σ = Δ·√(2 ln(1.25/δ))/ε (Dwork & Roth 2014, Thm A.1; proven for ε < 1 only)."""
    _check_eps_delta(epsilon, delta, sensitivity)
    return sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """Exact δ(ε) of the Gaussian mechanism with noise σ (Balle & Wang 2018, Thm 8):
    Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ), the second term in log space (no overflow)."""
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    t1 = norm.cdf(a - b)
    log_t2 = epsilon + norm.logcdf(-a - b)
    return float(max(0.0, t1 - math.exp(log_t2))) if log_t2 < 700 else 0.0


#: iteration caps of :func:`analytic_gaussian_sigma` (bracketing by doubling / halving, then
#: bisection on log σ; a bracket of 2**±1100 spans every finite double)
MAX_BRACKET_STEPS, MAX_BISECTIONS = 1100, 200


def analytic_gaussian_sigma(
    epsilon: float, delta: float, sensitivity: float = 1.0, *, rtol: float = 1e-12
) -> float:
    """Smallest σ with :func:`gaussian_delta`(σ, ε) ≤ δ: the analytic Gaussian mechanism of
    Balle & Wang (2018), by bisection on log σ (δ(σ) is decreasing). Valid for all ε > 0.

    Every loop is capped: a δ the double-precision δ(σ) cannot reach (a subnormal 1e-320,
    where the doubling would run forever) raises a ValueError naming δ instead of hanging."""
    _check_eps_delta(epsilon, delta, sensitivity)
    lo = hi = sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon
    for _ in range(MAX_BRACKET_STEPS):
        if math.isfinite(hi) and gaussian_delta(hi, epsilon, sensitivity) <= delta:
            break
        hi *= 2.0
        if not math.isfinite(hi):
            break
    if not math.isfinite(hi) or gaussian_delta(hi, epsilon, sensitivity) > delta:
        raise ValueError(f"delta: got {delta!r}; the analytic Gaussian calibration found no "
                         "finite σ (δ below double precision's reach; use δ >= 1e-12)")
    for _ in range(MAX_BRACKET_STEPS):
        if gaussian_delta(lo, epsilon, sensitivity) > delta:
            break
        lo /= 2.0
        if lo < 1e-300:
            return lo
    else:  # pragma: no cover - lo < 1e-300 ends it first
        return lo
    # invariant: δ(lo) > δ >= δ(hi)
    for _ in range(MAX_BISECTIONS):
        if hi / lo <= 1.0 + rtol:
            break
        mid = math.sqrt(lo * hi)
        if gaussian_delta(mid, epsilon, sensitivity) > delta:
            lo = mid
        else:
            hi = mid
    return hi  # the cap only binds for an rtol below double precision: hi is then exact


# ---------------------------------------------------------------------------------------------
# per-device flatten helpers (vectorised over K)


def _float_keys(deltas: Deltas) -> list[str]:
    if not deltas:
        raise ValueError(
            "deltas: got an empty dict; expected name -> tensor with a leading device dim K"
        )
    keys = [k for k, t in deltas.items() if torch.is_floating_point(t)]
    Ks = {int(deltas[k].shape[0]) for k in keys if deltas[k].dim() > 0}
    if any(deltas[k].dim() == 0 for k in keys) or len(Ks) > 1:
        raise ValueError(
            "deltas: every tensor needs the same leading device dim K; "
            f"got leading dims {sorted(Ks)}"
        )
    return keys


def _per_device_norm(deltas: Deltas, keys: list[str], p: int) -> torch.Tensor:
    """‖flatten(Δ_k)‖_p over all tensors, shape (K,), in float64."""
    acc = None
    for k in keys:
        t = deltas[k].reshape(deltas[k].shape[0], -1).double()
        part = t.abs().sum(1) if p == 1 else t.pow(2).sum(1)
        acc = part if acc is None else acc + part
    return acc if p == 1 else acc.sqrt()


def clip_updates(deltas: Deltas, clip_norm: float, *, p: Literal[1, 2] = 2) -> Deltas:
    """Scale each device's whole update by min(1, C/‖Δ_k‖_p) so that ‖Δ_k‖_p ≤ C."""
    keys = _float_keys(deltas)
    norms = _per_device_norm(deltas, keys, p)
    scale = torch.clamp(clip_norm / torch.clamp(norms, min=1e-300), max=1.0)
    out = dict(deltas)
    for k in keys:
        t = deltas[k]
        s = scale.to(device=t.device, dtype=t.dtype).reshape((-1,) + (1,) * (t.dim() - 1))
        out[k] = t * s
    return out


# ---------------------------------------------------------------------------------------------
# the upload transform


class DPUpload:
    """Clip each device's update and add Gaussian or Laplace noise for a per-round (ε, δ).

    ``transform(deltas, generator=g)`` -> noisy deltas (same keys, shapes, dtypes). Gaussian:
    L2 clip to ``clip_norm``, N(0, σ²) per entry, σ from ``calibration`` ('analytic' default or
    'classic'). Laplace: L1 clip, Laplace(0, b) per entry, b = Δ₁/ε (δ unused: pure ε-DP).
    """

    def __init__(
        self,
        mechanism: Literal["gaussian", "laplace"],
        *,
        epsilon: float,
        delta: float,
        clip_norm: float,
        neighbouring: Literal["add_remove", "replace"] = "replace",
        calibration: Literal["analytic", "classic"] = "analytic",
    ) -> None:
        if mechanism not in ("gaussian", "laplace"):
            raise ValueError(f"mechanism: got {mechanism!r}; allowed: gaussian, laplace")
        if neighbouring not in ("add_remove", "replace"):
            raise ValueError(f"neighbouring: got {neighbouring!r}; allowed: add_remove, replace")
        if calibration not in ("analytic", "classic"):
            raise ValueError(f"calibration: got {calibration!r}; allowed: analytic, classic")
        check_positive("clip_norm", clip_norm)
        _check_eps_delta(epsilon, delta, clip_norm)
        self.mechanism = mechanism
        self.epsilon = float(epsilon)
        self.delta = float(delta)
        self.clip_norm = float(clip_norm)
        self.neighbouring = neighbouring
        self.calibration = calibration
        self.sensitivity = self.clip_norm * (2.0 if neighbouring == "replace" else 1.0)
        if mechanism == "gaussian":
            f = analytic_gaussian_sigma if calibration == "analytic" else classic_gaussian_sigma
            self._scale = f(self.epsilon, self.delta, self.sensitivity)
        else:
            self._scale = self.sensitivity / self.epsilon

    @property
    def sigma(self) -> float:
        """Gaussian noise std per entry (NaN for Laplace)."""
        return self._scale if self.mechanism == "gaussian" else float("nan")

    @property
    def b(self) -> float:
        """Laplace scale per entry (NaN for Gaussian); std = √2·b."""
        return self._scale if self.mechanism == "laplace" else float("nan")

    @property
    def noise_multiplier(self) -> float:
        """Noise scale / sensitivity: σ/Δ₂ for Gaussian (as Opacus' RDP accountant takes it),
        b/Δ₁ for Laplace."""
        return self._scale / self.sensitivity

    def clip(self, deltas: Deltas) -> Deltas:
        """The clipping step alone (L2 for Gaussian, L1 for Laplace)."""
        return clip_updates(deltas, self.clip_norm, p=2 if self.mechanism == "gaussian" else 1)

    def __call__(self, deltas: Deltas, *, generator: torch.Generator) -> Deltas:
        out = self.clip(deltas)
        for k in _float_keys(deltas):
            t = out[k]
            if self.mechanism == "gaussian":
                noise = torch.randn(t.shape, generator=generator, device=t.device, dtype=t.dtype)
                out[k] = t + self._scale * noise
            else:  # Laplace(0, b) = b·(E₁ − E₂) with E₁, E₂ ~ Exp(1)
                e = torch.empty((2,) + tuple(t.shape), device=t.device, dtype=t.dtype).exponential_(
                    generator=generator
                )
                out[k] = t + self._scale * (e[0] - e[1])
        return out

    def describe(self) -> dict[str, Any]:
        """JSON-able summary for a Result's info."""
        return {
            "mechanism": self.mechanism,
            "epsilon_round": self.epsilon,
            "delta_round": self.delta if self.mechanism == "gaussian" else 0.0,
            "clip_norm": self.clip_norm,
            "clip_p": 2 if self.mechanism == "gaussian" else 1,
            "neighbouring": self.neighbouring,
            "sensitivity": self.sensitivity,
            "calibration": self.calibration
            if self.mechanism == "gaussian"
            else "laplace b = sensitivity/epsilon",
            "sigma": self.sigma,
            "b": self.b,
            "noise_multiplier": self.noise_multiplier,
        }
