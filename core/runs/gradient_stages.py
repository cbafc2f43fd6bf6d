"""The stages of the gradient-leakage family (spec 001): data spectrum → train under the
defense → the victim's uploads for the attacked targets → inversion → scores. Each stage is a
pure function of the config part its key holds (:mod:`core.foundation.stages`); the runner
:mod:`core.runs.gradient_leakage` composes them.

The victim side lives here (what the defended device uploads: a gradient or a FedAvg local
update of its batch through the defense's data-space transform, or through its uploaded-gradient
channel); the defense itself is a :class:`core.foundation.builds.DefenseBuild` (its training
procedure, transform and channel), the attacker side :mod:`core.attacks.gradient_inversion`,
which sees the upload and the global model only.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from core.config.schema import GradientLeakageConfig
from core.data.base import Dataset
from core.foundation.builds import DefenseBuild
from core.foundation.progress import Progress
from core.foundation.seeds import stream, torch_stream
from core.foundation.stages import StageOutput

# ---------------------------------------------------------------------------------------------
# config parts (stage keys)


def data_part(cfg: GradientLeakageConfig) -> dict[str, Any]:
    """What determines anything computed on the data alone (the spectrum, the targets)."""
    return {"data": cfg.data.model_dump(mode="json"), "seed": cfg.seed}


def model_part(cfg: GradientLeakageConfig) -> dict[str, Any]:
    """``model`` where it is not the default (the default keeps the keys stored runs have)."""
    if cfg.model == type(cfg.model)():
        return {}
    return {"model": cfg.model.model_dump(mode="json")}


def train_part(cfg: GradientLeakageConfig, device: str) -> dict[str, Any]:
    """What determines the trained model: data, seed, defense, training (not the attack)."""
    return {**data_part(cfg), "kind": cfg.kind, "device": device,
            "defense": cfg.defense.model_dump(mode="json"),
            "train": cfg.train.model_dump(mode="json"), **model_part(cfg)}


def victim(cfg: GradientLeakageConfig, shape: tuple[int, ...], n_classes: int,
           build: DefenseBuild, seed: int | torch.Generator) -> torch.nn.Module:
    """The victim network initialised from ``seed`` (its family's rule: LeNet-sigmoid's is
    DLG's U(−0.5, 0.5)), as the defense's procedure trains it: ``train.model`` where it names
    one (:attr:`GradientLeakageConfig.image_model`), else ``model`` through
    :func:`core.models.build_model`."""
    from core.models import build_model
    from core.models.nn import image_classifier, seeded

    name = cfg.image_model
    if name is not None:
        net = seeded(lambda: image_classifier(name, shape, n_classes), seed)
    else:
        m = cfg.model
        net = seeded(lambda: build_model(m.arch, shape, n_classes, m.width,
                                         data=cfg.data.name), seed)
    return build.prepare(net)


def observe_part(cfg: GradientLeakageConfig, model_key: str) -> dict[str, Any]:
    """What determines the observed uploads: the attacked model, the defense, the targets."""
    a = cfg.attack
    return {"model": model_key, "defense": cfg.defense.model_dump(mode="json"),
            "targets": a.targets, "batch_size": a.batch_size, "observation": a.observation,
            "local_steps": a.local_steps, "local_lr": a.local_lr, **data_part(cfg)}


# ---------------------------------------------------------------------------------------------
# training


def setting(cfg: GradientLeakageConfig, build: DefenseBuild) -> str:
    """The training setting the defense runs in: the config's, where its procedure has it."""
    return cfg.train.setting if cfg.train.setting in build.settings else build.settings[0]


def train(cfg: GradientLeakageConfig, ds: Dataset, model, build: DefenseBuild, device,
          progress: Progress) -> StageOutput:
    """Train the victim model under the defense: its procedure on the train split (central),
    or the FedAvg loop where each device applies the defense's data-space transform to its
    own batches. Returns the weights and the utility curves (0 central epochs: untrained)."""
    from core.engine.noisy_training import evaluate_accuracy

    X = torch.tensor(np.asarray(ds.X), dtype=torch.float32, device=device)
    y = torch.tensor(np.asarray(ds.y), dtype=torch.int64, device=device)
    tr, te = (torch.tensor(ds.split(s), device=device) for s in ("train", "test"))
    shape = ds.image_shape
    t0 = time.perf_counter()
    if setting(cfg, build) == "central":
        trained = build.train(model, X[tr], y[tr], seed=cfg.seed, X_test=X[te], y_test=y[te],
                              progress=progress)
        steps, curves, meta = trained.steps, trained.curves, dict(trained.meta)
    else:
        steps, curves = _train_fedavg(cfg, ds, model, build, X, y, tr, te, progress)
        meta = {}
    meta["seconds_train"] = time.perf_counter() - t0
    acc = evaluate_accuracy(model, X[te], y[te], shape) if len(te) else float("nan")
    meta.update(steps=int(steps), utility_acc=float(acc),
                curves={k: [float(v) for v in vs] for k, vs in curves.items()})
    return StageOutput(meta=meta, weights={"model": {n: p.detach().cpu()
                                                     for n, p in model.state_dict().items()}})


def _train_fedavg(cfg, ds, model, build: DefenseBuild, X, y, tr, te,
                  progress) -> tuple[int, dict]:
    """FedAvg over the train split's devices; each perturbs its own batches (spec 001 §3.6)."""
    from core.data.partition import partition
    from core.engine.noisy_training import evaluate_accuracy
    from core.fl.fedavg import FedAvgState, run_fedavg
    from core.fl.image_objective import NoisyImageObjective

    fl = cfg.train.fl
    tr_np = tr.cpu().numpy()
    scheme = "iid" if fl.partition == "attribute" else fl.partition
    parts = partition(np.asarray(ds.y)[tr_np], num_clients=fl.num_devices, scheme=scheme,
                      alpha=fl.alpha, seed=cfg.seed)
    parts = [tr_np[p] for p in parts]
    perturb = build.perturb
    if perturb is not None and build.noise_mode == "fixed":
        # one noisy copy of every device's data, drawn once: κ over the whole run (DPI)
        gen = torch_stream(cfg.seed, "fedavg", "fixed_noise", device=X.device)
        X = X.clone()
        X[tr] = perturb(X[tr].reshape(len(tr), -1), gen).reshape(X[tr].shape)
        perturb = None
    obj = NoisyImageObjective(model, ds.image_shape, perturb=perturb, seed=cfg.seed)
    state = FedAvgState(shared=model, private={}, partition=parts)
    accs: list[float] = []

    def on_round(r: int, st) -> None:
        accs.append(evaluate_accuracy(model, X[te], y[te], ds.image_shape))

    run_fedavg(obj, state, {"x": X, "y": y}, rounds=fl.rounds, fraction_fit=fl.fraction_fit,
               local_epochs=fl.local_epochs, batch_size=fl.batch_size, lr=fl.lr, seed=cfg.seed,
               vectorised=fl.vectorised, progress=progress, on_round=on_round)
    steps = sum(math.ceil(len(p) / fl.batch_size) * fl.local_epochs for p in parts) // max(1, len(parts))
    curves = {"round": [float(i + 1) for i in range(len(accs))], "test_acc": accs}
    for k in ("train_ce", "train_acc"):
        if k in state.curves:
            curves[k] = [float(v) for v in state.curves[k]]
    return steps * fl.rounds, curves


# ---------------------------------------------------------------------------------------------
# the victim's uploads for the attacked targets


def select_targets(ds: Dataset, cfg: GradientLeakageConfig) -> tuple[np.ndarray, np.ndarray]:
    """T·b distinct train rows (the victim's data), seeded, grouped into T uploads of b images:
    returns (row indices (T, b), labels (T, b))."""
    a = cfg.attack
    tr = ds.split("train")
    need = a.targets * a.batch_size
    if need > len(tr):
        raise ValueError(f"attack.targets: targets × batch_size = {need} exceeds the "
                         f"{len(tr)} training rows of {ds.name!r}")
    rng = stream(cfg.seed, "gradient_leakage", "targets")
    rows = np.sort(rng.choice(tr, size=need, replace=False)).reshape(a.targets, a.batch_size)
    rows = rng.permuted(rows, axis=1) if a.batch_size > 1 else rows
    return rows, np.asarray(ds.y)[rows]


def _ce(model, params, x: Tensor, y: Tensor) -> Tensor:
    from torch.func import functional_call

    return F.cross_entropy(functional_call(model, params, (x,)), y)


def _noisy(x: Tensor, perturb: Callable | None, gen: torch.Generator) -> Tensor:
    """x (..., C, H, W) through the defense's data-space transform, one draw per image."""
    if perturb is None:
        return x
    flat = x.reshape(-1, x[0, 0].numel()) if x.dim() == 5 else x.reshape(len(x), -1)
    return perturb(flat, gen).reshape(x.shape)


def victim_uploads(cfg: GradientLeakageConfig, model, params: dict[str, Tensor], x: Tensor,
                   y: Tensor, build: DefenseBuild, *,
                   dp: tuple[float, float] | None) -> tuple[dict[str, Tensor], Tensor]:
    """What each attacked device uploads, for all T targets:

    - observation ``gradient``: ∇_W CE(W; x̃, y) of the batch (FedSGD), x̃ the batch through
      the defense's transform (``build.perturb``, e.g. x + ξ);
    - observation ``fedavg``: the update W_o − W_i after ``local_steps`` full-batch SGD steps
      on x̃ (noise redrawn each step, or one draw kept, per ``build.noise_mode``);
    - an uploaded-gradient channel (``dp = (z, S)``, DP-SGD's): :func:`_dp_uploads`, the
      steps through the DP-SGD every training uses.

    Without a channel all T targets go at once (torch.func vmap): T models, each step on its
    whole batch, through the engine's step driver (:func:`_local_steps`). Returns
    (upload name -> (T, *shape), the noisy images of the first step (T, b, C, H, W))."""
    a = cfg.attack
    gen = torch_stream(cfg.seed, "victim", "uploads", device=x.device)
    x_noisy = _noisy(x, build.perturb, gen)
    if dp is not None:
        return _dp_uploads(cfg, model, params, x, y, dp), x_noisy.detach()
    W, g = _local_steps(cfg, model, params, x, y, build, x_noisy, gen)
    if a.observation == "gradient":
        return {n: v.detach() for n, v in g.items()}, x_noisy.detach()
    upd = {n: (W[n] - params[n].detach().unsqueeze(0)).detach() for n in W}
    return upd, x_noisy.detach()


def _local_steps(cfg: GradientLeakageConfig, model, params: dict[str, Tensor], x: Tensor,
                 y: Tensor, build: DefenseBuild, x_first: Tensor, gen: torch.Generator
                 ) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """The T devices' local steps from the global ``params``, run by the engine's step driver
    (:func:`core.engine.steps.run_steps`) over T models whose every step takes its whole batch
    of b rows: W ← W − lr·∇_W CE(W; x̃, y) (one vmap of the per-device gradient), x̃ the
    batch through the defense's transform, redrawn each step (``x_first`` at the first) unless
    its noise is fixed; one step for the gradient observation, which reads the gradient and
    takes no update. Returns (W (T, *shape), the last step's gradient)."""
    import numpy as np
    from torch.func import grad, vmap

    from core.engine.hooks import StepState
    from core.engine.recipe import Recipe
    from core.engine.steps import Steps, run_steps

    a = cfg.attack
    T, b = x.shape[:2]
    n_steps = a.local_steps if a.observation == "fedavg" else 1
    fixed = build.perturb is not None and build.noise_mode == "fixed"
    W = {n: p.detach().unsqueeze(0).expand(T, *p.shape).clone() for n, p in params.items()}
    batch_grad = vmap(grad(lambda p, xb, yb: _ce(model, p, xb, yb)))
    last: dict[str, Any] = {"x": x_first}

    def step(state: StepState, j: int) -> None:
        if j > 0 and not fixed:
            last["x"] = _noisy(x, build.perturb, gen)
        g = batch_grad(W, last["x"], y)
        last["g"] = g
        if a.observation == "fedavg":
            W.update({n: w - a.local_lr * g[n] for n, w in W.items()})

    rows = torch.arange(T * b, device=x.device).view(1, T, b).expand(n_steps, T, b)
    steps = Steps(index=rows, valid=torch.ones(n_steps, T, b, dtype=torch.bool, device=x.device),
                  counts=np.full((n_steps, T), b))
    state = StepState(model=model, params=list(W.values()), optimizer=None,
                      recipe=Recipe(epochs=1, batch_size=b, lr=a.local_lr, optimizer="sgd"),
                      n=b, device=x.device, models=T)
    run_steps(state, steps, (), step, dtype=x.dtype)
    return W, last["g"]


def _dp_uploads(cfg: GradientLeakageConfig, model, params: dict[str, Tensor], x: Tensor,
                y: Tensor, dp: tuple[float, float]) -> dict[str, Tensor]:
    """Each device's upload under DP-SGD (z, S = ``dp``) on its clean batch (DP-SGD sees no
    data-space noise): ``local_steps`` SGD steps at ``local_lr`` (one for the gradient
    observation) by :func:`core.defenses.dpsgd.train_dpsgd`, the DP-SGD every training runs,
    with sampling rate 1 (every image of the batch in every step: the device's full-batch
    step) and its own noise stream. The gradient observation is the step's clipped, summed,
    noised gradient / b (what Opacus' DPOptimizer leaves in ``.grad``; plain SGD reads it
    without changing it); the FedAvg one W_o − W_i. Devices run one after another."""
    import copy

    from core.defenses.dpsgd import train_dpsgd
    from core.foundation.seeds import derive

    a = cfg.attack
    z, S = dp
    T, b = x.shape[:2]
    out: dict[str, list[Tensor]] = {n: [] for n in params}
    for t in range(T):
        net = copy.deepcopy(model)
        with torch.no_grad():
            for n, p in net.named_parameters():
                if n in params:
                    p.copy_(params[n])
        # ε of one device's steps is not reported: the cheap accountant; δ only passes checks
        train_dpsgd(net, x[t].reshape(b, -1), y[t], image_shape=tuple(x.shape[2:]),
                    epochs=a.local_steps if a.observation == "fedavg" else 1, lr=a.local_lr,
                    max_grad_norm=S, delta=1e-5, batch_size=b, noise_multiplier=z,
                    accountant="rdp", optimizer="sgd", seed=derive(cfg.seed, "victim", "dp", t))
        for n, p in net.named_parameters():
            if n in params:
                v = p.grad if a.observation == "gradient" else p - params[n]
                out[n].append(v.detach())
    return {n: torch.stack(v) for n, v in out.items()}
