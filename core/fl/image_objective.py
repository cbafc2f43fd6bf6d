"""Image classifiers in the FedAvg loop, each device training on its own noisy data (spec 001
§3.6: x̃ = x + ξ fresh per sample and step, W ← W − η∇F(W; x̃, y); labels not noised).

:class:`NoisyImageObjective` is a :class:`core.fl.types.LocalObjective` for any image
classifier ``nn.Module`` (convolutions included, no BatchNorm). Fields: ``x`` flat rows
(n, d) and ``y`` class ids; the model sees (·, *image_shape) batches.

Vectorised path (``stacked_step``): all K devices at once with ``torch.func``:
``vmap(grad(loss))`` over the stacked parameters and the (K, B, d) batches, where a device's
loss is its masked mean cross-entropy (padding rows weigh 0, so a device without a batch left
gets a zero gradient = no update with plain SGD). There is no hand-written batched form for
convolutions, and the objective cannot use :func:`core.models.nn.record_linear`. Parameters arrive in
the simulator's batched layout (:func:`core.models.nn.to_batched_layout`: stacked linear weights as
``<layer>.weight_t`` (K, in, out)); they are viewed back as (K, out, in) for
``functional_call`` (a transpose view, no copy) and updated in place in their own layout, so
``aggregate`` and :mod:`core.fl.vectorised` need no change.

Noise streams. ``perturb(x_flat, generator)`` draws from one generator the objective owns
(seeded by ``seed``, one per compute device, advancing over the whole run). The vectorised path
perturbs each step's (K·B, d) rows in one call (padding rows included, then ignored); the
sequential path perturbs each device's valid rows per step, device after device. The two
paths therefore consume the stream in different orders: they agree exactly without noise and
in distribution with noise (same per-row noise law, independent across rows and steps).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call, grad, vmap

from core.fl.types import DeviceBatch, Params, StackedBatch

__all__ = ["NoisyImageObjective"]


class NoisyImageObjective:
    """Supervised cross-entropy of an image classifier on ``x`` + ξ (``perturb``; None = clean).

    Statistics per step (sums over valid rows, before the step's update, on the inputs trained
    on): ``ce_sum``, ``correct``, ``rows``; :meth:`round_metrics` gives ``train_ce`` (nats) and
    ``train_acc``. ``perturb(x_flat (m, d), generator) -> (m, d)``.
    """

    def __init__(self, model: nn.Module, image_shape: tuple[int, ...], perturb=None,
                 seed: int = 0) -> None:
        if len(image_shape) == 0 or any(int(s) < 1 for s in image_shape):
            raise ValueError(f"image_shape: got {tuple(image_shape)}; allowed: positive dimensions")
        self.shared = model
        self.private: dict[str, nn.Module] = {}
        self.image_shape = tuple(int(s) for s in image_shape)
        self.perturb = perturb
        self.seed = int(seed)
        self._generators: dict[str, torch.Generator] = {}

    # -- noise -----------------------------------------------------------------------------

    def generator(self, device: torch.device) -> torch.Generator:
        """The objective's noise generator on ``device`` (created on first use from ``seed``)."""
        key = str(torch.device(device))
        if key not in self._generators:
            self._generators[key] = torch.Generator(device=device).manual_seed(self.seed)
        return self._generators[key]

    def reset_noise(self) -> None:
        """Restart the noise stream (as a fresh objective with the same seed)."""
        self._generators.clear()

    @torch.no_grad()
    def _noisy(self, x: Tensor) -> Tensor:
        """x̃ = perturb(x) on flat rows (the sampler's contract), or x without noise."""
        if self.perturb is None:
            return x
        flat = x.reshape(-1, x.shape[-1])
        out = self.perturb(flat, self.generator(x.device))
        if not isinstance(out, Tensor) or out.shape != flat.shape:
            got = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
            raise ValueError(f"perturb: returned {got}; allowed: a tensor of the input shape "
                             f"{tuple(flat.shape)}")
        return out.reshape(x.shape)

    # -- local steps -------------------------------------------------------------------------

    def _device_loss(self, params: Params, x: Tensor, y: Tensor, w: Tensor):
        """One device's Σ_j w_j CE_j (w = mask / count: the mean over valid rows), with the
        per-row CE and logits as auxiliary outputs."""
        logits = functional_call(self.shared, params, (x.reshape(x.shape[0], *self.image_shape),))
        ce = F.cross_entropy(logits, y, reduction="none")
        return (ce * w).sum(), (ce.detach(), logits.detach())

    def stacked_step(self, theta: Params, private: dict[str, Params], batch: StackedBatch,
                     lr: float) -> dict[str, Tensor]:
        x, y, w, mask = batch.fields["x"], batch.fields["y"], batch.weight, batch.mask
        x = self._noisy(x)
        # (K, in, out) batched-layout weights seen as (K, out, in) views for functional_call
        params = {(n[:-2] if n.endswith(".weight_t") else n):
                  (v.transpose(1, 2) if n.endswith(".weight_t") else v) for n, v in theta.items()}
        grads, (ce, logits) = vmap(grad(self._device_loss, has_aux=True))(params, x, y, w)
        with torch.no_grad():
            for n, g in grads.items():
                if n in theta:
                    theta[n].sub_(g, alpha=lr)
                else:  # stored as weight_t: the gradient of the view, transposed back
                    theta[n + "_t"].sub_(g.transpose(1, 2), alpha=lr)
            return {"ce_sum": (ce * mask).sum(1), "rows": mask.sum(1),
                    "correct": ((logits.argmax(-1) == y).to(x.dtype) * mask).sum(1)}

    def module_loss(self, theta: nn.Module, private: dict[str, nn.Module], batch: DeviceBatch,
                    lr: float) -> tuple[Tensor, dict[str, Tensor]]:
        x, y = batch.fields["x"], batch.fields["y"]
        x = self._noisy(x)
        logits = theta(x.reshape(x.shape[0], *self.image_shape))
        ce = F.cross_entropy(logits, y)
        with torch.no_grad():
            return ce, {"ce_sum": ce.detach() * len(y),
                        "rows": torch.tensor(float(len(y)), device=x.device),
                        "correct": (logits.argmax(-1) == y).to(x.dtype).sum()}

    def round_metrics(self, totals: dict[str, Tensor]) -> dict[str, float]:
        rows = float(totals["rows"]) if "rows" in totals else 0.0
        if rows <= 0:
            return {"train_ce": float("nan"), "train_acc": float("nan")}
        return {"train_ce": float(totals["ce_sum"]) / rows,
                "train_acc": float(totals["correct"]) / rows}
