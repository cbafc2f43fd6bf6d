"""Model-compression (MC) baseline of TAPPFL (spec B10; Zhu, Liu & Han 2019): magnitude pruning
of what a device uploads — the smallest-|value| entries are zeroed and only the larger ones sent.

TAPPFL prunes the extractor *parameters*; pruning the *update* Δ_k = Θ_k − Θ_global is the
FL-standard form (sparsified uploads), and is the default here. ``target='weights'`` prunes the
local parameters Θ_k = Θ_global + Δ_k instead and returns the implied update prune(Θ_k) − Θ_global;
it needs the global parameters via ``reference=``.
"""

from __future__ import annotations

from typing import Any, Literal

import torch

from core.catalog.pruning import PruningDefense
from core.foundation.checks import check_choice, check_field

Deltas = dict[str, torch.Tensor]


class PruneUpload:
    """Zero the fraction ``rate`` of entries with the smallest |value| in each device's whole
    flattened upload (all floating tensors together; exactly ⌊rate·P⌋ entries of P per device,
    ties broken by position). Vectorised over the K devices; non-floating tensors pass through.

    ``transform(deltas, generator=g)`` — the generator is accepted for the common interface and
    unused (pruning is deterministic)."""

    def __init__(self, rate: float, *, target: Literal["update", "weights"] = "update") -> None:
        check_field(PruningDefense, "rate", rate)
        check_choice("target", target, ("update", "weights"))
        self.rate = float(rate)
        self.target = target

    @property
    def needs_reference(self) -> bool:
        """The FL aggregator passes the global parameters as ``reference`` when True."""
        return self.target == "weights"

    def __call__(
        self,
        deltas: Deltas,
        *,
        generator: torch.Generator | None = None,
        reference: Deltas | None = None,
    ) -> Deltas:
        if not deltas:
            raise ValueError(
                "deltas: got an empty dict; expected name -> tensor with a leading device dim K"
            )
        keys = [k for k, t in deltas.items() if torch.is_floating_point(t)]
        if not keys:
            return dict(deltas)
        K = int(deltas[keys[0]].shape[0])
        if any(deltas[k].dim() == 0 or deltas[k].shape[0] != K for k in keys):
            raise ValueError("deltas: every tensor needs the same leading device dim K")
        if self.target == "weights":
            if reference is None:
                raise ValueError(
                    "reference: target='weights' needs the global parameters "
                    "(name -> tensor without the K dim)"
                )
            missing = [k for k in keys if k not in reference]
            if missing:
                raise ValueError(f"reference: missing tensors {missing[:5]}")
            vals = {k: deltas[k] + reference[k].unsqueeze(0).to(deltas[k]) for k in keys}
        else:
            vals = {k: deltas[k] for k in keys}
        sizes = [vals[k][0].numel() for k in keys]
        flat = torch.cat([vals[k].reshape(K, -1) for k in keys], dim=1)  # (K, P)
        P = flat.shape[1]
        n_zero = int(self.rate * P + 1e-9)
        if n_zero > 0:
            mag = flat.abs().to(torch.float64)
            # stable sort so ties are broken by position, deterministically
            idx = torch.sort(mag, dim=1, stable=True).indices[:, :n_zero]
            flat = flat.scatter(1, idx, torch.zeros_like(idx, dtype=flat.dtype))
        out = dict(deltas)
        for k, part in zip(keys, torch.split(flat, sizes, dim=1)):
            v = part.reshape(vals[k].shape)
            out[k] = v - reference[k].unsqueeze(0).to(v) if self.target == "weights" else v
        return out

    def describe(self) -> dict[str, Any]:
        """JSON-able summary for a Result's info."""
        return {"mechanism": "magnitude_pruning", "rate": self.rate, "target": self.target}
