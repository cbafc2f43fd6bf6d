"""Data-space controlled channels of Tan et al. 2024 (arXiv 2403.01268; spec seed-001 §3.2–3.7):
noise D̃ = D + ξ on the training data with I(D; D̃) <= κ per use, so every training round leaks
at most κ nats (DPI, Eq. 16), whatever the model.

Channel kinds (noise covariance Σ_ξ; σ is a VARIANCE, per-pixel std sqrt(σ)):

- ``natural`` (Eq. 18): σ I, σ solved from ½ Σ ln(1 + λ_i/σ) = κ;
- ``white`` (Eq. 19): Q diag(σ_i) Qᵀ with σ_i = λ_i/(e^{2κ/d_eff} − 1) — noise shaped like data;
- ``personalized`` (Eq. 20 corrected, §3.4): σ·diag β, σ from the exact β-whitened spectrum;
- ``laplace`` (DERIVED, §3.7, not in the paper): iid Laplace(0, b), b from the Gaussian bound
  plus 0.0724 nats/dim.

The noise is NOT clipped to the pixel range (spec §3.6: the paper says nothing, and clipping is
a data-dependent map after the noise, which the capacity bound does not cover as stated — it is
post-processing of D̃, so it would still satisfy the DPI, but it changes what the model trains
on; leave it to the caller). Sampling is seeded through a ``torch.Generator``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import numpy as np
import torch

from core.bounds import channel as cb
from core.catalog.channel import ChannelDefense
from core.foundation.checks import check_field, check_int, check_positive

ChannelKind = Literal["natural", "white", "personalized", "laplace"]
CHANNEL_KINDS: tuple[str, ...] = get_args(ChannelKind)

#: paper App. B: β = 50 on rows 12–19, cols 8–23 (the CelebA eye region) of a 32×32 image, read
#: as 0-based inclusive, i.e. half-open rows 12:20, cols 8:24 (8 × 16 pixels)
PAPER_EYE_RECT_32 = (12, 20, 8, 24)
PAPER_EYE_MULTIPLIER = 50.0


# ---------------------------------------------------------------------------------------------
# β prior masks (Personalized Channel)


def _image_shape(image_shape: tuple[int, int, int]) -> tuple[int, int, int]:
    try:
        c, h, w = (int(x) for x in image_shape)
    except (TypeError, ValueError):
        raise ValueError(f"image_shape: got {image_shape!r}; expected (C, H, W)") from None
    for axis, n in zip("CHW", (c, h, w), strict=True):
        check_int(f"image_shape {axis}", n, 1)
    return c, h, w


def beta_mask(image_shape: tuple[int, int, int], rect: tuple[int, int, int, int] | None,
              multiplier: float) -> np.ndarray:
    """β for the Personalized Channel (App. B): ``multiplier`` on rows r0:r1 and cols c0:c1
    (half-open, 0-based) of every channel, 1 elsewhere. Returned flattened in privlab's (C, H, W)
    order, shape (C·H·W,). ``rect=None`` gives all ones (the Natural Channel)."""
    c, h, w = _image_shape(image_shape)
    m = check_positive("beta.multiplier", multiplier)
    beta = np.ones((c, h, w), dtype=np.float64)
    if rect is not None:
        try:
            r0, r1, c0, c1 = (int(x) for x in rect)
        except (TypeError, ValueError):
            raise ValueError(f"beta.rect: got {rect!r}; expected (r0, r1, c0, c1)") from None
        # half-open rows r0:r1 and columns c0:c1, each non-empty and inside the image
        check_int("beta.rect r0", r0, 0, h - 1)
        check_int("beta.rect r1", r1, r0 + 1, h)
        check_int("beta.rect c0", c0, 0, w - 1)
        check_int("beta.rect c1", c1, c0 + 1, w)
        beta[:, r0:r1, c0:c1] = m
    return beta.ravel()


def paper_eye_rect(image_shape: tuple[int, int, int]) -> tuple[int, int, int, int]:
    """The paper's eye rectangle scaled to H×W: start = floor(12·H/32), end = ceil(20·H/32)
    (rows; same for cols with 8, 24 and W), so it covers at least the proportional area:
    32×32 → (12, 20, 8, 24), 28×28 → (10, 18, 7, 21), 8×8 → (3, 5, 2, 6)."""
    _, h, w = _image_shape(image_shape)
    r0, r1, c0, c1 = PAPER_EYE_RECT_32
    return (math.floor(r0 * h / 32), math.ceil(r1 * h / 32),
            math.floor(c0 * w / 32), math.ceil(c1 * w / 32))


def paper_eye_mask(image_shape: tuple[int, int, int]) -> np.ndarray:
    """The paper's β (App. B, "1:50"): 50 on the scaled eye rectangle, 1 elsewhere, flattened."""
    return beta_mask(image_shape, paper_eye_rect(image_shape), PAPER_EYE_MULTIPLIER)


# ---------------------------------------------------------------------------------------------
# solving a channel


@dataclass
class SolvedChannel:
    """A data-space channel solved for budget κ (nats per use).

    ``sigma``: natural and personalized the scalar σ (noise σI / σ·diag β), laplace the variance
    2b², white the scale s = 1/(e^{2κ/d_eff} − 1) with σ_i = s·λ_i.
    ``noise_var_eig`` / ``capacity_per_direction``: per eigen-direction noise variance and
    ½ ln(1 + λ_j/σ_j), for bar charts. For personalized they are in the β-whitened basis
    (eigenvalues μ_j of B^{-1/2}ΣB^{-1/2}, where the noise is σI), the basis in which the exact
    capacity decomposes. For laplace each bar includes the 0.0724-nat per-dimension penalty.
    ``pixel_std``: per-pixel noise std, shape (d,). ``capacity``: Σ of the bars (= κ).
    """

    kind: ChannelKind
    kappa: float
    d: int
    sigma: float
    noise_var_eig: np.ndarray
    capacity_per_direction: np.ndarray
    pixel_std: np.ndarray
    kappa_per_dim: float
    laplace_b: float | None = None
    beta: np.ndarray | None = None
    capacity: float = field(default=math.nan)

    def total_info(self, rounds: int, mode: cb.NoiseMode = "redraw") -> float:
        """Budget over a run (spec §2.6): rounds·κ with noise redrawn every step ("redraw"),
        κ with one fixed noisy copy of the data ("fixed")."""
        return cb.total_info(self.kappa, rounds, mode)


def _solved(kind: ChannelKind, kappa: float, sigma: float, noise: np.ndarray, caps: np.ndarray,
            std: np.ndarray, **extra: object) -> SolvedChannel:
    d = int(std.size)
    return SolvedChannel(kind=kind, kappa=float(kappa), d=d, sigma=float(sigma),
                         noise_var_eig=noise, capacity_per_direction=caps, pixel_std=std,
                         kappa_per_dim=float(kappa) / d, capacity=float(caps.sum()),
                         **extra)  # type: ignore[arg-type]


def solve_channel(kind: ChannelKind, spectrum: cb.Spectrum, kappa: float, *,
                  beta: np.ndarray | None = None, cov: np.ndarray | None = None,
                  mu: np.ndarray | None = None) -> SolvedChannel:
    """Solve the noise of channel ``kind`` for budget κ on the data ``spectrum``.

    Personalized needs ``beta`` (d,) and uses ``cov`` (default: rebuilt from the spectrum, O(d³))
    or the precomputed β-whitened eigenvalues ``mu`` (:func:`core.bounds.channel.personalized_eigenvalues`).
    """
    lam = spectrum.eigenvalues
    d = spectrum.d
    k = check_field(ChannelDefense, "kappa", kappa)
    if kind == "natural":
        s = cb.solve_sigma(lam, k)
        return _solved(kind, k, s, np.full(d, s), cb.capacity_per_direction(lam, s),
                       np.full(d, math.sqrt(s)))
    if kind == "white":
        sig = cb.white_sigmas(lam, k)
        d_eff = int(np.sum(lam > 0))
        std = np.sqrt((spectrum.eigenvectors ** 2) @ sig)  # diag(Q diag(σ_i) Qᵀ)
        return _solved(kind, k, cb.white_scale(k, d_eff), sig,
                       cb.capacity_per_direction(lam, sig), std)
    if kind == "personalized":
        if beta is None:
            raise ValueError("beta: got None; required for kind='personalized'")
        b = cb._beta(beta, d)
        if mu is None:
            mu = cb.personalized_eigenvalues(spectrum.covariance() if cov is None else cov, b)
        mu = cb._eigs(mu, "mu")
        s = cb.solve_sigma(mu, k)
        return _solved(kind, k, s, np.full(mu.size, s), cb.capacity_per_direction(mu, s),
                       np.sqrt(s * b), beta=b)
    if kind == "laplace":
        b_lap = cb.solve_laplace_b(lam, k)
        var = 2.0 * b_lap * b_lap
        caps = cb.capacity_per_direction(lam, var) + cb.LAPLACE_PENALTY_PER_DIM
        return _solved(kind, k, var, np.full(d, var), caps, np.full(d, math.sqrt(var)),
                       laplace_b=b_lap)
    raise ValueError(f"kind: got {kind!r}; allowed: {', '.join(CHANNEL_KINDS)}")


# ---------------------------------------------------------------------------------------------
# sampling


class ChannelNoise:
    """Sampler of the noise ξ of a :class:`SolvedChannel` (white needs the spectrum's
    eigenvectors Q). Noise is not clipped to the pixel range (module docstring)."""

    def __init__(self, solved: SolvedChannel, eigenvectors: np.ndarray | None = None) -> None:
        self.solved = solved
        self.kind = solved.kind
        self.d = solved.d
        if self.kind == "white":
            if eigenvectors is None or np.shape(eigenvectors) != (self.d, self.d):
                raise ValueError(f"eigenvectors: got shape {np.shape(eigenvectors)}; "
                                 f"expected ({self.d}, {self.d}) for kind='white'")
            # rows of z·(Q diag √σ_i)ᵀ have covariance Q diag(σ_i) Qᵀ
            self._mix = np.asarray(eigenvectors, dtype=np.float64) * np.sqrt(solved.noise_var_eig)
        self._cache: dict[tuple[str, torch.dtype], torch.Tensor] = {}

    @classmethod
    def from_spectrum(cls, solved: SolvedChannel, spectrum: cb.Spectrum) -> ChannelNoise:
        return cls(solved, spectrum.eigenvectors if solved.kind == "white" else None)

    def _const(self, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
        """Per-kind constant on (device, dtype): the std vector, or the white mixing matrixᵀ."""
        key = (str(device), dtype)
        if key not in self._cache:
            if self.kind == "white":
                src = self._mix.T
            elif self.kind == "laplace":  # scale b of a standard Laplace draw (std is √2·b)
                src = np.full(self.d, self.solved.laplace_b)
            else:
                src = self.solved.pixel_std
            self._cache[key] = torch.as_tensor(np.ascontiguousarray(src), dtype=dtype,
                                               device=device)
        return self._cache[key]

    def sample(self, n: int, *, generator: torch.Generator, device: torch.device | str | None = None,
               dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """n draws of ξ, shape (n, d). Random numbers come from ``generator`` on its own device
        (so a seeded generator reproduces the draws), then move to ``device``."""
        check_int("n", n, 0)
        gdev = generator.device
        dev = torch.device(device) if device is not None else gdev
        shape = (int(n), self.d)
        if self.kind == "laplace":
            # inverse CDF: u ~ U(−1, 1), ξ = −b·sign(u)·ln(1 − |u|); |u| < 1 keeps it finite
            u = torch.rand(shape, generator=generator, device=gdev, dtype=dtype) * 2 - 1
            mag = torch.log1p(-u.abs().clamp(max=1 - torch.finfo(dtype).eps))
            return (-torch.sign(u) * mag).to(dev) * self._const(dev, dtype)
        z = torch.randn(shape, generator=generator, device=gdev, dtype=dtype).to(dev)
        if self.kind == "white":
            return z @ self._const(dev, dtype)
        return z * self._const(dev, dtype)

    def perturb(self, x_flat: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """x + ξ for a batch of flattened samples (n, d); fresh noise per row, no clipping."""
        if x_flat.dim() != 2 or x_flat.shape[1] != self.d:
            raise ValueError(f"x_flat: got shape {tuple(x_flat.shape)}; expected (n, {self.d})")
        return x_flat + self.sample(x_flat.shape[0], generator=generator, device=x_flat.device,
                                    dtype=x_flat.dtype)


# ---------------------------------------------------------------------------------------------
# parameter-space channel (Thm 2, §3.1), tiny models only


def parameter_space_channel(per_sample_grads: np.ndarray, lr: float, batch_size: int,
                            kappa: float) -> float:
    """σ for parameter noise W̃_o = W_o + sqrt(σ)·ξ with capacity κ (Thm 2, Eq. 15).

    Σ_W = η²/B · Cov_per-sample(∇F) (spec §3.1); its nonzero eigenvalues are those of the
    m × m Gram matrix G_c G_cᵀ/(m − 1) of the centred per-sample gradients (m, d_m), so the
    cost is O(m² d_m + m³) instead of O(d_m³)."""
    g = np.asarray(per_sample_grads, dtype=np.float64)
    if g.ndim != 2 or g.shape[0] < 2:
        raise ValueError(f"per_sample_grads: got shape {g.shape}; expected (m, d_m), m >= 2")
    eta = check_positive("lr", lr)
    bsz = check_int("batch_size", batch_size, 1)
    gc = g - g.mean(axis=0)
    gram = gc @ gc.T / (g.shape[0] - 1)
    lam = np.linalg.eigvalsh(0.5 * (gram + gram.T))[::-1] * (eta * eta / bsz)
    return cb.solve_sigma(lam, kappa)


# ---------------------------------------------------------------------------------------------
# a config block's channel (the κ defense's builder, the page and Flower devices use this)


def channel_beta(block: Any, image_shape: tuple[int, int, int]) -> np.ndarray | None:
    """The Personalized channel's β (d,) of a channel block (``channel``, ``beta_rect``,
    ``beta_multiplier``): the block's rectangle, or the paper's eye band scaled to the image;
    None for the other channels."""
    if block.channel != "personalized":
        return None
    rect = paper_eye_rect(image_shape) if block.beta_rect is None else tuple(block.beta_rect)
    return beta_mask(image_shape, rect, block.beta_multiplier)


def channel_from_block(block: Any, spectrum: cb.Spectrum, image_shape: tuple[int, int, int],
                       mu: np.ndarray | None = None) -> tuple[SolvedChannel, ChannelNoise]:
    """(SolvedChannel, ChannelNoise) of a channel block: κ solved into the noise (Eqs. 18-20).
    ``mu``: the β-whitened eigenvalues when already known (Personalized)."""
    solved = solve_channel(block.channel, spectrum, block.kappa,
                           beta=channel_beta(block, image_shape), mu=mu)
    return solved, ChannelNoise(solved, spectrum.eigenvectors if block.channel == "white" else None)
