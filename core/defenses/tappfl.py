"""TAPPFL: task-agnostic attribute privacy in federated learning (AAAI 2024; spec B5, B6, B8).

Each device k trains the shared feature extractor r = f(x; Θ) against two local networks that
stay on the device and persist across rounds (full-version Algorithm 1):

- the attribute adversary g_Ψ (privacy term, Eq. 4): CE = mean_j CE(g_Ψ(r_j), u_j);
- the conditional-MI critic T_Ω (utility term, Eq. 6 with the JSD estimator of spec B6):
  I_JSD = mean_j[−sp(−T_Ω(x_j, r_j, u_j))] − mean_j[sp(T_Ω(x'_j, r_j, u_j))], x' = batch rolled
  by one ((j + 1) mod m).

Per local batch, in this order (the "cleaner alternative" of spec B6):

1. Ψ ← Ψ − lr·∇_Ψ CE on r.detach(), ``adversary_steps`` times;
2. Ω ← Ω − lr·∇_Ω(−I_JSD) on r.detach() (together with the last Ψ step);
3. Θ ← Θ − lr·∇_Θ[−λ·CE − (1−λ)·I_JSD] with the updated Ψ, Ω (Eq. 7; Algorithm 1 line 18 has a
   sign typo that would make Θ *help* the attacker, spec B8).

Task-agnostic: the task label y is never read while training the extractor (the FedAvg loop
only receives x and u). λ = 0 is the no-defense baseline (utility term only); the DP and
pruning baselines are λ = 0 plus an upload transform (core.defenses.dp / compression).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from core.config.schema import ConfigError, TappflConfig
from core.data.base import Dataset
from core.defenses.tappfl_presets import paper_preset, quick_preset  # noqa: F401  (re-exported: torch-free home)
from core.defenses.tappfl_step import (
    step_features,
    tappfl_module_loss,
    tappfl_module_turn,
    tappfl_round_metrics,
)
from core.fl.fedavg import run_fedavg
from core.fl.types import DeviceBatch, FedAvgState, Params, StackedBatch, UploadTransform
from core.foundation.checks import range_error
from core.foundation.device import get_device
from core.foundation.progress import Progress
from core.foundation.threads import thread_limits
from core.models.nn import (
    AttributeAdversary,
    Encoder,
    MICritic,
    init_module_,
    jsd_mi,
    record_linear,
    sgd_from_records,
)

#: central pretraining (spec B8 step 0): batch size and Adam learning rate
PRETRAIN_BATCH = 128
PRETRAIN_LR = 1e-3


# ---------------------------------------------------------------------------------------------
# the local objective


class TappflObjective:
    """TAPPFL's local update (module docstring) for :func:`core.fl.fedavg.run_fedavg`, a game:
    ``adversary_steps`` turns of Ψ (Ω with the last) per local step, in each form
    (:meth:`stacked_turn`, :meth:`module_turn`), which the engine's loops take before Θ's step
    (:meth:`stacked_step`, :meth:`module_loss`).

    Statistics per step (sums over valid rows, from the adversary's first pass on r.detach()
    before its update, i.e. on data it has not yet trained on in this step):
    ``ce_sum``, ``jsd_sum``, ``rows``, ``correct_by_class`` and ``rows_by_class`` (n_values,).
    """

    def __init__(self, extractor: nn.Module, adversary: AttributeAdversary, critic: MICritic, *,
                 tradeoff_lambda: float, adversary_steps: int = 1, adversary_lr_scale: float = 1.0) -> None:
        self.shared = extractor
        self.private = {"adversary": adversary, "critic": critic}
        self.lam = float(tradeoff_lambda)
        self.adversary_steps = int(adversary_steps)
        # Algorithm 1's lr1 (Ψ) as a multiple of lr3 (Θ). With plain SGD, scaling Ψ's CE term by
        # m is exactly a step of m·lr on Ψ (Ω's gradient does not involve the CE term).
        self.adv_scale = float(adversary_lr_scale)
        self.n_values = critic.n_values

    # -- vectorised form ------------------------------------------------------------------
    def _stacked_features(self, theta: Params, batch: StackedBatch) -> dict[str, Any]:
        """The step's r = f(x; Θ) of all K devices with the extractor's recorded linear layers
        (for Θ's fused update) and the one-hot attribute, computed once per local step (by
        the first adversary turn) in ``batch.scratch``."""
        sc = batch.scratch
        if "r" not in sc:
            x, u = batch.fields["x"], batch.fields["u"]
            sc["oh"] = F.one_hot(u, self.n_values).to(x.dtype)
            with record_linear() as enc_rec:
                sc["r"] = self.shared.fforward(theta, x, batch.dropout)
            if not enc_rec:
                raise NotImplementedError(
                    "the vectorised TAPPFL step needs an MLP extractor built from "
                    "core.models.nn.flinear (core.models.nn.Encoder); set fl.vectorised=false "
                    "for other extractors")
            sc["enc_rec"] = enc_rec
        return sc

    def stacked_turn(self, theta: Params, private: dict[str, Params], batch: StackedBatch,
                     a: int, lr: float) -> dict[str, Tensor]:
        """All K devices' a-th adversary turn (steps 1-2 of the module docstring): Ψ's SGD step
        on r.detach(), Ω's with it at the last turn. Gradients come from autograd w.r.t. each
        stacked linear layer's output, and SGD is applied fused into the weights
        (:func:`core.models.nn.record_linear` / :func:`core.models.nn.sgd_from_records`); the
        parameters themselves never require grad."""
        advm, crit = self.private["adversary"], self.private["critic"]
        adv, cri = private["adversary"], private["critic"]
        x, u, w, mask = batch.fields["x"], batch.fields["u"], batch.weight, batch.mask
        k, b = u.shape
        sc = self._stacked_features(theta, batch)
        rd, oh = sc["r"].detach(), sc["oh"]
        last = a == self.adversary_steps - 1
        stats: dict[str, Tensor] = {}
        with record_linear() as rec:
            logits = advm.fforward(adv, rd)
            ce_rows = F.cross_entropy(logits.reshape(k * b, -1), u.reshape(-1), reduction="none").view(k, b)
            loss = self.adv_scale * (ce_rows * w).sum()
            if last:
                jsd = jsd_mi(*crit.fscore_pair(cri, crit.fembed_x(cri, x), crit.fembed_r(cri, rd), oh,
                                                batch.roll), w)
                loss = loss - jsd.sum()
        if a == 0:
            with torch.no_grad():
                hit = (logits.argmax(-1) == u).to(x.dtype) * mask
                stats["ce_sum"] = (ce_rows * mask).sum(1)
                stats["rows"] = mask.sum(1)
                stats["correct_by_class"] = (oh * hit.unsqueeze(-1)).sum(1)
                stats["rows_by_class"] = (oh * mask.unsqueeze(-1)).sum(1)
        if last:
            stats["jsd_sum"] = jsd.detach() * mask.sum(1)
        ys = [y for *_, y in rec]
        sgd_from_records(rec, torch.autograd.grad(loss, ys, allow_unused=True), lr)
        return stats

    def stacked_step(self, theta: Params, private: dict[str, Params], batch: StackedBatch,
                     lr: float) -> dict[str, Tensor]:
        """All K devices' extractor step (step 3) with the Ψ, Ω their turns left: minimise
        −λ·CE − (1−λ)·I_JSD, SGD fused into Θ's recorded layers (no statistics: the turns
        report them)."""
        advm, crit = self.private["adversary"], self.private["critic"]
        adv, cri = private["adversary"], private["critic"]
        x, u, w = batch.fields["x"], batch.fields["u"], batch.weight
        k, b = u.shape
        sc = self._stacked_features(theta, batch)
        r, oh = sc["r"], sc["oh"]
        loss = torch.zeros((), dtype=x.dtype, device=x.device)
        if self.lam > 0:
            logits = advm.fforward(adv, r)
            ce_rows = F.cross_entropy(logits.reshape(k * b, -1), u.reshape(-1), reduction="none").view(k, b)
            loss = loss - self.lam * (ce_rows * w).sum()
        if self.lam < 1:
            with torch.no_grad():
                ex = crit.fembed_x(cri, x)
            er = crit.fembed_r(cri, r)
            jsd = jsd_mi(*crit.fscore_pair(cri, ex, er, oh, batch.roll), w)
            loss = loss - (1 - self.lam) * jsd.sum()
        ys = [y for *_, y in sc["enc_rec"]]
        sgd_from_records(sc["enc_rec"], torch.autograd.grad(loss, ys, allow_unused=True), lr)
        return {}

    # -- reference form: plain modules, one device ----------------------------------------
    def _features(self, theta: nn.Module, batch: DeviceBatch) -> Tensor:
        return step_features(batch, lambda: theta(batch.fields["x"], batch.dropout))

    def module_turn(self, theta: nn.Module, private: dict[str, nn.Module], batch: DeviceBatch,
                    a: int, lr: float) -> dict[str, Tensor]:
        return tappfl_module_turn(self, self._features(theta, batch), private, batch, a, lr)

    def module_loss(self, theta: nn.Module, private: dict[str, nn.Module], batch: DeviceBatch,
                    lr: float) -> tuple[Tensor, dict[str, Tensor]]:
        return tappfl_module_loss(self, self._features(theta, batch), private, batch)

    def round_metrics(self, totals: dict[str, Tensor]) -> dict[str, float]:
        return tappfl_round_metrics(totals)


# ---------------------------------------------------------------------------------------------
# training


@dataclass
class TappflState:
    """Everything a TAPPFL run leaves behind.

    ``extractor`` is the global f(·; Θ) (eval mode); ``adversary`` / ``critic`` are template
    modules whose per-device parameters live in ``fed.private['adversary'|'critic']``
    (stacked over all N devices); ``partition[k]`` holds row indices into the data set (its
    train split) of device k; ``curves`` are per-round series (adversary_ce, adversary_acc,
    adversary_bacc, jsd_mi, round_seconds, device_updates) and ``pretrain_curves`` the central
    pretraining's per-epoch JSD estimate.
    """

    extractor: nn.Module
    adversary: AttributeAdversary
    critic: MICritic
    fed: FedAvgState
    partition: list[np.ndarray]
    attribute: str
    n_values: int
    curves: dict[str, list[float]]
    pretrain_curves: dict[str, list[float]] = field(default_factory=dict)
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    #: each device's Ψ_k BatchNorm statistics (name → (N, ...)) where Ψ has BatchNorm
    adversary_buffers: dict[str, Tensor] | None = None

    @property
    def last_devices(self) -> np.ndarray:
        return self.fed.last_devices

    @property
    def rounds_trained(self) -> np.ndarray:
        return self.fed.rounds_trained


def pretrain_extractor(extractor: nn.Module, critic: MICritic, X: Tensor, u: Tensor, *,
                       epochs: int, seed: int, progress: Progress | None = None) -> dict[str, list[float]]:
    """Central pretraining of Θ⁰ (spec B8 step 0) with the **utility term only**: Θ and Ω
    jointly maximise the JSD estimate of I(x; r | u) (the λ = 0 objective), Adam lr 1e-3,
    batch 128, on the whole train split.

    The authors' code instead pretrains the extractor with a CE head on the *private* label,
    which plants u in r before the privacy game starts (and would make λ = 0 look leakier than
    it is); pretraining on the utility term is task-agnostic and attribute-neutral.
    Returns the per-epoch mean JSD estimate (``pretrain_jsd_mi``).
    """
    from core.engine.training import adam_train

    n = X.shape[0]
    gen = torch.Generator().manual_seed(int(seed))

    def neg_jsd(idx: Tensor) -> Tensor:
        x, uu = X[idx], u[idx]
        m = len(idx)
        roll = (torch.arange(m, device=X.device) + 1) % m
        oh = F.one_hot(uu, critic.n_values).to(x.dtype)
        r = extractor(x)
        return -jsd_mi(*critic.score_pair(critic.embed_x(x), critic.embed_r(r), oh, roll))

    def on_epoch(e: int, _log) -> None:
        if progress is not None:
            progress.update(e / epochs, f"pretraining epoch {e}/{epochs}")

    extractor.train()
    critic.train()
    log = adam_train([*extractor.parameters(), *critic.parameters()], neg_jsd, n, epochs=epochs,
                     batch_size=PRETRAIN_BATCH, lr=PRETRAIN_LR, generator=gen, on_epoch=on_epoch,
                     cancel_check=None if progress is None else progress.check_cancel)
    curve = [-v for v in log.train_loss]  # per-epoch mean JSD estimate (batch-size weighted)
    return {"pretrain_jsd_mi": curve}


def _check_devices(cfg: TappflConfig, n_train: int) -> None:
    if cfg.fl.num_devices > n_train:
        raise ConfigError([str(range_error(
            "fl.num_devices", cfg.fl.num_devices, 1, n_train,
            note="the number of training rows; every device needs data"))])


def build_partition(cfg: TappflConfig, ds: Dataset) -> list[np.ndarray]:
    """Split the train split's rows over ``cfg.fl.num_devices`` devices (cfg.fl.partition);
    returns dataset row indices per device. ``iid`` ignores the task label; ``dirichlet``
    uses it to skew the data layout (label skew) — the training objective never sees it."""
    from core.data import partition

    train = ds.split("train")
    _check_devices(cfg, len(train))
    u = ds.attribute(cfg.data.private_attribute)[train]
    try:
        parts = partition(ds.y[train], num_clients=cfg.fl.num_devices, scheme=cfg.fl.partition,
                          alpha=cfg.fl.alpha, attribute=u, seed=cfg.seed)
    except ValueError as exc:
        raise ConfigError([(
            f"fl.partition: {cfg.fl.partition!r} with fl.num_devices={cfg.fl.num_devices} and "
            f"fl.alpha={cfg.fl.alpha:g} cannot split {len(train)} training rows ({exc})"
        )]) from None
    return [train[p] for p in parts]


def _init_stacked(make: Callable[[], nn.Module], n: int, generator: torch.Generator) -> Params:
    """``n`` independently initialised copies of ``make()``, drawn one after another from
    ``generator`` (:func:`core.models.nn.init_module_`), stacked per parameter name (leading dim n)."""
    from torch.func import stack_module_state

    params, _ = stack_module_state([init_module_(make(), generator) for _ in range(n)])
    return {k: v.detach().clone() for k, v in params.items()}


def train_tappfl(
    cfg: TappflConfig,
    ds: Dataset,
    *,
    upload_transform: UploadTransform | None = None,
    progress: Progress | None = None,
    on_round: Callable[[int, TappflState], None] | None = None,
    partition: list[np.ndarray] | None = None,
    vectorised: bool | None = None,
    num_threads: int | None = None,
) -> TappflState:
    """Pretrain Θ⁰ centrally (``cfg.pretrain_epochs``, utility term only), then run
    ``cfg.fl.rounds`` FedAvg rounds of the TAPPFL local objective at λ = ``cfg.tradeoff_lambda``.

    The extractor is :class:`core.models.nn.Encoder` on the flattened features with the default
    ``cfg.model``, else the architecture's encoder (:mod:`core.defenses.tappfl_conv`: its
    privacy network as Ψ where it declares one, all devices as one grouped network, BatchNorm
    statistics re-estimated after each round); each device's Ψ_k is initialised independently
    and its Ω_k from the pretrained critic.
    ``upload_transform`` (DP noise, pruning) acts on the uploaded updates;
    ``on_round(r, state)`` runs after each round; ``progress`` gets 10 % for pretraining and
    the rest for the rounds. ``vectorised`` overrides ``cfg.fl.vectorised``. Threads: None
    (default) sets none, the caller's budget applies (:func:`core.runs.experiments.run` sets it);
    an int runs the call inside ``core.foundation.threads.thread_limits(num_threads)`` (benchmarks,
    direct calls). Models are initialised from a local generator seeded with ``cfg.seed``,
    never from the global RNG: the same config gives the same model in concurrent threads.
    Raises :class:`ConfigError` if ``fl.num_devices`` exceeds the number of training rows.
    """
    dev = get_device(cfg.device)
    kwargs = {"upload_transform": upload_transform, "progress": progress, "on_round": on_round,
              "partition": partition, "vectorised": vectorised}
    if num_threads is None:
        return _train_tappfl(cfg, ds, dev, **kwargs)
    with thread_limits(num_threads):
        return _train_tappfl(cfg, ds, dev, **kwargs)


def _train_tappfl(cfg, ds, dev, *, upload_transform, progress, on_round, partition, vectorised) -> TappflState:
    parts = partition if partition is not None else build_partition(cfg, ds)
    train = ds.split("train")
    _check_devices(cfg, len(train))
    attr = cfg.data.private_attribute or ds.default_attribute
    u_all = ds.attribute(attr)
    n_values = len(ds.attribute_values[attr])
    d = ds.X.shape[1]
    gen = torch.Generator().manual_seed(int(cfg.seed))  # one local stream for every init
    conv = cfg.model != type(cfg.model)()
    if conv:  # a registered architecture's encoder (and privacy network where it has one)
        from core.defenses.tappfl_conv import build_networks

        net, make_adv, make_critic, rep_dim = build_networks(
            cfg.model.arch, cfg.model.width, tuple(ds.image_shape), n_values,
            hidden_dim=cfg.hidden_dim, critic_hidden=cfg.critic_hidden, seed=cfg.seed)
        extractor = init_module_(net, gen).to(dev)
        critic0 = init_module_(make_critic(), gen).to(dev)
    else:
        rep_dim = cfg.representation_dim
        extractor = init_module_(Encoder(d, hidden=cfg.hidden_dim, rep_dim=rep_dim), gen).to(dev)
        critic0 = init_module_(MICritic(d, rep_dim, n_values, hidden=cfg.critic_hidden), gen).to(dev)
        make_adv = lambda: AttributeAdversary(rep_dim, n_values, hidden=cfg.hidden_dim)
        make_critic = lambda: MICritic(d, rep_dim, n_values, hidden=cfg.critic_hidden)
    adv_stack = _init_stacked(make_adv, cfg.fl.num_devices, gen)
    adversary = init_module_(make_adv(), gen).to(dev)
    pre_prog = None if progress is None else progress.sub(0.0, 0.1)
    fl_prog = None if progress is None else progress.sub(0.1 if cfg.pretrain_epochs else 0.0, 1.0)
    X_t = torch.tensor(np.asarray(ds.X), dtype=torch.float32, device=dev)
    u_t = torch.tensor(np.asarray(u_all), dtype=torch.long, device=dev)
    pre_curves: dict[str, list[float]] = {}
    if cfg.pretrain_epochs > 0:
        tr = torch.tensor(np.asarray(train), dtype=torch.long, device=dev)
        pre_curves = pretrain_extractor(extractor, critic0, X_t[tr], u_t[tr], epochs=cfg.pretrain_epochs,
                                        seed=cfg.seed, progress=pre_prog)
    critic = make_critic().to(dev)
    critic.load_state_dict(critic0.state_dict())
    n_dev = cfg.fl.num_devices
    private = {
        "adversary": {k: v.to(dev) for k, v in adv_stack.items()},
        "critic": {k: v.detach().unsqueeze(0).repeat(n_dev, *([1] * v.dim())).contiguous()
                   for k, v in critic0.named_parameters()},
    }
    kind = TappflObjective
    if conv:
        from core.defenses.tappfl_conv import ConvTappflObjective as kind
    objective = kind(extractor, adversary, critic, tradeoff_lambda=cfg.tradeoff_lambda,
                     adversary_steps=cfg.adversary_steps, adversary_lr_scale=cfg.adversary_lr_scale)
    fed = FedAvgState(shared=extractor, private=private, partition=parts)
    state = TappflState(extractor=extractor, adversary=adversary, critic=critic, fed=fed,
                        partition=parts, attribute=attr, n_values=n_values, curves=fed.curves,
                        pretrain_curves=pre_curves, device=dev)
    calibrate = (lambda: None)
    if conv:  # BatchNorm statistics of the released Θ and of each Ψ_k (tappfl_conv)
        from core.defenses.tappfl_conv import calibrate as _cal

        tr_rows = torch.tensor(np.asarray(train), dtype=torch.long, device=dev)
        calibrate = lambda: _cal(state, X_t, tr_rows)
        extractor.train()

    def cb(r: int, _fed) -> None:
        calibrate()
        if on_round is not None:
            on_round(r, state)

    run_fedavg(
        objective, fed, {"x": X_t, "u": u_t},
        rounds=cfg.fl.rounds, fraction_fit=cfg.fl.fraction_fit, local_epochs=cfg.fl.local_epochs,
        batch_size=cfg.fl.batch_size, lr=cfg.fl.lr, seed=cfg.seed,
        vectorised=cfg.fl.vectorised if vectorised is None else vectorised,
        upload_transform=upload_transform, progress=fl_prog,
        on_round=cb if (conv or on_round is not None) else None,
    )
    if conv and cfg.fl.rounds == 0:
        calibrate()
    extractor.eval()
    return state


# ---------------------------------------------------------------------------------------------
# using a trained state


@torch.no_grad()
def encode(extractor: nn.Module, X: np.ndarray, batch: int = 4096) -> np.ndarray:
    """Frozen representations r = f(X; Θ) as float32 numpy (n, rep_dim)."""
    was = extractor.training
    extractor.eval()
    dev = next(extractor.parameters()).device
    out = []
    for i in range(0, len(X), batch):
        xb = torch.as_tensor(np.asarray(X[i:i + batch]), dtype=torch.float32, device=dev)
        out.append(extractor(xb).cpu().numpy())
    extractor.train(was)
    rep = getattr(extractor, "rep_dim", None)
    return np.concatenate(out) if out else np.zeros((0, rep or 0), dtype=np.float32)


@torch.no_grad()
def adversary_proba(state: TappflState, R: np.ndarray, *, devices: np.ndarray | str | None = None,
                    average: bool = True, batch: int = 8192) -> np.ndarray:
    """Class probabilities of the in-training adversaries g_Ψk on representations ``R``.

    ``devices``: ``None`` = the devices sampled in the last round (their Ψ_k trained against the
    newest extractor; the paper evaluates the selected devices' privacy heads), ``"all"`` =
    every device that trained at least once, or an explicit id array. Returns the mean over
    those devices (n, n_values), or per device (D, n, n_values) with ``average=False``.
    """
    if devices is None:
        ids = state.last_devices
    elif isinstance(devices, str):
        if devices != "all":
            raise ValueError(f"devices: got {devices!r}; allowed: None, 'all' or an array of device ids")
        ids = np.flatnonzero(state.rounds_trained > 0)
    else:
        ids = np.asarray(devices, dtype=np.int64)
    if len(ids) == 0:
        raise ValueError("devices: no trained device to evaluate (run at least one round)")
    dev = state.device
    if not isinstance(state.adversary, AttributeAdversary):  # a registered privacy network
        from core.defenses.tappfl_conv import adversary_proba_modules

        outs = [adversary_proba_modules(state, torch.as_tensor(
            np.asarray(R[i:i + batch]), dtype=torch.float32, device=dev), ids).cpu().numpy()
            for i in range(0, len(R), batch)]
        probs = np.concatenate(outs, axis=1) if outs else np.zeros((len(ids), 0, state.n_values),
                                                                    np.float32)
        return probs.mean(0) if average else probs
    rows = torch.as_tensor(ids, dtype=torch.long, device=dev)
    params = {n: v.index_select(0, rows) for n, v in state.fed.private["adversary"].items()}
    outs = []
    for i in range(0, len(R), batch):
        rb = torch.as_tensor(np.asarray(R[i:i + batch]), dtype=torch.float32, device=dev)
        rb = rb.unsqueeze(0).expand(len(ids), -1, -1)
        outs.append(torch.softmax(state.adversary.fforward(params, rb), dim=-1).cpu().numpy())
    probs = np.concatenate(outs, axis=1) if outs else np.zeros((len(ids), 0, state.n_values), np.float32)
    return probs.mean(0) if average else probs
