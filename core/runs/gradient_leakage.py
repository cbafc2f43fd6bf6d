"""Runner for ``kind: gradient_leakage`` (spec 001): spectrum → train under the defense →
the victim's uploads for T targets → gradient inversion (every chosen preset, all targets in
one batched optimisation) and model inversion → scores, bounds and utility.

The attacker sees the upload and the global model it started from, never the data or the
noise draw (:mod:`core.attacks.gradient_inversion`); reconstructions are matched to their
targets (assignment on MSE) and scored against the *clean* images. Beside the measured error
the Result carries Theorem 1's per-round bound (Gaussian plug-in for h(D), on the informative
eigen-subspace: a heuristic, labelled so), the whole-run bound (vacuous at any realistic n),
and the Wiener MMSE of an attacker who sees D̃ itself.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from core.config import GradientLeakageConfig
from core.progress import Progress
from core.result import Result
from core.runs import gradient_stages as S
from core.stages import StageOutput, Stages

#: images of each kind kept in the Result for the gallery
GALLERY = 16
#: a whole-run bound below this fraction of the per-round one is reported as vacuous
VACUOUS_RATIO = 1e-6


def run_gradient_leakage(cfg: GradientLeakageConfig, progress: Progress,
                         stages: Stages | None = None) -> Result:
    from core.attacks.gradient_inversion import score_reconstructions
    from core.data import load_dataset
    from core.device import get_device
    from core.nn import image_classifier, seeded

    stages = stages or Stages(None)
    t0 = time.perf_counter()
    progress.update(0.01, f"loading {cfg.data.name}")
    ds = load_dataset(cfg.data, cfg.seed)
    shape = tuple(ds.image_shape)
    d = int(np.prod(shape))
    n_classes = len(ds.label_names)
    X = np.asarray(ds.X, dtype=np.float32)
    y = np.asarray(ds.y)
    tr, te = ds.split("train"), ds.split("test")
    dev = get_device(cfg.device)
    stages.map_location = str(dev)
    notes: list[str] = []
    metrics: dict[str, float] = {"data_dim": float(d)}
    intervals: dict[str, dict[str, float]] = {}
    artifacts: dict[str, np.ndarray] = {}
    info: dict[str, Any] = {"notes": notes}

    # -- spectrum (cached per data set and seed) and the defense's channel
    progress.update(0.02, "data spectrum")
    sp_out, _ = stages.get("spectrum", S.data_part(cfg), lambda: S.spectrum(X[tr]))
    spec = S.spectrum_from(sp_out)
    artifacts["eigenvalues"] = spec.eigenvalues.astype(np.float64)
    solved = noise = None
    if cfg.defense.kind == "channel":
        solved, noise = S.build_channel(cfg.defense, spec, shape)
        _channel_metrics(cfg, solved, metrics, artifacts, info)

    # -- train the victim model under the defense
    gen = torch.Generator().manual_seed(int(cfg.seed))
    model = seeded(lambda: image_classifier(cfg.train.model, shape, n_classes), gen).to(dev)
    init_weights = {n: p.detach().clone() for n, p in model.state_dict().items()}
    trained, train_key = stages.get(
        "train", S.train_part(cfg, dev.type),
        lambda: S.train(cfg, ds, model, noise, dev, progress.sub(0.03, 0.5)))
    model.load_state_dict({n: t.to(dev) for n, t in trained.weights["model"].items()})
    model.eval()
    tm = trained.meta
    metrics.update(utility_acc=tm["utility_acc"], steps=float(tm["steps"]),
                   seconds_train=tm.get("seconds_train", float("nan")),
                   utility_majority_images=float(np.bincount(y[te]).max() / max(1, len(te))))
    curves = {k: list(v) for k, v in tm.get("curves", {}).items()}
    dp = None
    if cfg.defense.kind == "dp_sgd":
        from core.bounds.channel import dp_capacity

        z, S_ = float(tm["noise_multiplier"]), float(cfg.defense.clip_norm)
        dp = (z, S_)
        b = cfg.attack.batch_size
        metrics.update(epsilon_accountant=float(tm["epsilon"]), dp_noise_multiplier=z,
                       capacity_dp_paper=dp_capacity(b, z), capacity_dp_tight=dp_capacity(b, z, tight=True))
        info["accountant"] = tm.get("accountant")
        if tm.get("accountant_note"):
            notes.append(tm["accountant_note"])
    if cfg.defense.kind == "channel":
        # the attacked upload is at least one step even when the model was not trained
        metrics["kappa_total"] = float(solved.total_info(max(1, int(tm["steps"])),
                                                         cfg.defense.noise_mode))

    # -- the attacked uploads: from the fresh model (round 1) or the trained one
    fresh = cfg.attack.model_state == "fresh"
    params = {n: p.detach() for n, p in (init_weights.items() if fresh else
                                         {n: t.to(dev) for n, t in trained.weights["model"].items()}.items())}
    params = {n: v for n, v in params.items() if n in dict(model.named_parameters())}
    model_key = f"init:{cfg.train.model}:{cfg.seed}" if fresh else train_key
    rows, labels = S.select_targets(ds, cfg)
    x = torch.as_tensor(ds.images(rows.reshape(-1)).reshape(*rows.shape, *shape), device=dev)
    yt = torch.as_tensor(labels, device=dev)
    progress.update(0.5, f"uploads of {cfg.attack.targets} targets")
    observed, x_noisy = S.victim_uploads(cfg, model, params, x, yt, noise, dp=dp)
    targets_np = x.cpu().numpy()
    noisy_np = x_noisy.cpu().numpy()
    metrics["recon_targets"] = float(cfg.attack.targets)
    metrics["recon_batch_size"] = float(cfg.attack.batch_size)
    metrics["recon_noisy_mse"] = float(np.mean((noisy_np - targets_np) ** 2))
    flat_t = targets_np.reshape(-1, *shape)
    artifacts["targets"] = flat_t[:GALLERY]
    artifacts["noisy"] = np.clip(noisy_np.reshape(-1, *shape)[:GALLERY], 0.0, 1.0)

    # -- gradient inversion: every chosen preset, all targets in one batched optimisation
    okey = S.observe_part(cfg, model_key)
    names = list(cfg.attack.attackers)
    per_image: dict[str, np.ndarray] = {}
    for i, name in enumerate(names):
        sub = progress.sub(0.5 + 0.4 * i / len(names), 0.5 + 0.4 * (i + 1) / len(names))
        sub.update(0.0, f"{name}: inverting {cfg.attack.targets} uploads")
        out, _ = stages.get("invert", {**okey, "attack": name, "iterations": cfg.attack.iterations},
                            lambda name=name, sub=sub: _invert(cfg, model, params, observed, name,
                                                               shape, n_classes, sub),
                            label=f"invert_{name}")
        rec = out.arrays["images"]
        sc = score_reconstructions(rec, targets_np, out.arrays["labels"], labels, seed=cfg.seed)
        n_img = int(rec.shape[0] * rec.shape[1])
        for stat in ("mse", "psnr", "psnr_median", "ssim", "label_acc"):
            metrics[f"recon_{name}_{stat}"] = float(sc[f"recon_{stat}"])
            intervals[f"recon_{name}_{stat}"] = {"lo": float(sc[f"recon_{stat}_lo"]),
                                                 "hi": float(sc[f"recon_{stat}_hi"]), "n": n_img}
        metrics[f"recon_{name}_seconds"] = float(out.meta.get("seconds", float("nan")))
        if out.meta.get("nan_restarts"):
            notes.append(f"{name}: {out.meta['nan_restarts']} target(s) re-initialised after a "
                         "non-finite loss")
        per_image[name] = sc["per_image"]["mse"]
        perm = sc["per_image"]["perm"]
        matched = np.stack([rec[i][perm[i]] for i in range(len(rec))])
        artifacts[f"recon_{name}"] = matched.reshape(-1, *shape)[:GALLERY]
        artifacts[f"recon_{name}_psnr"] = np.asarray(sc["per_image"]["psnr"], dtype=np.float64)
    best = max(names, key=lambda n: metrics[f"recon_{n}_psnr_median"])
    info["best_inverter"] = best
    for stat in ("mse", "psnr", "psnr_median", "ssim", "label_acc", "seconds"):
        metrics[f"recon_best_{stat}"] = metrics[f"recon_{best}_{stat}"]
        if f"recon_{best}_{stat}" in intervals:
            intervals[f"recon_best_{stat}"] = intervals[f"recon_{best}_{stat}"]
    metrics["recon_psnr_median"] = metrics["recon_best_psnr_median"]
    metrics["recon_mse"] = metrics["recon_best_mse"]
    metrics["recon_psnr"] = metrics["recon_best_psnr"]
    metrics["recon_ssim"] = metrics["recon_best_ssim"]

    # -- bounds beside the measurements
    _bounds(cfg, spec, solved, dp, metrics, per_image[best], notes, max(1, int(tm["steps"])))

    # -- model inversion of the trained model (the paper's Fig. 10)
    if cfg.attack.model_inversion:
        progress.update(0.92, "model inversion")
        mi, _ = stages.get("model_inversion", {"train": train_key},
                           lambda: _model_inversion(cfg, ds, model, shape, n_classes))
        metrics.update({k: float(v) for k, v in mi.meta["scores"].items()})
        artifacts["model_inversion"] = mi.arrays["images"]
        artifacts["class_centres"] = mi.arrays["centres"]

    from core.parts import ATTACKS

    info["threat"] = {n: ATTACKS.get(n).threat.as_dict() for n in names}
    info["stages"] = dict(stages.log)
    metrics["seconds_total"] = time.perf_counter() - t0
    return Result(kind=cfg.kind, config=cfg.model_dump(mode="json"), seed=cfg.seed, metrics=metrics, intervals=intervals, curves=curves,
                  artifacts=artifacts, info=info, timings={"train_s": tm.get("seconds_train", 0.0)})


# ---------------------------------------------------------------------------------------------
# helpers


def _channel_metrics(cfg, solved, metrics, artifacts, info) -> None:
    metrics.update(kappa=float(cfg.defense.kappa), kappa_per_dim=float(solved.kappa_per_dim),
                   channel_sigma=float(solved.sigma),
                   channel_pixel_std_mean=float(np.mean(solved.pixel_std)))
    artifacts["noise_eig"] = np.asarray(solved.noise_var_eig, dtype=np.float64)
    artifacts["capacity_dir"] = np.asarray(solved.capacity_per_direction, dtype=np.float64)
    artifacts["pixel_std"] = np.asarray(solved.pixel_std, dtype=np.float64)
    info["channel"] = {"kind": cfg.defense.channel, "noise_mode": cfg.defense.noise_mode,
                       "laplace_b": getattr(solved, "laplace_b", None)}


def _invert(cfg, model, params, observed, name, shape, n_classes, progress) -> StageOutput:
    from core.attacks.gradient_inversion import invert, preset

    spec = preset(name) if cfg.attack.iterations is None else preset(name, iterations=cfg.attack.iterations)
    t0 = time.perf_counter()
    res = invert(model, params, observed, spec=spec, batch_size=cfg.attack.batch_size,
                 image_shape=shape, n_classes=n_classes, seed=cfg.seed,
                 observation=cfg.attack.observation, local_steps=cfg.attack.local_steps,
                 local_lr=cfg.attack.local_lr, progress=progress)
    return StageOutput(arrays={"images": res.images.numpy().astype(np.float32),
                               "labels": res.labels.numpy().astype(np.int64),
                               "loss": res.loss.numpy().astype(np.float64)},
                       meta={"seconds": time.perf_counter() - t0,
                             "nan_restarts": int(getattr(res, "nan_restarts", 0)),
                             "iterations": int(getattr(res, "iterations", 0))})


def _bounds(cfg, spec, solved, dp, metrics, mse_per_image, notes, steps) -> None:
    """Theorem 1 per round and over the run, the Wiener MMSE, and the count of measured
    per-image MSEs below the per-round bound (with the reason on the page)."""
    from core.bounds.channel import (
        thm1_mse_bound,
        thm1_prefactor,
        wiener_mmse,
        wiener_mmse_diag_noise,
    )

    ev = spec.eigenvalues
    _, d_eff, _ = thm1_prefactor(ev)
    metrics["data_dim_informative"] = float(d_eff)
    d = len(ev)
    kind = cfg.defense.kind
    if kind == "none":
        notes.append("undefended: the upload is a deterministic function of the data, so the "
                     "information it carries is unbounded and Theorem 1 gives no floor")
        return
    steps_obs = cfg.attack.local_steps if cfg.attack.observation == "fedavg" else 1
    if kind == "channel":
        fixed = cfg.defense.noise_mode == "fixed"
        i_round = cfg.defense.kappa * (1 if fixed else steps_obs)
        i_total = float(solved.total_info(steps, cfg.defense.noise_mode))
        if cfg.defense.channel == "personalized":
            metrics["bound_wiener_mmse"] = float(wiener_mmse_diag_noise(
                spec.covariance(), np.asarray(solved.pixel_std, dtype=np.float64) ** 2))
        else:
            metrics["bound_wiener_mmse"] = float(wiener_mmse(ev, solved.noise_var_eig, d=d))
        if cfg.defense.channel == "laplace":
            notes.append("Laplace: the Wiener curve is the linear MMSE at the noise's variance "
                         "(for non-Gaussian noise the Bayes error can be lower)")
    else:  # dp_sgd: the tight per-step capacity B/(2z²) bounds what one step says about a batch
        z, _ = dp
        i_round = steps_obs * cfg.attack.batch_size / (2 * z * z)
        i_total = steps * cfg.attack.batch_size / (2 * z * z)
    per_round = float(thm1_mse_bound(ev, i_round, per="pixel"))
    total = float(thm1_mse_bound(ev, i_total, per="pixel"))
    metrics["bound_thm1_round"] = per_round
    metrics["bound_thm1_total"] = total
    metrics["bound_thm1_total_vacuous"] = float(total < VACUOUS_RATIO * max(per_round, 1e-300))
    # Theorem 1 bounds the EXPECTED error: the mean over the targets is what it is compared
    # with (core.bounds.expectation); single images below it are shown, not counted
    from core.bounds.expectation import expected_error_check

    chk = expected_error_check([mse_per_image], per_round, seed=cfg.seed)
    metrics["bound_below_count"] = float(chk.points_below)
    metrics["bound_thm1_mean_below"] = float(chk.seed_means_below)
    if chk.points_below or chk.seed_means_below:
        notes.append("Theorem 1 (per round): " + chk.explanation)


def _model_inversion(cfg, ds, model, shape, n_classes) -> StageOutput:
    """One representative per class from the trained model, started from the mean of images
    outside the training set (aux split), scored against the class centres of the train split
    (the paper reports the median over classes)."""
    from core.attacks.gradient_inversion import (
        class_centres,
        model_inversion,
        score_model_inversion,
    )

    X = np.asarray(ds.X, dtype=np.float32)
    y = np.asarray(ds.y)
    tr, ax = ds.split("train"), ds.split("aux")
    params = {n: p.detach() for n, p in model.named_parameters()}
    imgs = model_inversion(model, params, n_classes=n_classes, image_shape=shape,
                           init=X[ax].mean(0).reshape(shape), seed=cfg.seed)
    centres = class_centres(X[tr], y[tr], n_classes, shape)
    sc = score_model_inversion(imgs, centres)
    scores = {f"model_inversion_{k}": float(sc[f"mi_{k}"])
              for k in ("mse_median", "psnr_median", "ssim_median")}
    return StageOutput(arrays={"images": imgs.detach().cpu().numpy().astype(np.float32),
                               "centres": np.nan_to_num(centres).astype(np.float32)},
                       meta={"scores": scores})
