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
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from core.catalog.inf2guard_property import Inf2GuardPropertyDefense
from core.data.subsets import AGGREGATIONS, Subsets, aggregate_torch
from core.defenses.inf2guard import game_networks
from core.engine.hooks import Game, StepState
from core.engine.loop import Objective, fit
from core.engine.order import Shuffle
from core.engine.recipe import Recipe
from core.foundation.checks import check_field, check_int
from core.foundation.progress import Progress
from core.models.nn import Encoder, PropertyAdversary, TaskHead


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


def _split(perm: Tensor, batch_size: int) -> list[Tensor]:
    """Consecutive slices of the epoch's permutation; a last slice of one row joins the one
    before it (the adversary's BatchNorm needs two subsets)."""
    out = [perm[i:i + batch_size] for i in range(0, len(perm), batch_size)]
    if len(out) > 1 and len(out[-1]) == 1:
        out[-2:] = [torch.cat(out[-2:])]
    return out


class PropertyGame(Game):
    """The game of Eq. (11) / Algorithm 2 as the engine's hooks: from one forward pass of a
    minibatch of subsets, Θ descends −λ·L1 + (1−λ)·L2 (the loop's objective), Ω descends L2
    and Ψ descends L1 (simultaneous steps: their gradients are taken from the same graph
    before the loop's backward pass and set after it)."""

    def __init__(self, enc: torch.nn.Module, head: torch.nn.Module, adv: torch.nn.Module,
                 data: tuple[Tensor, Tensor, Tensor, Tensor, Tensor], aggregation: str,
                 lam: float, recipe: Recipe, optimizer: Any) -> None:
        super().__init__([adv], recipe, optimizer=optimizer,
                         curves=("utility_ce", "adversary_ce", "adversary_acc"))
        self.enc, self.head, self.adv, self.aggregation = enc, head, adv, aggregation
        self.Xf, self.y, self.index, self.mask, self.u = data
        self.lam = float(lam)
        self._grads: tuple[tuple[Tensor, ...], tuple[Tensor, ...]] | None = None

    def forward(self, b: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """(per-row r of the batch's real rows, their labels, the aggregates, u of the batch)."""
        idx, msk = self.index[b], self.mask[b]
        n_max = int(msk.sum(1).max())
        idx, msk = idx[:, :n_max], msk[:, :n_max]
        r = self.enc(self.Xf[idx.reshape(-1)]).reshape(len(b), n_max, -1)
        return r[msk], self.y[idx[msk]], aggregate_torch(r, msk, self.aggregation), self.u[b]

    def objective(self, b: Tensor) -> Tensor:
        r_rows, y_rows, agg, ub = self.forward(b)
        logits_u = self.adv(agg)
        l1 = F.cross_entropy(logits_u, ub)
        l2 = F.cross_entropy(self.head(r_rows), y_rows)
        self._grads = (torch.autograd.grad(l2, list(self.head.parameters()), retain_graph=True),
                       torch.autograd.grad(l1, self.adversary_params(), retain_graph=True))
        self.record(utility_ce=float(l2.detach()), adversary_ce=float(l1.detach()),
                    adversary_acc=float((logits_u.argmax(-1) == ub).float().mean()))
        return -self.lam * l1 + (1.0 - self.lam) * l2

    def gradient(self, state: StepState) -> None:
        g_h, g_g = self._grads
        for ps, gs in ((list(self.head.parameters()), g_h), (self.adversary_params(), g_g)):
            for p, g in zip(ps, gs, strict=True):
                p.grad = g
        self.optimizer.step()


def _check(tradeoff_lambda: float, epochs: int, pretrain_epochs: int, batch_subsets: int,
           aggregation: str, subsets: Subsets) -> None:
    check_field(Inf2GuardPropertyDefense, "tradeoff_lambda", tradeoff_lambda)
    check_int("epochs", epochs, 0, 10_000)
    check_int("pretrain_epochs", pretrain_epochs, 0, 10_000)
    check_int("batch_subsets", batch_subsets, 1, 1_000_000)
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation: got {aggregation!r}; allowed: {', '.join(AGGREGATIONS)}")
    if len(subsets) == 0:
        raise ValueError("subsets: got none; expected at least one training subset")


def train_inf2guard_property(
    X: Tensor, y: Tensor, subsets: Subsets, *, n_classes: int, tradeoff_lambda: float,
    aggregation: str = "mean", epochs: int = 20, pretrain_epochs: int = 3,
    batch_subsets: int = 32, lr: float = 1e-3, adversary_lr: float = 3e-3,
    hidden_dim: int = 64, representation_dim: int = 32, adversary_hidden: int = 64,
    seed: int = 0, progress: Progress | None = None, networks=None,
) -> PropertyGuardModel:
    """Algorithm 2 (spec 004 §2.2) with Adam on the subsets ``subsets`` of the rows of ``X``
    (the whole data set; ``subsets.index`` points into it) with task labels ``y``, through the
    engine's loop (three phases sharing one order stream and the optimisers).

    Returns the trained networks and per-epoch curves (``utility_ce``, ``adversary_ce``,
    ``adversary_acc`` on its training batches). ``networks(generator) -> (encoder, head,
    adversary)``: networks of another architecture (an encoder role), initialised from the
    run's generator in that order; None: the MLP encoder of ``hidden_dim``."""
    _check(tradeoff_lambda, epochs, pretrain_epochs, batch_subsets, aggregation, subsets)
    t0 = time.perf_counter()
    dev = X.device
    Xf = X.reshape(len(X), -1)
    gen = torch.Generator().manual_seed(int(seed))
    d, K = int(Xf.shape[1]), len(subsets.ratios)
    enc, head, adv = game_networks(
        networks, gen, dev, lambda: Encoder(d, hidden=hidden_dim, rep_dim=representation_dim),
        lambda: TaskHead(representation_dim, n_classes),
        lambda: PropertyAdversary(representation_dim, K, hidden=adversary_hidden))
    u = torch.as_tensor(subsets.labels, dtype=torch.long, device=dev)
    game_data = (Xf, y, torch.as_tensor(subsets.index, device=dev),
                 torch.as_tensor(subsets.mask, device=dev), u)
    # Θ and Ω: one Adam over both is theirs apart (Adam acts per parameter)
    released = list(enc.parameters()) + list(head.parameters())
    pre = Recipe(epochs=int(pretrain_epochs), batch_size=128, lr=float(lr))
    adv_recipe = Recipe(epochs=max(1, int(pretrain_epochs)), batch_size=int(batch_subsets),
                        lr=float(adversary_lr))
    opt_fh, opt_g = pre.optimizer_for(released), adv_recipe.optimizer_for(list(adv.parameters()))
    total = max(1, pretrain_epochs + epochs)
    game = PropertyGame(enc, head, adv, game_data, aggregation, tradeoff_lambda, adv_recipe, opt_g)
    # (i) pre-train encoder + utility head on the subsets' rows (the undefended model)
    rows = torch.as_tensor(subsets.rows(), device=dev)
    fit(released, Objective(lambda b: F.cross_entropy(head(enc(Xf[rows[b]])), y[rows[b]]),
                            len(rows)),
        recipe=pre, order=Shuffle(gen, split=_split), optimizer=opt_fh, label="pre-training epoch",
        progress=None if progress is None else progress.sub(0.0, pretrain_epochs / total))

    # (ii) the adversary on frozen aggregates
    def warm_up(b: Tensor) -> Tensor:
        with torch.no_grad():
            _, _, agg, ub = game.forward(b)
        return F.cross_entropy(adv(agg), ub)

    fit(list(adv.parameters()), Objective(warm_up, len(subsets)), recipe=adv_recipe,
        order=Shuffle(gen, split=_split), optimizer=opt_g)
    # (iii) the game (Eq. 11 / Algorithm 2)
    fit(list(enc.parameters()) + list(head.parameters()), Objective(game.objective, len(subsets)),
        recipe=Recipe(epochs=int(epochs), batch_size=int(batch_subsets), lr=float(lr)),
        order=Shuffle(gen, split=_split), optimizer=opt_fh, hooks=[game],
        label=f"defense epoch (λ = {float(tradeoff_lambda):g})",
        progress=None if progress is None else progress.sub(pretrain_epochs / total, 1.0))
    for net in (enc, head, adv):
        net.eval()
    return PropertyGuardModel(encoder=enc, head=head, adversary=adv, aggregation=aggregation,
                              curves=game.curves, seconds=time.perf_counter() - t0)
