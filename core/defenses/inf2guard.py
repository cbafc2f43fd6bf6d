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
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from core.catalog.inf2guard import Inf2GuardDefense
from core.engine.hooks import CanaryHook, Game, Hook, StepState
from core.engine.loop import Objective, Supervised, fit
from core.engine.noisy_training import GradientCanary
from core.engine.recipe import Recipe
from core.foundation.checks import check_field, check_int
from core.foundation.progress import Progress
from core.models.nn import AttributeAdversary, Encoder, TaskHead, seeded


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


class MembershipGame(Game):
    """The game of Eq. (6) as the engine's hooks, on a minibatch of members ∪ non-members with
    the membership labels u: the loss term −λ·L1 + (1−λ)·L2 of the encoder and head (L1 the
    adversary's class-balanced CE on (r, u), L2 the utility CE on the members' rows), then
    Ψ's step on the same, detached features (the adversary keeps up with the encoder). A
    member's share of a canary is (1 − λ)/B₁ (B₁ members in the batch)."""

    def __init__(self, adversary: torch.nn.Module, head: torch.nn.Module, y_members: Tensor,
                 w_u: Tensor, lam: float, recipe: Recipe, optimizer: Any) -> None:
        super().__init__([adversary], recipe, optimizer=optimizer,
                         curves=("utility_ce", "adversary_ce", "adversary_acc"))
        self.adversary, self.head, self.y_members, self.w_u = adversary, head, y_members, w_u
        self.lam = float(lam)
        self._pending: tuple[Tensor, Tensor, Tensor] | None = None

    def loss(self, r: Tensor, u: Tensor, state: StepState) -> Tensor:
        mem = u == 1
        l1 = F.cross_entropy(self.adversary(r), u, weight=self.w_u)
        l2 = (F.cross_entropy(self.head(r[mem]), self.y_members[state.idx[mem]]) if mem.any()
              else r.sum() * 0)
        if state.meta.get("canaries"):
            state.meta["canary_rows"] = int(mem.sum()) if self.lam < 1.0 else 0
            state.meta["grad_weight"] = 1.0 - self.lam
        self._pending = (r.detach(), u, l2.detach())
        return -self.lam * l1 + (1.0 - self.lam) * l2

    def gradient(self, state: StepState) -> None:
        # Ψ's step touches only Ψ: taken here or after the encoder's step, the same numbers
        r, u, l2 = self._pending
        logits_u = self.adversary(r)
        l1_adv = F.cross_entropy(logits_u, u, weight=self.w_u)
        self.adversary_step(l1_adv)
        self.record(utility_ce=float(l2), adversary_ce=float(l1_adv.detach()),
                    adversary_acc=float((logits_u.argmax(-1) == u).float().mean()))


def game_networks(networks: Networks | None,
                  gen: torch.Generator, dev: Any, *builders: Callable[[], torch.nn.Module]
                  ) -> tuple[torch.nn.Module, ...]:
    """A game's networks (encoder, head, adversary) on ``dev``: ``networks(gen)`` when given
    (a registered architecture), else each builder seeded from ``gen`` in order."""
    if networks is not None:
        return tuple(m.to(dev) for m in networks(gen))
    return tuple(seeded(b, gen).to(dev) for b in builders)


def _check(tradeoff_lambda: float, epochs: int, pretrain_epochs: int, batch_size: int,
           X_members: Tensor, X_nonmembers: Tensor) -> None:
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


def _phase(progress: Progress | None, start: int, end: int, total: int) -> Progress | None:
    return None if progress is None else progress.sub(start / total, end / total)


def train_inf2guard(X_members: Tensor, y_members: Tensor, X_nonmembers: Tensor, *,
                    n_classes: int, tradeoff_lambda: float, epochs: int = 20,
                    pretrain_epochs: int = 5, batch_size: int = 64, lr: float = 1e-3,
                    adversary_lr: float = 3e-3, hidden_dim: int = 128,
                    representation_dim: int = 64, adversary_hidden: int = 64, seed: int = 0,
                    progress: Progress | None = None,
                    canary: GradientCanary | None = None,
                    networks: Networks | None = None) -> Inf2GuardModel:
    """Algorithm 1 (spec 004 §2.1) with Adam through the engine's loop (three phases sharing
    one order stream and the two optimisers); returns the trained networks and per-epoch
    curves (``utility_ce``, ``adversary_ce``, ``adversary_acc`` on its training batches).

    ``canary``: white-box audit canaries (:class:`core.engine.noisy_training.GradientCanary`)
    on the released model's parameters (encoder, then head), entering each encoder/head step
    where one member's utility gradient would: term / B in pre-training (B members per batch),
    (1 − λ)·term / B₁ in the game (B₁ members in the batch), each canary taking part with a
    member row's rate (B / rows per epoch). ``networks``: the game's networks from a
    registered architecture's roles (:class:`TwoLogits` around a one-logit adversary); None:
    the MLP encoder, head and adversary of ``hidden_dim`` / ``representation_dim``."""
    _check(tradeoff_lambda, epochs, pretrain_epochs, batch_size, X_members, X_nonmembers)
    t0 = time.perf_counter()
    dev = X_members.device
    gen = torch.Generator().manual_seed(int(seed))
    d = int(np.prod(X_members.shape[1:]))
    enc, head, adv = game_networks(
        networks, gen, dev, lambda: Encoder(d, hidden=hidden_dim, rep_dim=representation_dim),
        lambda: TaskHead(representation_dim, n_classes),
        lambda: AttributeAdversary(representation_dim, 2, hidden=adversary_hidden))
    Xm, Xn = X_members.reshape(len(X_members), -1), X_nonmembers.reshape(len(X_nonmembers), -1)
    X_all = torch.cat([Xm, Xn])
    u_all = torch.cat([torch.ones(len(Xm), dtype=torch.long, device=dev),
                       torch.zeros(len(Xn), dtype=torch.long, device=dev)])
    # the adversary trains class-balanced: an imbalanced u must not let it settle on the majority
    w_u = torch.tensor([len(X_all) / (2 * len(Xn)), len(X_all) / (2 * len(Xm))], device=dev)
    released = list(enc.parameters()) + list(head.parameters())
    pre = Recipe(epochs=int(pretrain_epochs), batch_size=int(batch_size), lr=float(lr))
    adv_recipe = Recipe(epochs=max(1, int(pretrain_epochs)), batch_size=int(batch_size),
                        lr=float(adversary_lr))
    opt_f, opt_g = pre.optimizer_for(released), adv_recipe.optimizer_for(list(adv.parameters()))
    total = max(1, pretrain_epochs + epochs)
    # (i) pre-train encoder + utility head on the members (the undefended model)
    fit(released, Objective(lambda i: F.cross_entropy(head(enc(Xm[i])), y_members[i]), len(Xm)),
        recipe=pre, order=gen, optimizer=opt_f, label="pre-training epoch",
        hooks=[] if canary is None else [CanaryHook(canary)],
        progress=_phase(progress, 0, pretrain_epochs, total))
    # (ii) the adversary on frozen features
    with torch.no_grad():
        R_all = enc(X_all)
    fit(list(adv.parameters()),
        Objective(lambda i: F.cross_entropy(adv(R_all[i]), u_all[i], weight=w_u), len(X_all)),
        recipe=adv_recipe, order=gen, optimizer=opt_g)
    # (iii) the game (Eq. 6): a minibatch of members ∪ non-members per step
    game = MembershipGame(adv, head, y_members, w_u, tradeoff_lambda, adv_recipe, opt_g)
    hooks: list[Hook] = [game] + ([] if canary is None else [CanaryHook(canary, bind=False)])
    fit(released, Supervised(X_all, u_all, forward=enc),
        recipe=Recipe(epochs=int(epochs), batch_size=int(batch_size), lr=float(lr)),
        order=gen, optimizer=opt_f, hooks=hooks,
        label=f"defense epoch (λ = {float(tradeoff_lambda):g})",
        progress=_phase(progress, pretrain_epochs, total, total))
    for net in (enc, head, adv):
        net.eval()
    return Inf2GuardModel(encoder=enc, head=head, adversary=adv, curves=game.curves,
                          seconds=time.perf_counter() - t0)
