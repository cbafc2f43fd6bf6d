"""Runner for ``kind: gradient_leakage`` (spec 001): spectrum → train under the defense →
the victim's uploads for T targets → gradient inversion (every chosen preset, all targets in
one batched optimisation) and model inversion → scores, bounds and utility.

The defense is a :class:`core.foundation.builds.DefenseBuild` (its training procedure, its
data-space transform or uploaded-gradient channel, its budget and its information bound); the
attacks are the registered parts of the gradient-leakage family, each called through
:func:`core.attacks.protocol.run_attack` on one :class:`core.attacks.gradient_inversion.
UploadRelease`.

The attacker sees the upload and the global model it started from, never the data or the
noise draw (:mod:`core.attacks.gradient_inversion`); reconstructions are matched to their
targets (assignment on MSE) and scored against the *clean* images. Beside the measured error
the Result carries Theorem 1's per-round bound (Gaussian plug-in for h(D), on the informative
eigen-subspace: a heuristic, labelled so), the whole-run bound (vacuous at any realistic n),
and the Wiener MMSE of an attacker who sees D̃ itself.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from core.config.schema import GradientLeakageConfig
from core.foundation import caveats
from core.foundation.progress import Progress
from core.foundation.result import Result
from core.foundation.seeds import torch_stream
from core.foundation.stages import StageOutput, Stages
from core.runs import gradient_stages as S

if TYPE_CHECKING:
    from core.attacks.gradient_inversion import UploadRelease
    from core.data.base import Dataset

FAMILY = "gradient_leakage"
#: images of each kind kept in the Result for the gallery
GALLERY = 16
#: a whole-run bound below this fraction of the per-round one is reported as vacuous
VACUOUS_RATIO = 1e-6


def run_gradient_leakage(cfg: GradientLeakageConfig, progress: Progress,
                         stages: Stages | None = None) -> Result:
    """Load → data spectrum and the defense → train the victim → (audit) → the victim's
    uploads → gradient inversion → bounds → model inversion → the Result."""
    from core.bounds.channel_readout import (
        image_spectrum,
        spectrum_arrays,
        spectrum_from_arrays,
    )
    from core.foundation.builds import build_defense
    from core.foundation.device import get_device
    from core.foundation.knowledge import AdversaryKnowledge

    stages = stages or Stages(None)
    t0 = time.perf_counter()
    ds, shape, n_classes, X, y, tr, te = _load(cfg, progress)
    dev = get_device(cfg.device)
    stages.map_location = str(dev)
    notes: list[str] = []
    metrics: dict[str, float] = {"data_dim": float(int(np.prod(shape)))}
    intervals: dict[str, dict[str, float]] = {}
    artifacts: dict[str, np.ndarray] = {}
    info: dict[str, Any] = {"notes": notes}

    # -- spectrum (cached per data set and seed) and the defense's channel
    progress.update(0.02, "data spectrum")
    sp_out, _ = stages.get("spectrum", S.data_part(cfg),
                           lambda: StageOutput(arrays=spectrum_arrays(image_spectrum(X[tr]))))
    spec = spectrum_from_arrays(sp_out.arrays)
    artifacts["eigenvalues"] = spec.eigenvalues.astype(np.float64)
    build = build_defense(FAMILY, cfg.defense, image_shape=shape, n_classes=n_classes,
                          train=cfg.train, spectrum=lambda: spec)
    metrics.update(build.metrics)
    artifacts.update(build.artifacts)
    info.update(build.info)
    notes.extend(build.notes)
    if S.setting(cfg, build) != cfg.train.setting:
        from core.foundation.parts import DEFENSES

        notes.append(f"{DEFENSES.get(cfg.defense.kind).title}: trains {S.setting(cfg, build)}ly; "
                     "the setting "
                     f"{cfg.train.setting!r} does not apply to it")

    # -- the victim model under the defense, the audit, the uploads and their inversion
    model, init_weights, trained, train_key = _train_victim(cfg, ds, shape, n_classes, build,
                                                            dev, stages, progress)
    tm = trained.meta
    curves, raised = _training_report(cfg, build, tm, y[te], metrics, info, notes)
    if cfg.audit.enabled:
        _audit(cfg, ds, X, y, shape, n_classes, build, dev, stages, progress,
               metrics=metrics, info=info, notes=notes)
    release, targets_np, labels, okey = _uploads(cfg, ds, model, init_weights, trained,
                                                 train_key, build, dev, progress,
                                                 metrics=metrics, artifacts=artifacts)
    knowledge = AdversaryKnowledge(n_classes=n_classes,
                                   training_algorithm="the architecture and the loss")
    per_image = _inversions(cfg, release, knowledge, okey, targets_np, labels, stages, progress,
                            metrics=metrics, intervals=intervals, artifacts=artifacts,
                            notes=notes, raised=raised)
    best = _strongest(cfg, metrics, intervals)
    info["best_inverter"] = best

    # -- bounds beside the measurements
    _bounds(cfg, spec, build, tm, metrics, per_image[best], notes, max(1, int(tm["steps"])))

    # -- model inversion of the trained model (the paper's Fig. 10)
    if cfg.attack.model_inversion:
        progress.update(0.92, "model inversion")
        mi, _ = stages.get("model_inversion", {"train": train_key},
                           lambda: _model_inversion(cfg, ds, model, shape, knowledge))
        metrics.update({k: float(v) for k, v in mi.meta["scores"].items()})
        artifacts["model_inversion"] = mi.arrays["images"]
        artifacts["class_centres"] = mi.arrays["centres"]
    return _report(cfg, stages, t0, tm, curves, raised, metrics=metrics, intervals=intervals,
                   artifacts=artifacts, info=info)


# ---------------------------------------------------------------------------------------------
# the run's steps


def _load(cfg: GradientLeakageConfig, progress: Progress
          ) -> tuple[Dataset, tuple[int, ...], int, np.ndarray, np.ndarray, np.ndarray,
                     np.ndarray]:
    """(data set, image shape, classes, X float32, y, train rows, test rows)."""
    from core.data import load_dataset

    progress.update(0.01, f"loading {cfg.data.name}")
    ds = load_dataset(cfg.data, cfg.seed)
    return (ds, tuple(ds.image_shape), len(ds.label_names), np.asarray(ds.X, dtype=np.float32),
            np.asarray(ds.y), ds.split("train"), ds.split("test"))


def _train_victim(cfg: GradientLeakageConfig, ds, shape: tuple[int, ...], n_classes: int,
                  build, dev, stages: Stages, progress: Progress
                  ) -> tuple[torch.nn.Module, dict[str, torch.Tensor], StageOutput, str]:
    """The victim model from its own initialisation rule (LeNet-sigmoid: DLG's U(−0.5, 0.5))
    on the run's seed stream, trained under the defense (the ``train`` stage) and loaded:
    (model, its initial weights, the train stage's output, its key)."""
    gen = torch_stream(cfg.seed, FAMILY, "model_init")
    model = S.victim(cfg, shape, n_classes, build, gen).to(dev)
    init_weights = {n: p.detach().clone() for n, p in model.state_dict().items()}
    trained, train_key = stages.get(
        "train", S.train_part(cfg, dev.type),
        lambda: S.train(cfg, ds, model, build, dev, progress.sub(0.03, 0.5)))
    model.load_state_dict({n: t.to(dev) for n, t in trained.weights["model"].items()})
    model.eval()
    return model, init_weights, trained, train_key


def _training_report(cfg: GradientLeakageConfig, build, tm: dict[str, Any], y_test: np.ndarray,
                     metrics: dict[str, float], info: dict[str, Any], notes: list[str]
                     ) -> tuple[dict[str, list[float]], list[Any]]:
    """Utility and steps of the training beside the majority label's rate, and the defense's
    budget at those steps: (curves, the caveats raised so far)."""
    metrics.update(utility_acc=tm["utility_acc"], steps=float(tm["steps"]),
                   seconds_train=tm.get("seconds_train", float("nan")),
                   utility_majority_images=float(np.bincount(y_test).max() / max(1, len(y_test))))
    curves = {k: list(v) for k, v in tm.get("curves", {}).items()}
    budget = build.report(tm, steps=int(tm["steps"]), batch_size=cfg.attack.batch_size)
    metrics.update(budget.metrics)
    info.update(budget.info)
    notes.extend(budget.notes)
    raised: list[Any] = []
    if tm.get("accountant_note"):
        raised.append(caveats.raised("accountant_fallback", ["epsilon_accountant"],
                                     str(tm["accountant_note"])))
    return curves, raised


def _audit(cfg: GradientLeakageConfig, ds, X: np.ndarray, y: np.ndarray,
           shape: tuple[int, ...], n_classes: int, build, dev, stages: Stages,
           progress: Progress, *, metrics: dict[str, float], info: dict[str, Any],
           notes: list[str]) -> None:
    """The one-run audit (a stage; off by default): the defense's procedure, centrally on the
    train split, once more with canaries; black-box canary records from the aux split."""
    from core.runs.audit_stage import run_audit_stage

    progress.update(0.49, f"auditing {cfg.defense.kind} ({cfg.audit.canaries} canaries)")
    if S.setting(cfg, build) != "central":
        notes.append("audit: the defense's procedure is audited trained centrally (the "
                     "canary hooks live in the central trainings)")
    Xt = torch.tensor(X, device=dev)
    yt_all = torch.tensor(y, dtype=torch.int64, device=dev)
    tr_t, ax_t = (torch.tensor(np.asarray(ds.split(s_)), device=dev)
                  for s_ in ("train", "aux"))
    audit = run_audit_stage(
        cfg.audit, build, cfg.defense, stages, S.train_part(cfg, dev.type),
        model_factory=lambda: S.victim(cfg, shape, n_classes, build,
                                       torch.Generator().manual_seed(int(cfg.seed))).to(dev),
        X=Xt[tr_t], y=yt_all[tr_t], records=(Xt[ax_t], yt_all[ax_t]), n_classes=n_classes,
        seed=cfg.seed, claimed=metrics.get("epsilon_accountant"))
    metrics.update(audit.metrics)
    notes.extend(audit.notes)
    if audit.info:
        info["audit"] = audit.info


def _uploads(cfg: GradientLeakageConfig, ds, model, init_weights: dict[str, torch.Tensor],
             trained: StageOutput, train_key: str, build, dev, progress: Progress, *,
             metrics: dict[str, float], artifacts: dict[str, np.ndarray]
             ) -> tuple[UploadRelease, np.ndarray, np.ndarray, dict[str, Any]]:
    """The attacked uploads of the seeded targets, from the fresh model (round 1) or the
    trained one: (the release the inverters see, the clean targets (T, b, *shape), their
    labels, the observation's key part)."""
    from core.attacks.gradient_inversion import UploadRelease

    shape = tuple(ds.image_shape)
    fresh = cfg.attack.model_state == "fresh"
    params = {n: p.detach() for n, p in (init_weights.items() if fresh else
                                         {n: t.to(dev) for n, t in trained.weights["model"].items()}.items())}
    params = {n: v for n, v in params.items() if n in dict(model.named_parameters())}
    arch = "" if cfg.image_model is not None or not S.model_part(cfg) else (
        f":{cfg.model.arch}@{cfg.model.width:g}")
    model_key = f"init:{cfg.train.model}{arch}:{cfg.seed}" if fresh else train_key
    rows, labels = S.select_targets(ds, cfg)
    x = torch.as_tensor(ds.images(rows.reshape(-1)).reshape(*rows.shape, *shape), device=dev)
    yt = torch.as_tensor(labels, device=dev)
    progress.update(0.5, f"uploads of {cfg.attack.targets} targets")
    observed, x_noisy = S.victim_uploads(cfg, model, params, x, yt, build,
                                         dp=build.observed_channel(trained.meta))
    targets_np = x.cpu().numpy()
    noisy_np = x_noisy.cpu().numpy()
    metrics["recon_targets"] = float(cfg.attack.targets)
    metrics["recon_batch_size"] = float(cfg.attack.batch_size)
    metrics["recon_noisy_mse"] = float(np.mean((noisy_np - targets_np) ** 2))
    flat_t = targets_np.reshape(-1, *shape)
    artifacts["targets"] = flat_t[:GALLERY]
    artifacts["noisy"] = np.clip(noisy_np.reshape(-1, *shape)[:GALLERY], 0.0, 1.0)
    artifacts.update(record_arrays(rows))
    release = UploadRelease(model=model, params=params, observed=observed, image_shape=shape)
    return release, targets_np, labels, S.observe_part(cfg, model_key)


def record_arrays(rows: np.ndarray) -> dict[str, np.ndarray]:
    """Per-record exposure (:mod:`core.report.exposure`): ``record_index``, the data-set row of each
    target image in the order of the per-image scores (``recon_<attack>_psnr``: target t's
    images t·b … t·b + b − 1)."""
    return {"record_index": np.asarray(rows, np.int64).reshape(-1).astype(np.int32)}


def _inversions(cfg: GradientLeakageConfig, release, knowledge, okey: dict[str, Any],
                targets_np: np.ndarray, labels: np.ndarray, stages: Stages,
                progress: Progress, *, metrics: dict[str, float],
                intervals: dict[str, dict[str, float]], artifacts: dict[str, np.ndarray],
                notes: list[str], raised: list[Any]) -> dict[str, np.ndarray]:
    """Every chosen preset on all targets in one batched optimisation (an ``invert`` stage
    each), scored against the clean targets after matching: returns each preset's per-image
    MSE."""
    from core.attacks.gradient_inversion import score_reconstructions
    from core.attacks.protocol import attack_part

    shape = release.image_shape
    names = list(cfg.attack.attackers)
    per_image: dict[str, np.ndarray] = {}
    for i, name in enumerate(names):
        sub = progress.sub(0.5 + 0.4 * i / len(names), 0.5 + 0.4 * (i + 1) / len(names))
        sub.update(0.0, f"{name}: inverting {cfg.attack.targets} uploads")
        out, _ = stages.get("invert", {**okey, "attack": name, "iterations": cfg.attack.iterations},
                            lambda name=name, sub=sub: _invert(cfg, release, knowledge, name,
                                                               sub),
                            label=f"invert_{name}")
        rec = out.arrays["images"]
        sc = score_reconstructions(rec, targets_np, out.arrays["labels"], labels, seed=cfg.seed)
        n_img = int(rec.shape[0] * rec.shape[1])
        part = attack_part(name, FAMILY)
        for stat in ("mse", "psnr", "psnr_median", "ssim", "label_acc"):
            metrics[part.metric_name(stat)] = float(sc[f"recon_{stat}"])
            intervals[part.metric_name(stat)] = {"lo": float(sc[f"recon_{stat}_lo"]),
                                                 "hi": float(sc[f"recon_{stat}_hi"]), "n": n_img}
        metrics[part.metric_name("seconds")] = float(out.meta.get("seconds", float("nan")))
        if out.meta.get("nan_restarts"):
            notes.append(f"{part.title}: {out.meta['nan_restarts']} target(s) re-initialised after a "
                         "non-finite loss")
            raised.append(caveats.raised(
                "recon_nonfinite_restart",
                [part.metric_name(s) for s in ("mse", "psnr", "psnr_median", "ssim")],
                f"{part.title}: {out.meta['nan_restarts']} target(s) re-initialised after a "
                "non-finite loss; their scores are from the restarted optimisation."))
        per_image[name] = sc["per_image"]["mse"]
        perm = sc["per_image"]["perm"]
        matched = np.stack([rec[i][perm[i]] for i in range(len(rec))])
        artifacts[f"recon_{name}"] = matched.reshape(-1, *shape)[:GALLERY]
        artifacts[f"recon_{name}_psnr"] = np.asarray(sc["per_image"]["psnr"], dtype=np.float64)
    return per_image


def _strongest(cfg: GradientLeakageConfig, metrics: dict[str, float],
               intervals: dict[str, dict[str, float]]) -> str:
    """The strongest inverter (by median PSNR), reported as ``recon_best_*`` and as the
    headline ``recon_*``."""
    from core.attacks.protocol import attack_part

    names = list(cfg.attack.attackers)
    best = max(names, key=lambda n: metrics[attack_part(n, FAMILY).metric_name("psnr_median")])
    for stat in ("mse", "psnr", "psnr_median", "ssim", "label_acc", "seconds"):
        metrics[f"recon_best_{stat}"] = metrics[f"recon_{best}_{stat}"]
        if f"recon_{best}_{stat}" in intervals:
            intervals[f"recon_best_{stat}"] = intervals[f"recon_{best}_{stat}"]
    metrics["recon_psnr_median"] = metrics["recon_best_psnr_median"]
    metrics["recon_mse"] = metrics["recon_best_mse"]
    metrics["recon_psnr"] = metrics["recon_best_psnr"]
    metrics["recon_ssim"] = metrics["recon_best_ssim"]
    return best


def _report(cfg: GradientLeakageConfig, stages: Stages, t0: float, tm: dict[str, Any],
            curves: dict[str, list[float]], raised: list[Any], *, metrics: dict[str, float],
            intervals: dict[str, dict[str, float]], artifacts: dict[str, np.ndarray],
            info: dict[str, Any]) -> Result:
    """The Result: each inverter's threat model, the stage log, timings and the caveats."""
    from core.attacks.protocol import attack_part

    info["threat"] = {n: attack_part(n, FAMILY).threat.as_dict() for n in cfg.attack.attackers}
    info["stages"] = dict(stages.log)
    metrics["seconds_total"] = time.perf_counter() - t0
    info["caveats"] = caveats.collect(cfg.kind, metrics, info, cfg.model_dump(mode="json"),
                                      intervals=intervals, explicit=raised)
    return Result(kind=cfg.kind, config=cfg.model_dump(mode="json"), seed=cfg.seed, metrics=metrics, intervals=intervals, curves=curves,
                  artifacts=artifacts, info=info, timings={"train_s": tm.get("seconds_train", 0.0)})


# ---------------------------------------------------------------------------------------------
# helpers


def _invert(cfg, release, knowledge, name, progress) -> StageOutput:
    """One registered inverter on every upload (one batched optimisation)."""
    from core.attacks.protocol import attack_params, attack_part, run_attack

    params = attack_params(attack_part(name, FAMILY), cfg.attack)
    t0 = time.perf_counter()
    res = run_attack(name, release, knowledge, family=FAMILY, seed=cfg.seed, progress=progress,
                     **params)
    return StageOutput(arrays={"images": res.images.numpy().astype(np.float32),
                               "labels": res.labels.numpy().astype(np.int64),
                               "loss": res.loss.numpy().astype(np.float64)},
                       meta={"seconds": time.perf_counter() - t0,
                             "nan_restarts": int(getattr(res, "nan_restarts", 0)),
                             "iterations": int(getattr(res, "iterations", 0))})


def _bounds(cfg, spec, build, meta, metrics, mse_per_image, notes, steps) -> None:
    """Theorem 1 per round and over the run at the information the defense lets through (its
    :class:`core.foundation.builds.InformationBound`), its own floor (the Wiener MMSE), and the
    count of measured per-image MSEs below the per-round bound (with the reason on the page)."""
    from core.bounds.channel import is_vacuous, quantization_floor, thm1_mse_bound, thm1_prefactor

    ev = spec.eigenvalues
    _, d_eff, _ = thm1_prefactor(ev)
    metrics["data_dim_informative"] = float(d_eff)
    if build.bound is None:
        notes.append(f"defense {cfg.defense.kind!r} bounds no information: the upload is a "
                     "deterministic function of the data, so the information it carries is "
                     "unbounded and Theorem 1 gives no floor")
        return
    steps_obs = cfg.attack.local_steps if cfg.attack.observation == "fedavg" else 1
    info = build.bound(spec, meta, steps=steps, steps_observed=steps_obs,
                       batch_size=cfg.attack.batch_size)
    if info.per_round == math.inf:
        notes.extend(info.notes)
        return
    metrics.update(info.metrics)
    notes.extend(info.notes)
    per_round = float(thm1_mse_bound(ev, info.per_round, per="pixel"))
    total = float(thm1_mse_bound(ev, info.total, per="pixel"))
    metrics["bound_thm1_round"] = per_round
    metrics["bound_thm1_total"] = total
    # a floor at or below the 8-bit quantisation error Δ²/12 excludes nothing an attacker could
    # reach (core.bounds.channel.is_vacuous); the whole run also when it is a vanishing share of
    # one round's floor
    q = quantization_floor()
    metrics["bound_quantization_floor"] = q
    metrics["bound_thm1_round_vacuous"] = float(is_vacuous(per_round, q))
    metrics["bound_thm1_total_vacuous"] = float(
        is_vacuous(total, q) or total < VACUOUS_RATIO * max(per_round, 1e-300))
    # Theorem 1 bounds the EXPECTED error: the mean over the targets is what it is compared
    # with (core.bounds.expectation); single images below it are shown, not counted
    from core.bounds.expectation import expected_error_check

    chk = expected_error_check([mse_per_image], per_round, seed=cfg.seed)
    metrics["bound_below_count"] = float(chk.points_below)
    metrics["bound_thm1_mean_below"] = float(chk.seed_means_below)
    if chk.points_below or chk.seed_means_below:
        notes.append("Theorem 1 (per round): " + chk.explanation)


def _model_inversion(cfg, ds, model, shape, knowledge) -> StageOutput:
    """One representative per class from the trained model, started from the mean of images
    outside the training set (aux split), scored against the class centres of the train split
    (the paper reports the median over classes)."""
    from core.attacks.gradient_inversion import (
        WhiteBoxModelRelease,
        class_centres,
        score_model_inversion,
    )
    from core.attacks.protocol import run_attack
    from core.foundation.knowledge import AdversaryKnowledge

    X = np.asarray(ds.X, dtype=np.float32)
    y = np.asarray(ds.y)
    tr, ax = ds.split("train"), ds.split("aux")
    params = {n: p.detach() for n, p in model.named_parameters()}
    know = AdversaryKnowledge(n_classes=knowledge.n_classes,
                              extra={"init": X[ax].mean(0).reshape(shape)})
    imgs = run_attack("model_inversion", WhiteBoxModelRelease(model, params, shape), know,
                      seed=cfg.seed)
    centres = class_centres(X[tr], y[tr], knowledge.n_classes, shape)
    sc = score_model_inversion(imgs, centres)
    scores = {f"model_inversion_{k}": float(sc[f"mi_{k}"])
              for k in ("mse_median", "psnr_median", "ssim_median")}
    return StageOutput(arrays={"images": imgs.detach().cpu().numpy().astype(np.float32),
                               "centres": np.nan_to_num(centres).astype(np.float32)},
                       meta={"scores": scores})
