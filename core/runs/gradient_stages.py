"""The stages of the gradient-leakage family (spec 001): data spectrum → train under the
defense → the victim's uploads for the attacked targets → inversion → scores. Each stage is a
pure function of the config part its key holds (:mod:`core.stages`); the runner
:mod:`core.runs.gradient_leakage` composes them.

The victim side lives here (what the defended device uploads: a gradient or a FedAvg local
update of its noisy batch, or a DP-SGD step's clipped and noised gradient); the attacker side
is :mod:`core.attacks.gradient_inversion`, which sees the upload and the global model only.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from core.config import ChannelDefense, GradientLeakageConfig
from core.data.base import Dataset
from core.progress import Progress
from core.stages import StageOutput

# ---------------------------------------------------------------------------------------------
# config parts (stage keys)


def data_part(cfg: GradientLeakageConfig) -> dict[str, Any]:
    """What determines anything computed on the data alone (the spectrum, the targets)."""
    return {"data": cfg.data.model_dump(mode="json"), "seed": cfg.seed}


def train_part(cfg: GradientLeakageConfig, device: str) -> dict[str, Any]:
    """What determines the trained model: data, seed, defense, training (not the attack)."""
    return {**data_part(cfg), "kind": cfg.kind, "device": device,
            "defense": cfg.defense.model_dump(mode="json"),
            "train": cfg.train.model_dump(mode="json")}


def observe_part(cfg: GradientLeakageConfig, model_key: str) -> dict[str, Any]:
    """What determines the observed uploads: the attacked model, the defense, the targets."""
    a = cfg.attack
    return {"model": model_key, "defense": cfg.defense.model_dump(mode="json"),
            "targets": a.targets, "batch_size": a.batch_size, "observation": a.observation,
            "local_steps": a.local_steps, "local_lr": a.local_lr, **data_part(cfg)}


# ---------------------------------------------------------------------------------------------
# spectrum and channel


def spectrum(X_train: np.ndarray) -> StageOutput:
    """Σ_D's eigendecomposition of the train split (computed once per data set and seed)."""
    from core.bounds.channel import data_spectrum

    t0 = time.perf_counter()
    sp = data_spectrum(np.asarray(X_train, dtype=np.float64))
    return StageOutput(arrays={"eigenvalues": sp.eigenvalues, "eigenvectors": sp.eigenvectors,
                               "mean": sp.mean},
                       meta={"seconds": time.perf_counter() - t0})


def spectrum_from(out: StageOutput):
    """The :class:`core.bounds.channel.Spectrum` of a cached spectrum stage."""
    from core.bounds.channel import Spectrum

    return Spectrum(eigenvalues=np.asarray(out.arrays["eigenvalues"], dtype=np.float64),
                    eigenvectors=np.asarray(out.arrays["eigenvectors"], dtype=np.float64),
                    mean=np.asarray(out.arrays["mean"], dtype=np.float64), scale="[0, 1]")


def channel_beta(defense: ChannelDefense, image_shape: tuple[int, int, int]) -> np.ndarray | None:
    """The Personalized channel's β (d,): the block's rectangle, or the paper's eye band
    scaled to the image, at the block's multiplier; None for the other channels."""
    from core.defenses.channel import beta_mask, paper_eye_rect

    if defense.channel != "personalized":
        return None
    rect = paper_eye_rect(image_shape) if defense.beta_rect is None else tuple(defense.beta_rect)
    return beta_mask(image_shape, rect, defense.beta_multiplier)


def build_channel(defense: ChannelDefense, spec, image_shape: tuple[int, int, int],
                  mu: np.ndarray | None = None):
    """(SolvedChannel, ChannelNoise) for a channel block: κ solved into the noise (Eqs. 18-20).
    ``mu``: the β-whitened eigenvalues when already known (Personalized)."""
    from core.defenses.channel import ChannelNoise, solve_channel

    solved = solve_channel(defense.channel, spec, defense.kappa,
                           beta=channel_beta(defense, image_shape), mu=mu)
    return solved, ChannelNoise(solved, spec.eigenvectors if defense.channel == "white" else None)


# ---------------------------------------------------------------------------------------------
# training


def _perturb(noise):
    if noise is None:
        return None

    def perturb(x_flat: Tensor, generator: torch.Generator) -> Tensor:
        return noise.perturb(x_flat, generator=generator)

    return perturb


def train(cfg: GradientLeakageConfig, ds: Dataset, model, noise, device,
          progress: Progress) -> StageOutput:
    """Train the victim model under the defense: centrally on D̃ (or with DP-SGD), or in the
    FedAvg loop where each device perturbs its own batches. Returns the weights, the initial
    weights (the fresh model the round-1 uploads start from) and the utility curves."""
    from core.defenses.noisy_training import evaluate_accuracy, train_central

    X = torch.tensor(np.asarray(ds.X), dtype=torch.float32, device=device)
    y = torch.tensor(np.asarray(ds.y), dtype=torch.int64, device=device)
    tr, te = (torch.tensor(ds.split(s), device=device) for s in ("train", "test"))
    shape = ds.image_shape
    t = cfg.train
    meta: dict[str, Any] = {}
    t0 = time.perf_counter()
    if cfg.defense.kind == "dp_sgd":
        from core.defenses.dpsgd import train_dpsgd

        d = cfg.defense
        res = train_dpsgd(model, X[tr], y[tr], image_shape=shape, epochs=max(1, t.epochs),
                          batch_size=t.batch_size, lr=t.lr, optimizer=t.optimizer,
                          max_grad_norm=d.clip_norm,
                          delta=d.delta, noise_multiplier=d.noise_multiplier,
                          target_epsilon=d.target_epsilon, accountant=d.accountant, seed=cfg.seed,
                          X_test=X[te], y_test=y[te], progress=progress)
        meta.update(epsilon=res.epsilon, accountant=res.accountant,
                    accountant_note=res.fallback_reason or "",
                    noise_multiplier=res.noise_multiplier, sample_rate=res.sample_rate)
        steps, curves = res.steps, res.curves
    elif t.setting == "central" and t.epochs == 0:
        steps, curves = 0, {}  # attack an untrained model: nothing to train
    elif t.setting == "central":
        mode = cfg.defense.noise_mode if cfg.defense.kind == "channel" else "redraw"
        res = train_central(model, X[tr], y[tr], image_shape=shape, epochs=t.epochs,
                            batch_size=t.batch_size, lr=t.lr, optimizer=t.optimizer,
                            perturb=_perturb(noise), noise_mode=mode, seed=cfg.seed,
                            X_test=X[te], y_test=y[te], progress=progress)
        steps, curves = res.steps, res.curves
    else:
        steps, curves = _train_fedavg(cfg, ds, model, noise, X, y, tr, te, progress)
    meta["seconds_train"] = time.perf_counter() - t0
    acc = evaluate_accuracy(model, X[te], y[te], shape) if len(te) else float("nan")
    meta.update(steps=int(steps), utility_acc=float(acc),
                curves={k: [float(v) for v in vs] for k, vs in curves.items()})
    return StageOutput(meta=meta, weights={"model": {n: p.detach().cpu()
                                                     for n, p in model.state_dict().items()}})


def _train_fedavg(cfg, ds, model, noise, X, y, tr, te, progress) -> tuple[int, dict]:
    """FedAvg over the train split's devices; each perturbs its own batches (spec 001 §3.6)."""
    from core.data.partition import partition
    from core.defenses.noisy_training import evaluate_accuracy
    from core.fl.fedavg import FedAvgState, run_fedavg
    from core.fl.image_objective import NoisyImageObjective

    fl = cfg.train.fl
    tr_np = tr.cpu().numpy()
    scheme = "iid" if fl.partition == "attribute" else fl.partition
    parts = partition(np.asarray(ds.y)[tr_np], num_clients=fl.num_devices, scheme=scheme,
                      alpha=fl.alpha, seed=cfg.seed)
    parts = [tr_np[p] for p in parts]
    perturb = _perturb(noise)
    if noise is not None and cfg.defense.noise_mode == "fixed":
        # one noisy copy of every device's data, drawn once: κ over the whole run (DPI)
        gen = torch.Generator(device=X.device).manual_seed(int(cfg.seed) + 4243)
        X = X.clone()
        X[tr] = noise.perturb(X[tr].reshape(len(tr), -1), generator=gen).reshape(X[tr].shape)
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
    rng = np.random.default_rng([cfg.seed, 8001])
    rows = np.sort(rng.choice(tr, size=need, replace=False)).reshape(a.targets, a.batch_size)
    rows = rng.permuted(rows, axis=1) if a.batch_size > 1 else rows
    return rows, np.asarray(ds.y)[rows]


def _ce(model, params, x: Tensor, y: Tensor) -> Tensor:
    from torch.func import functional_call

    return F.cross_entropy(functional_call(model, params, (x,)), y)


def _noisy(x: Tensor, noise, gen: torch.Generator) -> Tensor:
    """x (..., C, H, W) plus one draw of the channel's noise per image."""
    if noise is None:
        return x
    flat = x.reshape(-1, x[0, 0].numel()) if x.dim() == 5 else x.reshape(len(x), -1)
    return noise.perturb(flat, generator=gen).reshape(x.shape)


def victim_uploads(cfg: GradientLeakageConfig, model, params: dict[str, Tensor], x: Tensor,
                   y: Tensor, noise, *, dp: tuple[float, float] | None) -> tuple[dict[str, Tensor], Tensor]:
    """What each attacked device uploads, for all T targets at once (torch.func vmap):

    - observation ``gradient``: ∇_W CE(W; x̃, y) of the batch (FedSGD), x̃ = x + ξ;
    - observation ``fedavg``: the update W_o − W_i after ``local_steps`` full-batch SGD steps
      on x̃ (noise redrawn each step, or one draw kept, per the channel's ``noise_mode``);
    - DP-SGD (``dp = (z, S)``): per-sample gradients clipped to S, summed, N(0, z²S²) added,
      divided by b (one DP-SGD step; the FedAvg form repeats it per local step).

    Returns (upload name -> (T, *shape), the noisy images of the first step (T, b, C, H, W))."""
    from torch.func import grad, vmap

    a = cfg.attack
    gen = torch.Generator(device=x.device).manual_seed(int(cfg.seed) * 7919 + 17)
    steps = a.local_steps if a.observation == "fedavg" else 1
    fixed = isinstance(cfg.defense, ChannelDefense) and cfg.defense.noise_mode == "fixed"
    T = x.shape[0]
    W = {n: p.detach().unsqueeze(0).expand(T, *p.shape).clone() for n, p in params.items()}
    batch_grad = vmap(grad(lambda p, xb, yb: _ce(model, p, xb, yb)))

    def one_sample(p, xi, yi):
        return _ce(model, p, xi.unsqueeze(0), yi.unsqueeze(0))

    sample_grads = vmap(vmap(grad(one_sample), in_dims=(None, 0, 0)))
    x_first = None
    x_noisy = _noisy(x, noise, gen)
    for s in range(steps):
        if s > 0 and not fixed:
            x_noisy = _noisy(x, noise, gen)
        if x_first is None:
            x_first = x_noisy
        if dp is None:
            g = batch_grad(W, x_noisy, y)
        else:
            z, S = dp
            g_i = sample_grads(W, x, y)  # (T, b, *shape): DP-SGD sees clean data
            norms = torch.sqrt(sum(v.flatten(2).pow(2).sum(-1) for v in g_i.values()))
            scale = (S / (norms + 1e-12)).clamp(max=1.0)
            b = x.shape[1]
            g = {}
            for n, v in g_i.items():
                summed = (v * scale.view(T, b, *([1] * (v.dim() - 2)))).sum(1)
                noise_t = torch.randn(summed.shape, generator=gen, device=x.device, dtype=v.dtype)
                g[n] = (summed + z * S * noise_t) / b
        if a.observation == "gradient":
            return {n: v.detach() for n, v in g.items()}, x_first.detach()
        W = {n: W[n] - a.local_lr * g[n] for n in W}
    upd = {n: (W[n] - params[n].detach().unsqueeze(0)).detach() for n in W}
    return upd, x_first.detach()


# ---------------------------------------------------------------------------------------------
# closed forms for the page (no run): instant given the cached spectrum


def personalized_basis(spec, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(μ, w): eigenvalues μ_j of B^{-1/2} Σ_D B^{-1/2} (the β-whitened spectrum, where the
    Personalized channel is a Natural one) and w_j = (Uᵀ B U)_jj, so that the Bayes error of
    an attacker seeing D̃ is (1/d) Σ_j w_j μ_j σ / (μ_j + σ). One O(d³) eigh per β mask."""
    b = np.asarray(beta, dtype=np.float64)
    ib = 1.0 / np.sqrt(b)
    cov = spec.covariance()
    m = cov * ib[:, None] * ib[None, :]
    mu, U = np.linalg.eigh(0.5 * (m + m.T))
    mu, U = np.clip(mu[::-1], 0.0, None), U[:, ::-1]
    return mu, (U * U * b[:, None]).sum(0)


def _wiener(kind: str, spec, kappa: float, basis) -> float:
    """Bayes MSE per pixel of an attacker who sees D̃ (Gaussian data), per channel."""
    from core.bounds import channel as cb

    lam = spec.eigenvalues
    if kind == "natural":
        return cb.wiener_mmse(lam, cb.solve_sigma(lam, kappa))
    if kind == "white":
        return cb.wiener_mmse(lam, cb.white_sigmas(lam, kappa))
    if kind == "laplace":
        return cb.wiener_mmse(lam, 2.0 * cb.solve_laplace_b(lam, kappa) ** 2)
    mu, w = basis
    s = cb.solve_sigma(mu, kappa)
    return float(np.sum(w * mu * s / (mu + s)) / len(lam))


def bound_curves(cfg: GradientLeakageConfig, spec, shape, kappas: np.ndarray,
                 basis=None) -> dict[str, list[float]]:
    """Per-pixel MSE floors against κ: Theorem 1 per round (I = κ; the same for every channel)
    and the Wiener MMSE of the current channel (NaN where the channel cannot reach κ)."""
    from core.bounds import channel as cb

    lam = spec.eigenvalues
    out = {"Theorem 1, one round (Gaussian plug-in)":
           [cb.thm1_mse_bound(lam, float(k), per="pixel") for k in kappas]}
    kind = getattr(cfg.defense, "channel", None)
    if kind is not None:
        vals = []
        for k in kappas:
            try:
                vals.append(_wiener(kind, spec, float(k), basis))
            except ValueError:  # Laplace below its floor
                vals.append(float("nan"))
        out[f"Wiener MMSE, {kind} (attacker sees D̃)"] = vals
    return out


def live_channel(cfg: GradientLeakageConfig, spec, shape, basis=None) -> dict[str, Any]:
    """What the page shows before any run: the solved noise, κ/d, the per-direction capacity
    and the floors, or for DP-SGD its capacity B/z² (Thm 4) and the floor at the tight B/(2z²).
    ``basis``: :func:`personalized_basis` for the Personalized channel (cached by the page)."""
    from core.bounds import channel as cb

    lam = spec.eigenvalues
    d = len(lam)
    b = cfg.attack.batch_size
    out: dict[str, Any] = {"cards": [], "notes": [], "noise_eig": None, "capacity_dir": None}
    if cfg.defense.kind == "none":
        out["notes"].append("Undefended: the upload is a deterministic function of the batch, "
                            "so its information about the data is unbounded and no floor holds.")
        return out
    if cfg.defense.kind == "dp_sgd":
        z = cfg.defense.noise_multiplier
        if z is None:
            out["notes"].append("z is solved from the target ε at run time.")
            return out
        tight = cb.dp_capacity(b, z, tight=True)
        out["cards"] = [("capacity B/z² (Thm 4)", f"{cb.dp_capacity(b, z):.4g} nats",
                         "As printed in the paper, per step, batch B."),
                        ("capacity B/(2z²)", f"{tight:.4g} nats", "Without the factor-2 slack."),
                        ("per dimension", f"{tight / d:.3g}", "nats per dimension"),
                        ("Thm 1 floor / step", f"{cb.thm1_mse_bound(lam, tight, per='pixel'):.4g}",
                         "Per-pixel MSE floor at the tight capacity (Gaussian plug-in)."),
                        ("ε", "after a run", "From the accountant (PRV, RDP fallback).")]
        out["notes"].append("DP-SGD's capacity grows with the batch size B (Thm 4): a larger "
                            "batch leaks more per step under DP, the opposite of plain training.")
        return out
    kind, kappa = cfg.defense.channel, float(cfg.defense.kappa)
    try:
        if kind == "personalized":
            from core.defenses.channel import solve_channel

            mu = basis[0] if basis is not None else None
            solved = solve_channel(kind, spec, kappa, beta=channel_beta(cfg.defense, shape), mu=mu)
        else:
            solved, _ = build_channel(cfg.defense, spec, shape)
    except ValueError as exc:
        out["notes"].append(f"κ = {kappa:g} cannot be certified: {exc}")
        return out
    std = np.asarray(solved.pixel_std)
    floor = cb.thm1_mse_bound(lam, kappa, per="pixel")
    wiener = _wiener(kind, spec, kappa, basis)
    out["cards"] = [("σ (noise variance)", f"{solved.sigma:.4g}",
                     ("Natural / Personalized: σ; White: the scale s with σ_i = s·λ_i; "
                      "Laplace: 2b².")),
                    ("per-pixel noise std", f"{std.mean():.3g}", "Mean over pixels of √Var(ξ)."),
                    ("κ/d", f"{kappa / d:.3g}", f"nats per dimension (d = {d})"),
                    ("Thm 1 floor / round", f"{floor:.4g}",
                     ("Per-pixel MSE no attacker can beat with one round's information, "
                      "Gaussian plug-in for h(D) on the informative subspace (heuristic).")),
                    ("Wiener MMSE", f"{wiener:.4g}", ("Per-pixel Bayes error of an attacker who "
                                                     "sees the noisy data itself (Gaussian data)."))]
    out["noise_eig"], out["capacity_dir"] = solved.noise_var_eig, solved.capacity_per_direction
    if kind == "natural":
        # the other defenses in the same currency (spec 001 §4.2-4.3): the same noise on a
        # batch mean (Eq. 24), and dropping the largest / tenth eigen-direction (compression)
        s = float(solved.sigma)
        out["notes"].append(
            f"Same σ, other mechanisms: on the mean of a batch of {b} the capacity is "
            f"{cb.batch_capacity(lam, s, b):.3g} nats (Eq. 24: larger batches leak less under "
            f"constant noise); dropping the largest eigen-direction removes "
            f"{cb.compression_delta(lam, s, [0]):.3g} nats, the tenth "
            f"{cb.compression_delta(lam, s, [min(9, d - 1)]):.3g} (compressing high-variance "
            "directions protects most).")
    nz = spec.n_zero
    if nz:
        out["notes"].append(f"{nz} of {d} eigen-directions have zero variance (constant pixels): "
                            "Theorem 1's Gaussian plug-in is evaluated on the other "
                            f"{d - nz}; on all {d} it would be 0.")
    if cfg.defense.noise_mode == "redraw":
        out["notes"].append("Noise redrawn every step: κ per step, n·κ over a run of n steps — "
                            "the whole-run bound exp(−2nκ/d) is vacuous for any realistic n; "
                            "the per-round floor is the meaningful one.")
    else:
        out["notes"].append("One fixed noisy copy: by the data-processing inequality everything "
                            "released over the whole run carries at most κ.")
    if kind == "laplace":
        out["notes"].append(f"Laplace is a derived bound (not the paper's): it cannot certify "
                            f"below {cb.LAPLACE_PENALTY_PER_DIM:.4f}·d = "
                            f"{cb.LAPLACE_PENALTY_PER_DIM * d:.1f} nats.")
    return out
