"""Inf2Guard's defense against property inference (Noorbakhsh et al., USENIX Security 2024;
spec 004 §2.2, Eqs. 7-13, Algorithm 2).

A per-sample encoder f_Θ, a per-sample utility head h_Ω (the task classifier C on r) and a
property-protection network g_Ψ (the simulated property adversary: a K-way classifier on the
standardised *aggregated* subset representation Agg({f(x)}_{x ∈ X_j}), mean or element-wise max) play

    max_f ( λ · min_Ψ Σ_j CE(u_j, g_Ψ(Agg f(X_j)))                          (Eq. 12, L1)
          − (1 − λ) · min_Ω Σ_j Σ_{(x_i, y_i) ∈ D_j} CE(y_i, h_Ω(f(x_i))) ) (Eq. 13, L2)

Algorithm 2 = Algorithm 1 with these losses: per minibatch of subsets, Ψ descends L1, Ω
descends L2 and Θ descends −λ·L1 + (1−λ)·L2 (ascends the adversary's loss, keeps utility),
all from one forward pass (simultaneous gradient steps, three Adam optimisers). Utility is per
sample, privacy is on the aggregate. λ = 0 is plain training (no defense), λ = 1 privacy only.
As the paper's Algorithm 1 writes it, Ω's step is on L2 itself, not (1−λ)·L2, so the head keeps
reading whatever the encoder leaves at λ = 1.

As for the membership defense (:mod:`core.defenses.inf2guard`, the official notebook's
schedule), encoder and head are first pre-trained on the subsets' rows (``pretrain_epochs``)
and the adversary on frozen aggregates, then the game runs for ``epochs``. Losses are batch
means (the paper's sums only rescale the learning rates). The release is the per-sample
representation r = f(x) and the aggregated subset representation the attacker sees.
Every random choice comes from local generators seeded by ``seed``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from core.catalog.inf2guard_property import Inf2GuardPropertyDefense
from core.checks import check_field, check_int
from core.data.subsets import AGGREGATIONS, Subsets, aggregate_torch
from core.nn import Encoder, PropertyAdversary, TaskHead, seeded
from core.progress import Progress


@dataclass
class PropertyGuardModel:
    """The trained networks: ``encoder`` f, ``head`` C = h_Ω, ``adversary`` g_Ψ (in-training,
    on aggregates made with ``aggregation``)."""

    encoder: Encoder
    head: TaskHead
    adversary: PropertyAdversary
    aggregation: str
    curves: dict[str, list[float]] = field(default_factory=dict)
    seconds: float = 0.0

    @torch.no_grad()
    def representations(self, X: Tensor, batch: int = 8192) -> Tensor:
        """r = f(x) per sample (the per-sample release)."""
        self.encoder.eval()
        X = X.reshape(len(X), -1)
        return torch.cat([self.encoder(X[i:i + batch]) for i in range(0, len(X), batch)])

    @torch.no_grad()
    def logits(self, X: Tensor) -> Tensor:
        """C(f(x)): the task classifier's logits (per-sample utility)."""
        self.head.eval()
        return self.head(self.representations(X))

    @torch.no_grad()
    def adversary_proba(self, agg: Tensor) -> Tensor:
        """The in-training adversary's Pr(property class | aggregated representation), (m, K)."""
        self.adversary.eval()
        return torch.softmax(self.adversary(agg), -1)


def _batches(n: int, batch_size: int, gen: torch.Generator) -> list[np.ndarray]:
    order = torch.randperm(n, generator=gen).numpy()
    out = [order[i:i + batch_size] for i in range(0, n, batch_size)]
    if len(out) > 1 and len(out[-1]) == 1:  # the adversary's BatchNorm needs two subsets
        out[-2:] = [np.concatenate(out[-2:])]
    return out


def train_inf2guard_property(
    X: Tensor, y: Tensor, subsets: Subsets, *, n_classes: int, tradeoff_lambda: float,
    aggregation: str = "mean", epochs: int = 20, pretrain_epochs: int = 3,
    batch_subsets: int = 32, lr: float = 1e-3, adversary_lr: float = 3e-3,
    hidden_dim: int = 64, representation_dim: int = 32, adversary_hidden: int = 64,
    seed: int = 0, progress: Progress | None = None, networks=None,
) -> PropertyGuardModel:
    """Algorithm 2 (spec 004 §2.2) with Adam on the subsets ``subsets`` of the rows of ``X``
    (the whole data set; ``subsets.index`` points into it) with task labels ``y``.

    Returns the trained networks and per-epoch curves (``utility_ce``, ``adversary_ce``,
    ``adversary_acc`` on its training batches). ``networks(generator) -> (encoder, head,
    adversary)``: networks of another architecture (an encoder role), initialised from the
    run's generator in that order; None: the MLP encoder of ``hidden_dim``."""
    check_field(Inf2GuardPropertyDefense, "tradeoff_lambda", tradeoff_lambda)
    check_int("epochs", epochs, 0, 10_000)
    check_int("pretrain_epochs", pretrain_epochs, 0, 10_000)
    check_int("batch_subsets", batch_subsets, 1, 1_000_000)
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation: got {aggregation!r}; allowed: {', '.join(AGGREGATIONS)}")
    if len(subsets) == 0:
        raise ValueError("subsets: got none; expected at least one training subset")
    t0 = time.perf_counter()
    dev = X.device
    Xf = X.reshape(len(X), -1)
    d = int(Xf.shape[1])
    K = len(subsets.ratios)
    gen = torch.Generator().manual_seed(int(seed))
    if networks is None:
        enc = seeded(lambda: Encoder(d, hidden=hidden_dim, rep_dim=representation_dim),
                     gen).to(dev)
        head = seeded(lambda: TaskHead(representation_dim, n_classes), gen).to(dev)
        adv = seeded(lambda: PropertyAdversary(representation_dim, K, hidden=adversary_hidden),
                     gen).to(dev)
    else:
        enc, head, adv = (m.to(dev) for m in networks(gen))
    index = torch.as_tensor(subsets.index, device=dev)
    mask = torch.as_tensor(subsets.mask, device=dev)
    u = torch.as_tensor(subsets.labels, dtype=torch.long, device=dev)
    opt_f = torch.optim.Adam(enc.parameters(), lr=lr)
    opt_h = torch.optim.Adam(head.parameters(), lr=lr)
    opt_g = torch.optim.Adam(adv.parameters(), lr=adversary_lr)
    curves: dict[str, list[float]] = {"utility_ce": [], "adversary_ce": [], "adversary_acc": []}
    total = max(1, pretrain_epochs + epochs)
    m = len(subsets)

    def tick(e: int, msg: str) -> None:
        if progress is not None:
            progress.update(e / total, msg)

    def forward(b: np.ndarray) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """(per-row r of the batch's real rows, their labels, the aggregates, u of the batch)."""
        idx, msk = index[b], mask[b]
        n_max = int(msk.sum(1).max())
        idx, msk = idx[:, :n_max], msk[:, :n_max]
        r = enc(Xf[idx.reshape(-1)]).reshape(len(b), n_max, -1)
        return r[msk], y[idx[msk]], aggregate_torch(r, msk, aggregation), u[b]

    # (i) pre-train encoder + utility head on the subsets' rows (the undefended model)
    rows = torch.as_tensor(subsets.rows(), device=dev)
    for e in range(pretrain_epochs):
        tick(e, f"pre-training epoch {e + 1}/{pretrain_epochs}")
        for b in _batches(len(rows), 128, gen):
            loss = F.cross_entropy(head(enc(Xf[rows[b]])), y[rows[b]])
            opt_f.zero_grad(set_to_none=True)
            opt_h.zero_grad(set_to_none=True)
            loss.backward()
            opt_f.step()
            opt_h.step()
    # (ii) the adversary on frozen aggregates
    for _ in range(max(1, pretrain_epochs)):
        for b in _batches(m, batch_subsets, gen):
            with torch.no_grad():
                _, _, agg, ub = forward(b)
            loss = F.cross_entropy(adv(agg), ub)
            opt_g.zero_grad(set_to_none=True)
            loss.backward()
            opt_g.step()
    # (iii) the game (Eq. 11 / Algorithm 2)
    lam = float(tradeoff_lambda)
    enc_params, head_params, adv_params = (list(n.parameters()) for n in (enc, head, adv))
    for e in range(epochs):
        tick(pretrain_epochs + e, f"defense epoch {e + 1}/{epochs} (λ = {lam:g})")
        sums = {"utility_ce": 0.0, "adversary_ce": 0.0, "adversary_acc": 0.0}
        steps = 0
        for b in _batches(m, batch_subsets, gen):
            r_rows, y_rows, agg, ub = forward(b)
            logits_u = adv(agg)
            l1 = F.cross_entropy(logits_u, ub)
            l2 = F.cross_entropy(head(r_rows), y_rows)
            g_f = torch.autograd.grad(-lam * l1 + (1.0 - lam) * l2, enc_params, retain_graph=True)
            g_h = torch.autograd.grad(l2, head_params, retain_graph=True)
            g_g = torch.autograd.grad(l1, adv_params)
            for ps, gs in ((enc_params, g_f), (head_params, g_h), (adv_params, g_g)):
                for p, g in zip(ps, gs, strict=True):
                    p.grad = g
            opt_f.step()
            opt_h.step()
            opt_g.step()
            sums["utility_ce"] += float(l2.detach())
            sums["adversary_ce"] += float(l1.detach())
            sums["adversary_acc"] += float((logits_u.argmax(-1) == ub).float().mean())
            steps += 1
        for k, v in sums.items():
            curves[k].append(v / max(1, steps))
    tick(total, "done")
    for net in (enc, head, adv):
        net.eval()
    return PropertyGuardModel(encoder=enc, head=head, adversary=adv, aggregation=aggregation,
                              curves=curves, seconds=time.perf_counter() - t0)
