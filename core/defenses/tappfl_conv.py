"""TAPPFL with a registered architecture's encoder as the feature extractor f(x; Θ) (spec 003
Appendix B / Table 3: TAPPFL's CIFAR-10 extractor is ``tappfl_cifar``'s ``encoder`` role).

- **Networks** (:func:`build_networks`): the extractor is the architecture's ``encoder``
  (r flattened, :func:`core.models.build_encoder`); the attribute adversary q_Ψ is the
  architecture's ``privacy`` network on r unflattened where it declares one (``tappfl_cifar``:
  the paper's VGG-style privacy network, dropout included), else the MLP adversary the
  tabular runs use; the critic T_Ω is the MLP critic :class:`core.models.nn.MICritic` on flat x and
  r (the paper's conv utility network is not built: the critic is never released nor attacked).
- **Local step** (:class:`ConvTappflObjective`): the same three updates in the same order as
  :class:`core.defenses.tappfl.TappflObjective` (Ψ on r.detach(), then Ω with the last Ψ step:
  the game's k adversary turns, which the engine takes; then Θ on −λ·CE − (1−λ)·I_JSD). All K sampled devices run at once as one grouped network
  (:class:`core.models.stacked.GroupedNet`: the K extractors' and adversaries' convolutions
  as grouped convolutions, the shadow trainer's layout), with autograd on the stacked
  tensors. BatchNorm uses each device's own batch statistics, so a device never sees another's
  rows nor a padding row: at a step where devices hold batches of different sizes (a partial
  last batch) devices of equal size run together, and an adversary turn or Θ's step sums
  the groups' losses (a device's parameters are in one group: its gradient is its own
  loss's) and takes one gradient and one update.
- **BatchNorm running statistics**: FedAvg averages Θ (the parameters) only; the statistics
  the released encoder evaluates with are re-estimated after each round from the devices'
  training rows with the global Θ (one pass, cumulative average: "precise BN"), and each
  device's Ψ_k statistics from its own rows' representations (:func:`calibrate`). The
  authors' code averages the devices' BN buffers with the weights instead.
- **Dropout** masks come from a local generator seeded by the run (:class:`SeededDropout`).
  The engine takes the adversary's turns of all devices before Θ's step, so at a step with
  several batch sizes the adversary's masks are drawn turn by turn over the groups (each
  group's first turn, then each group's second, ..., then Θ's step group by group).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from core.defenses.tappfl_step import (
    step_features,
    tappfl_module_loss,
    tappfl_module_turn,
    tappfl_round_metrics,
)
from core.fl.types import DeviceBatch, Params, StackedBatch
from core.models.nn import AttributeAdversary, MICritic, jsd_mi
from core.models.stacked import GroupedNet, SeededDropout

__all__ = ["ConvTappflObjective", "build_networks", "calibrate", "precise_bn_"]

#: what a run with an architecture says about its networks (the page shows the notes)
MODEL_NOTE = ("extractor: {arch}'s encoder at width {width:g}; adversary: its privacy network "
              "where it declares one, else the MLP adversary; critic: the MLP critic (the "
              "paper's conv utility network is not built); BatchNorm statistics re-estimated "
              "from the devices' rows after each round")

#: rows per forward pass when re-estimating BatchNorm statistics
CALIBRATION_BATCH = 256


def _dropout_stream(seed: int) -> Callable[[torch.device], torch.Generator]:
    """A per-compute-device generator for dropout masks, seeded from ``seed``."""
    gens: dict[str, torch.Generator] = {}

    def get(device: torch.device) -> torch.Generator:
        key = str(torch.device(device))
        if key not in gens:
            gens[key] = torch.Generator(device=device).manual_seed(int(seed))
        return gens[key]

    return get


def _seed_dropout_(module: nn.Module, generator) -> nn.Module:
    """Replace every ``nn.Dropout`` of ``module`` by :class:`SeededDropout` (same p)."""
    for name, child in list(module.named_children()):
        if isinstance(child, nn.Dropout):
            setattr(module, name, SeededDropout(child.p, generator))
        else:
            _seed_dropout_(child, generator)
    return module


def build_networks(arch: str, width: float, in_shape: tuple[int, ...], n_values: int, *,
                   hidden_dim: int, critic_hidden: int, seed: int
                   ) -> tuple[nn.Module, Callable[[], nn.Module], Callable[[], MICritic], int]:
    """(extractor, adversary factory, critic factory, r's dimension) for ``arch`` at ``width``
    on data of ``in_shape`` (C, H, W) (module docstring). Unseeded: the caller initialises
    them from its generator. The adversary's dropout draws from a stream seeded by ``seed``."""
    from core.foundation.parts import architecture
    from core.models import build_encoder, build_model, role_input_shape

    part = architecture(arch)
    d = int(math.prod(in_shape))
    extractor, rep_dim = build_encoder(arch, in_shape, max(n_values, 2), width)
    gen = _dropout_stream(seed)
    if "privacy" in part.roles:
        r_shape = role_input_shape(arch, in_shape, n_values, width, role="privacy")

        def make_adversary() -> nn.Module:
            head = build_model(arch, in_shape, n_values, width, role="privacy")
            return _seed_dropout_(nn.Sequential(nn.Unflatten(1, r_shape), head), gen)
    else:
        def make_adversary() -> nn.Module:
            return AttributeAdversary(rep_dim, n_values, hidden=hidden_dim)

    def make_critic() -> MICritic:
        return MICritic(d, rep_dim, n_values, hidden=critic_hidden)

    return extractor, make_adversary, make_critic, rep_dim


def _views(params: Params) -> Params:
    """Batched-layout tensors (``<layer>.weight_t`` (K, in, out)) as the module's names and
    (K, out, in) shapes (transposed views: gradients reach the stored tensors)."""
    return {(n[:-2] if n.endswith(".weight_t") else n):
            (v.transpose(1, 2) if n.endswith(".weight_t") else v) for n, v in params.items()}


def _leaves(params: Params) -> Params:
    """Detached tensors sharing storage with ``params``, requiring grad (in-place SGD on the
    stored tensors then updates them)."""
    return {n: v.detach().requires_grad_(True) for n, v in params.items()}


def _rows(params: Params, ks: Tensor) -> Params:
    """The devices ``ks``' rows of every tensor of ``params`` (gathered: differentiable, so a
    gradient reaches only those rows of a leaf)."""
    return {n: v[ks] for n, v in params.items()}


@torch.no_grad()
def _sgd(params: Params, leaves: Params, grads, lr: float) -> None:
    for (n, v), g in zip(leaves.items(), grads):
        if g is not None:
            params[n].sub_(g, alpha=lr)


class ConvTappflObjective:
    """TAPPFL's local update (module docstring) for any registered extractor; its statistics
    and :meth:`round_metrics` are the MLP objective's (:mod:`core.defenses.tappfl_step`)."""

    def __init__(self, extractor: nn.Module, adversary: nn.Module, critic: MICritic, *,
                 tradeoff_lambda: float, adversary_steps: int = 1,
                 adversary_lr_scale: float = 1.0) -> None:
        self.shared = extractor
        self.private = {"adversary": adversary, "critic": critic}
        self.lam = float(tradeoff_lambda)
        self.adversary_steps = int(adversary_steps)
        self.adv_scale = float(adversary_lr_scale)
        self.n_values = critic.n_values
        # BatchNorm's batch statistics need two rows: a device holding a one-row batch at a
        # step skips it (both forms alike)
        self.min_rows = 2 if _has_bn(extractor) or _has_bn(adversary) else 1
        gens = [m.generator for m in adversary.modules() if isinstance(m, SeededDropout)]
        # batch statistics only inside a round; running statistics come from calibrate()
        self.enc = GroupedNet(extractor, track_running_stats=False)
        self.adv = GroupedNet(adversary, track_running_stats=False,
                              generator=gens[0] if gens else None)

    # -- all sampled devices at once --------------------------------------------------------
    def _groups(self, theta: Params, batch: StackedBatch) -> list[dict]:
        """The step's device groups of equal batch size c (K, c rows each: their rows of Θ's
        leaves ``batch.scratch["th_l"]``, gathered unless the group is every device) with
        their representations r, computed once per local step (by the first adversary turn) in
        ``batch.scratch``; a size under ``min_rows`` is left out (its devices take no step)."""
        sc = batch.scratch
        if "groups" in sc:
            return sc["groups"]
        x, u, mask = batch.fields["x"], batch.fields["u"], batch.mask
        k = u.shape[0]
        counts = mask.sum(1).to(torch.long)
        sc["skipped"], sc["groups"], sc["th_l"] = [], [], _leaves(theta)
        for c in torch.unique(counts[counts > 0]).tolist():
            ks = torch.nonzero(counts == c).view(-1)
            if c < self.min_rows:
                sc["skipped"].append(ks)
                continue
            whole = len(ks) == k
            th = sc["th_l"] if whole else _rows(sc["th_l"], ks)
            sc["groups"].append({"ks": ks, "whole": whole, "c": c,
                                 "r": self.enc(_views(th), {}, x[ks, :c]),
                                 "x": x[ks, :c], "u": u[ks, :c], "roll": batch.roll[ks, :c]})
        return sc["groups"]

    def stacked_turn(self, theta: Params, private: dict[str, Params], batch: StackedBatch,
                     a: int, lr: float) -> dict[str, Tensor]:
        """All K devices' a-th adversary turn (Ψ on r.detach(), Ω with it at the last turn):
        one loss summed over the groups (each device's Ψ, Ω are in one group, so its gradient
        is its own loss's), one gradient, one SGD update; the first turn's statistics and the
        last turn's JSD estimate."""
        x, mask = batch.fields["x"], batch.mask
        k = mask.shape[0]
        groups = self._groups(theta, batch)
        last = a == self.adversary_steps - 1
        z = {"ce_sum": (k,), "correct_by_class": (k, self.n_values),
             "rows_by_class": (k, self.n_values)} if a == 0 else {}
        stats = {n: torch.zeros(shape, dtype=x.dtype, device=x.device) for n, shape in z.items()}
        if last:
            stats["jsd_sum"] = torch.zeros(k, dtype=x.dtype, device=x.device)
        if a == 0:
            stats["rows"] = mask.sum(1)
            for ks in batch.scratch["skipped"]:
                stats["rows"][ks] = 0.0
        adv_l = _leaves(private["adversary"])
        cri_l = _leaves(private["critic"]) if last else {}
        losses = []
        for g in groups:  # the groups' losses in order: the adversary's dropout draws' order
            ks, whole = g["ks"], g["whole"]
            loss, st = self._turn_loss(g, adv_l if whole else _rows(adv_l, ks),
                                       cri_l if whole else _rows(cri_l, ks), a, last)
            losses.append(loss)
            with torch.no_grad():
                for n, v in st.items():
                    stats[n][ks] = v
        if losses:
            grads = torch.autograd.grad(sum(losses[1:], losses[0]),
                                        [*adv_l.values(), *cri_l.values()], allow_unused=True)
            _sgd(private["adversary"], adv_l, grads[:len(adv_l)], lr)
            _sgd(private["critic"], cri_l, grads[len(adv_l):], lr)
        return stats

    def _turn_loss(self, g: dict, adv: Params, cri: Params, a: int, last: bool
                   ) -> tuple[Tensor, dict[str, Tensor]]:
        """One adversary turn's loss of a group of K devices with full batches of c rows each
        (Ψ's ``adv``, and Ω's ``cri`` at the last turn) and its statistics."""
        crit = self.private["critic"]
        x, u, roll, c = g["x"], g["u"], g["roll"], g["c"]
        k = u.shape[0]
        oh = F.one_hot(u, self.n_values).to(x.dtype)
        rd = g["r"].detach()
        stats: dict[str, Tensor] = {}
        logits = self.adv(_views(adv), {}, rd)
        ce_rows = F.cross_entropy(logits.reshape(k * c, -1), u.reshape(-1),
                                  reduction="none").view(k, c)
        loss = self.adv_scale * ce_rows.mean(1).sum()
        if last:
            jsd = jsd_mi(*crit.fscore_pair(cri, crit.fembed_x(cri, x),
                                           crit.fembed_r(cri, rd), oh, roll))
            loss = loss - jsd.sum()
            stats["jsd_sum"] = jsd.detach() * c
        if a == 0:
            with torch.no_grad():
                hit = (logits.argmax(-1) == u).to(x.dtype)
                stats["ce_sum"] = ce_rows.sum(1)
                stats["correct_by_class"] = (oh * hit.unsqueeze(-1)).sum(1)
                stats["rows_by_class"] = oh.sum(1)
        return loss, stats

    def stacked_step(self, theta: Params, private: dict[str, Params], batch: StackedBatch,
                     lr: float) -> dict[str, Tensor]:
        """All K devices' extractor step with the Ψ, Ω their turns left: minimise
        −λ·CE − (1−λ)·I_JSD, one loss summed over the groups, one gradient, one SGD update (no
        statistics: the turns report them)."""
        losses = []
        for g in self._groups(theta, batch):
            ks = g["ks"]
            pv = private if g["whole"] else {m: _rows(private[m], ks)
                                             for m in ("adversary", "critic")}
            losses.append(self._theta_loss(g, pv["adversary"], pv["critic"]))
        if losses:
            th_l = batch.scratch["th_l"]
            grads = torch.autograd.grad(sum(losses[1:], losses[0]), list(th_l.values()),
                                        allow_unused=True)
            _sgd(theta, th_l, grads, lr)
        return {}

    def _theta_loss(self, g: dict, adv: Params, cri: Params) -> Tensor:
        """−λ·CE − (1−λ)·I_JSD of a group of K devices with full batches of c rows each, on
        their representations r (Θ's graph) and their Ψ, Ω as constants."""
        crit = self.private["critic"]
        x, u, c, r = g["x"], g["u"], g["c"], g["r"]
        k = u.shape[0]
        oh = F.one_hot(u, self.n_values).to(x.dtype)
        loss = torch.zeros((), dtype=x.dtype, device=x.device)
        if self.lam > 0:
            logits = self.adv(_views(adv), {}, r)
            ce = F.cross_entropy(logits.reshape(k * c, -1), u.reshape(-1), reduction="none")
            loss = loss - self.lam * ce.view(k, c).mean(1).sum()
        if self.lam < 1:
            with torch.no_grad():
                ex = crit.fembed_x(cri, x)
            jsd = jsd_mi(*crit.fscore_pair(cri, ex, crit.fembed_r(cri, r), oh, g["roll"]))
            loss = loss - (1 - self.lam) * jsd.sum()
        return loss

    # -- reference form: plain modules, one device ------------------------------------------
    def _skips(self, batch: DeviceBatch) -> bool:
        return len(batch.fields["x"]) < self.min_rows

    def module_turn(self, theta: nn.Module, private: dict[str, nn.Module], batch: DeviceBatch,
                    a: int, lr: float) -> dict[str, Tensor]:
        if self._skips(batch):  # no step of Ψ, Ω; the step counts no rows
            if a:
                return {}
            x = batch.fields["x"]
            zero = torch.zeros((), dtype=x.dtype, device=x.device)
            return {"ce_sum": zero, "jsd_sum": zero, "rows": zero,
                    "correct_by_class": torch.zeros(self.n_values, dtype=x.dtype, device=x.device),
                    "rows_by_class": torch.zeros(self.n_values, dtype=x.dtype, device=x.device)}
        r = step_features(batch, lambda: theta(batch.fields["x"]))
        return tappfl_module_turn(self, r, private, batch, a, lr)

    def module_loss(self, theta: nn.Module, private: dict[str, nn.Module], batch: DeviceBatch,
                    lr: float) -> tuple[Tensor, dict[str, Tensor]]:
        if self._skips(batch):
            x = batch.fields["x"]
            # a loss that reaches no parameter of Θ: no gradient, so the engine's SGD skips Θ
            return torch.zeros((), dtype=x.dtype, device=x.device, requires_grad=True), {}
        r = step_features(batch, lambda: theta(batch.fields["x"]))
        return tappfl_module_loss(self, r, private, batch)

    def round_metrics(self, totals: dict[str, Tensor]) -> dict[str, float]:
        return tappfl_round_metrics(totals)


# ---------------------------------------------------------------------------------------------
# BatchNorm running statistics


def _has_bn(module: nn.Module) -> bool:
    return any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in module.modules())


@torch.no_grad()
def precise_bn_(module: nn.Module, rows: Tensor, batch: int = CALIBRATION_BATCH) -> None:
    """Re-estimate every BatchNorm's running statistics of ``module`` from ``rows``: one pass
    in training mode (dropout off) with a cumulative average over batches of ``batch`` rows."""
    bns = [m for m in module.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not bns or len(rows) == 0:
        return
    was = module.training
    momenta = [m.momentum for m in bns]
    module.train()
    for m in module.modules():
        if isinstance(m, nn.Dropout | SeededDropout):
            m.eval()
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
    # a batch of one row has no variance: it joins the previous batch
    starts = list(range(0, len(rows), batch))
    if len(starts) > 1 and len(rows) - starts[-1] < 2:
        starts.pop()
    for i, s in enumerate(starts):
        e = starts[i + 1] if i + 1 < len(starts) else len(rows)
        if e - s >= 2:
            module(rows[s:e])
    for m, mo in zip(bns, momenta):
        m.momentum = mo
    module.train(was)


@torch.no_grad()
def calibrate(state, X: Tensor, train_rows: Tensor) -> None:
    """The released extractor's BatchNorm statistics from every device's training rows with
    the global Θ, then each trained device's Ψ_k statistics from its own rows' r, into
    ``state.adversary_buffers`` (name → (N, ...)); nothing for networks without BatchNorm."""
    from core.fl.sequential import _load

    if _has_bn(state.extractor):
        precise_bn_(state.extractor, X[train_rows])
    adv = state.adversary
    if not _has_bn(adv):
        return
    n_dev = len(state.partition)
    buffers = state.adversary_buffers or {
        n: torch.stack([b.detach().clone()] * n_dev) for n, b in adv.named_buffers()}
    trained = (np.ones(n_dev, bool) if state.rounds_trained is None
               else np.asarray(state.rounds_trained) > 0)
    was = state.extractor.training
    state.extractor.eval()
    for k in np.flatnonzero(trained):
        rows = torch.as_tensor(state.partition[k], dtype=torch.long, device=X.device)
        _load(adv, state.fed.private["adversary"], int(k))
        precise_bn_(adv, state.extractor(X[rows]))
        for n, b in adv.named_buffers():
            buffers[n][k] = b
    state.extractor.train(was)
    state.adversary_buffers = buffers


@torch.no_grad()
def adversary_proba_modules(state, R: Tensor, ids: np.ndarray) -> Tensor:
    """Class probabilities (D, n, n_values) of the devices ``ids``' Ψ_k (and their BatchNorm
    statistics) on representations ``R``, one device after another in eval mode."""
    from core.fl.sequential import _load

    adv = state.adversary
    was = adv.training
    adv.eval()
    out = []
    try:
        for k in ids:
            _load(adv, state.fed.private["adversary"], int(k))
            if state.adversary_buffers is not None:
                for n, b in adv.named_buffers():
                    b.copy_(state.adversary_buffers[n][int(k)])
            out.append(torch.softmax(adv(R), dim=-1))
    finally:
        adv.train(was)
    return torch.stack(out)
