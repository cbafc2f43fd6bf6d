"""Inf2Guard's defense against membership inference (Noorbakhsh et al., USENIX Security 2024;
spec 004 §2.1, Algorithm 1).

An encoder f_Θ, a utility head h_Ω (task classifier C on r) and a membership-protection
network g_Ψ (the simulated adversary, a binary classifier on r) play the game of Eq. (6):

    max_f ( λ · min_Ψ CE(u, g_Ψ(f(x)))  over members D1 ∪ non-members D0
          − (1 − λ) · min_Ω CE(y, h_Ω(f(x)))  over members D1 )

per minibatch: Ψ descends its CE on (r, u), Ω descends its CE on the members' (r, y), and Θ
descends  −λ·L1 + (1−λ)·L2  (ascends the adversary's loss, descends the utility loss). λ = 0 is
plain training (no defense), λ = 1 privacy only. The released model is C∘f (what LiRA / RMIA
query) together with the representations r (what the paper's representation attack reads).

As in the official notebook (spec §2.1), the encoder and head are first pre-trained on the
members (``pretrain_epochs``) and the adversary on frozen features, then the game runs for
``epochs``. Losses are batch means (the paper's sums without normalisation only rescale the
learning rates). Every random choice comes from local generators seeded by ``seed``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from core.catalog.inf2guard import Inf2GuardDefense
from core.checks import check_field, check_int
from core.nn import AttributeAdversary, Encoder, TaskHead, seeded
from core.noisy_training import GradientCanary, add_canary_term
from core.progress import Progress


@dataclass
class Inf2GuardModel:
    """The trained networks: ``encoder`` f, ``head`` C = h_Ω, ``adversary`` g_Ψ (in-training)."""

    encoder: Encoder
    head: TaskHead
    adversary: AttributeAdversary
    curves: dict[str, list[float]] = field(default_factory=dict)
    seconds: float = 0.0

    @torch.no_grad()
    def representations(self, X: Tensor) -> Tensor:
        """r = f(x), one row per input (a conv encoder's feature maps flattened)."""
        self.encoder.eval()
        return self.encoder(X).flatten(1)

    @torch.no_grad()
    def logits(self, X: Tensor) -> Tensor:
        """C(f(x)): the released task model's logits."""
        self.encoder.eval()
        self.head.eval()
        return self.head(self.encoder(X))

    @torch.no_grad()
    def membership_proba(self, X: Tensor) -> Tensor:
        """The in-training adversary's Pr(member | r) (the attacker the defense fought)."""
        self.encoder.eval()
        self.adversary.eval()
        return torch.softmax(self.adversary(self.encoder(X)), -1)[:, 1]


class TwoLogits(torch.nn.Module):
    """A one-logit membership network z as the game's two-class adversary: logits (0, z), so
    softmax gives Pr(member) = σ(z) and the cross-entropy is the binary one."""

    def __init__(self, net: torch.nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, r: Tensor) -> Tensor:
        z = self.net(r).reshape(len(r), 1)
        return torch.cat([torch.zeros_like(z), z], dim=1)


#: ``networks(generator) -> (encoder f, utility head h, adversary g)``: the game's networks
#: initialised from the run's generator, in that order
Networks = Callable[[torch.Generator], tuple[torch.nn.Module, torch.nn.Module, torch.nn.Module]]


def _batches(n: int, batch_size: int, gen: torch.Generator, device) -> list[Tensor]:
    order = torch.randperm(n, generator=gen).to(device)
    return [order[i:i + batch_size] for i in range(0, n, batch_size)]


def train_inf2guard(X_members: Tensor, y_members: Tensor, X_nonmembers: Tensor, *,
                    n_classes: int, tradeoff_lambda: float, epochs: int = 20,
                    pretrain_epochs: int = 5, batch_size: int = 64, lr: float = 1e-3,
                    adversary_lr: float = 3e-3, hidden_dim: int = 128,
                    representation_dim: int = 64, adversary_hidden: int = 64, seed: int = 0,
                    progress: Progress | None = None,
                    canary: GradientCanary | None = None,
                    networks: Networks | None = None) -> Inf2GuardModel:
    """Algorithm 1 (spec 004 §2.1) with Adam; returns the trained networks and per-epoch
    curves (``utility_ce``, ``adversary_ce``, ``adversary_acc`` on its training batches).

    ``canary``: white-box audit canaries (:class:`core.noisy_training.GradientCanary`)
    on the released model's parameters (encoder, then head), entering each encoder/head step
    where one member's utility gradient would: term / B in pre-training (B members per batch),
    (1 − λ)·term / B₁ in the game (B₁ members in the batch), each canary taking part with a
    member row's rate (B / rows per epoch). ``networks``: the game's networks from a
    registered architecture's roles (:class:`TwoLogits` around a one-logit adversary); None:
    the MLP encoder, head and adversary of ``hidden_dim`` / ``representation_dim``."""
    check_field(Inf2GuardDefense, "tradeoff_lambda", tradeoff_lambda)
    check_int("epochs", epochs, 0, 10_000)
    check_int("pretrain_epochs", pretrain_epochs, 0, 10_000)
    check_int("batch_size", batch_size, 1, 1_000_000)
    if X_members.shape[0] == 0 or X_nonmembers.shape[0] == 0:
        raise ValueError(f"X_nonmembers: got {X_members.shape[0]} members and "
                         f"{X_nonmembers.shape[0]} non-members; both must be non-empty")
    if X_members.shape[1:] != X_nonmembers.shape[1:]:
        raise ValueError(f"X_nonmembers: got rows of shape {tuple(X_nonmembers.shape[1:])}; "
                         f"expected {tuple(X_members.shape[1:])} like X_members")
    t0 = time.perf_counter()
    dev = X_members.device
    d = int(np.prod(X_members.shape[1:]))
    gen = torch.Generator().manual_seed(int(seed))
    if networks is None:
        enc = seeded(lambda: Encoder(d, hidden=hidden_dim, rep_dim=representation_dim), gen).to(dev)
        head = seeded(lambda: TaskHead(representation_dim, n_classes), gen).to(dev)
        adv = seeded(lambda: AttributeAdversary(representation_dim, 2, hidden=adversary_hidden),
                     gen).to(dev)
    else:
        enc, head, adv = (m.to(dev) for m in networks(gen))
    Xm, Xn = X_members.reshape(len(X_members), -1), X_nonmembers.reshape(len(X_nonmembers), -1)
    X_all = torch.cat([Xm, Xn])
    u_all = torch.cat([torch.ones(len(Xm), dtype=torch.long, device=dev),
                       torch.zeros(len(Xn), dtype=torch.long, device=dev)])
    # the adversary trains class-balanced: an imbalanced u must not let it settle on the majority
    w_u = torch.tensor([len(X_all) / (2 * len(Xn)), len(X_all) / (2 * len(Xm))], device=dev)
    opt_f = torch.optim.Adam(list(enc.parameters()) + list(head.parameters()), lr=lr)
    opt_g = torch.optim.Adam(adv.parameters(), lr=adversary_lr)
    curves: dict[str, list[float]] = {"utility_ce": [], "adversary_ce": [], "adversary_acc": []}
    total = max(1, pretrain_epochs + epochs)

    def tick(e: int, msg: str) -> None:
        if progress is not None:
            progress.update(e / total, msg)

    released = list(enc.parameters()) + list(head.parameters())
    if canary is not None:
        canary.bind(released)
    # (i) pre-train encoder + utility head on the members (the undefended model)
    for e in range(pretrain_epochs):
        tick(e, f"pre-training epoch {e + 1}/{pretrain_epochs}")
        for idx in _batches(len(Xm), batch_size, gen, dev):
            loss = F.cross_entropy(head(enc(Xm[idx])), y_members[idx])
            opt_f.zero_grad(set_to_none=True)
            loss.backward()
            if canary is not None:
                add_canary_term(released, canary.step_term(min(1.0, batch_size / len(Xm))),
                                len(idx))
            opt_f.step()
    # (ii) the adversary on frozen features
    with torch.no_grad():
        R_all = enc(X_all)
    for _ in range(max(1, pretrain_epochs)):
        for idx in _batches(len(X_all), batch_size, gen, dev):
            loss = F.cross_entropy(adv(R_all[idx]), u_all[idx], weight=w_u)
            opt_g.zero_grad(set_to_none=True)
            loss.backward()
            opt_g.step()
    # (iii) the game (Eq. 6): a minibatch of members ∪ non-members per step
    lam = float(tradeoff_lambda)
    for e in range(epochs):
        tick(pretrain_epochs + e, f"defense epoch {e + 1}/{epochs} (λ = {lam:g})")
        sums = {"utility_ce": 0.0, "adversary_ce": 0.0, "adversary_acc": 0.0}
        steps = 0
        for idx in _batches(len(X_all), batch_size, gen, dev):
            xb, ub = X_all[idx], u_all[idx]
            mem = ub == 1
            r = enc(xb)
            l1 = F.cross_entropy(adv(r), ub, weight=w_u)
            l2 = F.cross_entropy(head(r[mem]), y_members[idx[mem]]) if mem.any() else r.sum() * 0
            opt_f.zero_grad(set_to_none=True)
            (-lam * l1 + (1.0 - lam) * l2).backward()
            if canary is not None and mem.any() and lam < 1.0:
                term = canary.step_term(min(1.0, batch_size / len(X_all)))
                if term is not None:
                    add_canary_term(released, [(1.0 - lam) * t for t in term], int(mem.sum()))
            opt_f.step()
            # Ψ on detached features: the adversary keeps up with the encoder
            logits_u = adv(r.detach())
            l1_adv = F.cross_entropy(logits_u, ub, weight=w_u)
            opt_g.zero_grad(set_to_none=True)
            l1_adv.backward()
            opt_g.step()
            sums["utility_ce"] += float(l2.detach())
            sums["adversary_ce"] += float(l1_adv.detach())
            sums["adversary_acc"] += float((logits_u.argmax(-1) == ub).float().mean())
            steps += 1
        for k, v in sums.items():
            curves[k].append(v / max(1, steps))
    tick(total, "done")
    enc.eval()
    head.eval()
    adv.eval()
    return Inf2GuardModel(encoder=enc, head=head, adversary=adv, curves=curves,
                          seconds=time.perf_counter() - t0)
