"""Data-reconstruction attacks on shared representations r + δ (spec 004 §3.3).

- ``decoder_in_training``: the defense's own decoder adversary Ψ (the one it trained against).
- ``decoder_fresh``: the paper's attack: the attacker knows the encoder (as a query interface)
  and the noise distribution p_Φ, passes its auxiliary images through encoder + perturbation
  (a fresh δ every epoch) and trains a reconstruction network on the pairs (x, r + δ); here
  larger than Ψ (two hidden layers of ``hidden``), trained after the defense.
- ``inversion``: optimisation-based model inversion (He et al., ACSAC 2019; the authors' code):
  x̂ = argmin_{x ∈ [0,1]^d} ‖f(x) − r̃‖²/k + λ_TV·TV(x), with the exact encoder (white box),
  Adam, all targets in one batched optimisation (x = sigmoid(w) keeps the box).

Scoring reuses :func:`core.attacks.gradient_inversion.score_reconstructions` (MSE, PSNR, SSIM
under the registered names, with bootstrap intervals); each target is reconstructed from its
own release, so no matching is needed (batches of one).

The registered parts (:mod:`core.foundation.parts`) name the protocol functions :func:`in_training_decoder`,
:func:`fresh_decoder` and :func:`optimisation_inversion`: each takes a
:class:`NoisyRepresentationRelease` and returns the reconstructions (n, d); the runner calls
them through :func:`core.attacks.protocol.run_attack`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from core.foundation.progress import Progress
from core.foundation.seeds import derive
from core.models.nn import Decoder, seeded


class NoiseChannel(Protocol):
    """The noise distribution p_Φ as the attacker knows it: ``release(r, gen)`` returns r + δ
    with a fresh δ (:class:`core.defenses.inf2guard_reconstruction.Perturbation` is one). The
    attack needs only this sampler, not the defense's module."""

    def release(self, r: Tensor, gen: torch.Generator | None = None) -> Tensor: ...


@torch.no_grad()
def decode(decoder: Decoder, Z: Tensor) -> Tensor:
    """Reconstructions (n, d) of released representations Z (n, k)."""
    decoder.eval()
    return decoder(Z)


def train_fresh_decoder(encoder: torch.nn.Module, perturbation: NoiseChannel, X_aux: Tensor, *,
                        hidden: int = 512, layers: int = 2, epochs: int = 30,
                        batch_size: int = 64, lr: float = 1e-3, seed: int = 0,
                        progress: Progress | None = None) -> Decoder:
    """The attacker's decoder on its auxiliary rows: pairs (x, f(x) + δ) with δ ~ p_Φ redrawn
    every epoch (it knows the noise distribution, not the draws released for the targets).
    Trained until the MSE on a held-out 10 % of the aux rows stops falling, at most ``epochs``
    (:func:`core.engine.training.train_until_plateau`, the split drawn by ``core.foundation.seeds.stream(seed,
    "early_stopping", "fresh_decoder")``; the best epoch's weights are kept)."""
    from core.engine.training import train_until_plateau, validation_rows

    dev = X_aux.device
    Xa = X_aux.reshape(len(X_aux), -1)
    with torch.no_grad():
        R = encoder(Xa)
    gen = torch.Generator().manual_seed(int(seed))
    dec = seeded(lambda: Decoder(R.shape[1], Xa.shape[1], hidden=hidden, layers=layers), gen).to(dev)
    with torch.no_grad():
        Z = [perturbation.release(R, gen)]

    def redraw(epoch: int, _log) -> None:  # a fresh δ for the next epoch
        if progress is not None:
            progress.update(epoch / max(1, epochs), f"fresh decoder epoch {epoch}/{epochs}")
        with torch.no_grad():
            Z[0] = perturbation.release(R, gen)

    train_until_plateau(dec, lambda rows: F.mse_loss(dec(Z[0][rows]), Xa[rows]),
                        validation_rows(len(Xa), 0.1, int(seed), "fresh_decoder"),
                        max_epochs=epochs, batch_size=batch_size, lr=lr, generator=gen,
                        on_epoch=redraw)
    dec.eval()
    return dec


def invert_representations(encoder: torch.nn.Module, Z: Tensor, image_shape: tuple[int, int, int],
                           *, iterations: int = 300, lr: float = 0.05, tv: float = 0.05,
                           seed: int = 0, progress: Progress | None = None) -> Tensor:
    """Optimisation inversion of every row of Z (n, k) at once; returns x̂ (n, d) in [0, 1].

    Starts from mid-grey (w = 0) as the authors' code starts from a constant image; the
    objective is a sum over targets, so each row's gradient is its own."""
    from core.attacks.gradient_inversion import total_variation

    del seed  # deterministic: fixed start, full-batch Adam
    encoder.eval()
    for p in encoder.parameters():
        p.requires_grad_(False)
    n, d = len(Z), int(np.prod(image_shape))
    w = torch.zeros(n, d, device=Z.device, requires_grad=True)
    opt = torch.optim.Adam([w], lr=lr, amsgrad=True)
    k = Z.shape[1]
    try:
        for it in range(iterations):
            if progress is not None and it % 25 == 0:
                progress.update(it / max(1, iterations), f"inversion step {it}/{iterations}")
            x = torch.sigmoid(w)
            fit = ((encoder(x) - Z) ** 2).sum(1) / k
            loss = fit.sum()
            if tv > 0:
                loss = loss + tv * total_variation(x.reshape(n, *image_shape)).sum()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    finally:
        for p in encoder.parameters():
            p.requires_grad_(True)
    return torch.sigmoid(w).detach()


@dataclass(frozen=True)
class NoisyRepresentationRelease:
    """What the reconstruction attacker observes: ``targets`` r + δ (n, k), one noise draw per
    target image, with the ``encoder`` (a query interface or white box, per the attack) and the
    noise distribution p_Φ (``perturbation``); ``decoder``: the defense's own decoder Ψ."""

    kind: ClassVar[str] = "noisy_representation"
    targets: Tensor
    encoder: torch.nn.Module
    perturbation: NoiseChannel
    image_shape: tuple[int, int, int]
    decoder: Decoder | None = None


def in_training_decoder(release: NoisyRepresentationRelease, knowledge: Any = None,
                        **_: Any) -> Tensor:
    """The defense's own decoder Ψ on the released r + δ."""
    if release.decoder is None:
        raise ValueError("release.decoder: the release carries no in-training decoder")
    return decode(release.decoder, release.targets)


def fresh_decoder(release: NoisyRepresentationRelease, knowledge: Any, *, fresh_hidden: int,
                  fresh_epochs: int, seed: int, lr: float = 1e-3, batch_size: int = 64,
                  progress: Progress | None = None, **_: Any) -> Tensor:
    """A decoder trained afterwards on the attacker's auxiliary images
    (``knowledge.extra["aux_images"]``) through the encoder and p_Φ, applied to the release."""
    dec = train_fresh_decoder(release.encoder, release.perturbation,
                              knowledge.extra["aux_images"], hidden=fresh_hidden,
                              epochs=fresh_epochs, lr=lr, batch_size=batch_size,
                              seed=derive(seed, "fresh_decoder"), progress=progress)
    return decode(dec, release.targets)


def optimisation_inversion(release: NoisyRepresentationRelease, knowledge: Any = None, *,
                           inversion_iterations: int, inversion_tv: float,
                           progress: Progress | None = None, **_: Any) -> Tensor:
    """:func:`invert_representations` of the released r + δ through the encoder."""
    return invert_representations(release.encoder, release.targets, release.image_shape,
                                  iterations=inversion_iterations, tv=inversion_tv,
                                  progress=progress)


def score(recon: np.ndarray, targets: np.ndarray, image_shape: tuple[int, int, int], *,
          seed: int = 0) -> dict[str, Any]:
    """MSE / PSNR / SSIM of reconstructions (n, d) against the targets (n, d), each one image
    (batches of one: nothing to match), with 95 % bootstrap intervals."""
    from core.attacks.gradient_inversion import score_reconstructions

    r = np.asarray(recon, np.float64).reshape(len(recon), 1, *image_shape)
    t = np.asarray(targets, np.float64).reshape(len(targets), 1, *image_shape)
    return score_reconstructions(r, t, None, None, n_boot=500, seed=seed)
