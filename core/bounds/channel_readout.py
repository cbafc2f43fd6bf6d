"""Closed-form readouts of the κ channel for the page and the runner (spec 001): the data
spectrum of a training split, the β-whitened basis of the Personalized channel, the Wiener
MMSE of an attacker who sees D̃ and the per-pixel MSE floors against κ (Theorem 1). Instant
given the cached spectrum (numpy).

Functions of arrays and numbers only: the panel that reads a config and its defense block
before any run is :func:`core.defenses.channel_live.live_channel`.
"""

from __future__ import annotations

import numpy as np

from core.bounds.channel import Spectrum, data_spectrum

#: the pixel scale every image data set is stored at
IMAGE_SCALE = "[0, 1]"


def image_spectrum(X_train: np.ndarray) -> Spectrum:
    """Σ_D's eigendecomposition of a training split of images in [0, 1] (Eq. 28)."""
    return data_spectrum(np.asarray(X_train, dtype=np.float64), scale=IMAGE_SCALE)


def spectrum_arrays(spec: Spectrum) -> dict[str, np.ndarray]:
    """The arrays that store a spectrum (a stage's output)."""
    return {"eigenvalues": spec.eigenvalues, "eigenvectors": spec.eigenvectors, "mean": spec.mean}


def spectrum_from_arrays(arrays: dict[str, np.ndarray]) -> Spectrum:
    """The :class:`Spectrum` of stored :func:`spectrum_arrays`."""
    return Spectrum(eigenvalues=np.asarray(arrays["eigenvalues"], dtype=np.float64),
                    eigenvectors=np.asarray(arrays["eigenvectors"], dtype=np.float64),
                    mean=np.asarray(arrays["mean"], dtype=np.float64), scale=IMAGE_SCALE)


def personalized_basis(spec, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(μ, w): eigenvalues μ_j of B^{-1/2} Σ_D B^{-1/2} (the β-whitened spectrum, where the
    Personalized channel is a Natural one) and w_j = (Uᵀ B U)_jj, so that the Bayes error of
    an attacker seeing D̃ is (1/d) Σ_j w_j μ_j σ / (μ_j + σ). One O(d³) eigh per β mask."""
    b = np.asarray(beta, dtype=np.float64)
    ib = 1.0 / np.sqrt(b)
    cov = spec.covariance()
    m = cov * ib[:, None] * ib[None, :]
    mu, U = np.linalg.eigh(0.5 * (m + m.T))
    mu, U = np.clip(mu[::-1], 0.0, None), U[:, ::-1]
    return mu, (U * U * b[:, None]).sum(0)


def wiener_floor(kind: str, spec, kappa: float, basis) -> float:
    """Bayes MSE per pixel of an attacker who sees D̃ (Gaussian data), per channel."""
    from core.bounds import channel as cb

    lam = spec.eigenvalues
    if kind == "natural":
        return cb.wiener_mmse(lam, cb.solve_sigma(lam, kappa))
    if kind == "white":
        return cb.wiener_mmse(lam, cb.white_sigmas(lam, kappa))
    if kind == "laplace":
        return cb.wiener_mmse(lam, 2.0 * cb.solve_laplace_b(lam, kappa) ** 2)
    mu, w = basis
    s = cb.solve_sigma(mu, kappa)
    return float(np.sum(w * mu * s / (mu + s)) / len(lam))


def bound_curves(spec, kappas: np.ndarray, channel: str | None = None,
                 basis=None) -> dict[str, list[float]]:
    """Per-pixel MSE floors against κ: Theorem 1 per round (I = κ; the same for every channel)
    and, for a ``channel`` kind (natural, white, personalized, laplace), the Wiener MMSE of an
    attacker who sees D̃ (NaN where the channel cannot reach κ); ``basis``:
    :func:`personalized_basis` for the Personalized channel."""
    from core.bounds import channel as cb

    lam = spec.eigenvalues
    out = {"Theorem 1, one round (Gaussian plug-in)":
           [cb.thm1_mse_bound(lam, float(k), per="pixel") for k in kappas]}
    if channel is not None:
        vals = []
        for k in kappas:
            try:
                vals.append(wiener_floor(channel, spec, float(k), basis))
            except ValueError:  # Laplace below its floor
                vals.append(float("nan"))
        out[f"Wiener MMSE, {channel} (attacker sees D̃)"] = vals
    return out
