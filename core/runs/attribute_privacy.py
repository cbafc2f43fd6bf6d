"""Runner for ``kind: attribute_privacy`` (formerly ``tappfl``): compose the stages
train → release → attack → score, then utility, bounds and projections.

Privacy is measured three ways, side by side: the adversary the defense trained against
(in-training Ψ), fresh attackers (calibrated, class-balanced decision) trained afterwards on the aux split's
representations (registered in :data:`core.foundation.parts.ATTACKS`), and the no-model prior; the
``raw_*`` attackers read raw x, the undefended reference. Fresh attackers are often much
stronger than the in-training adversary: a finding the page shows, not a bug.

The Result holds ``attack_<who>_<acc|bacc|auc|adv|ce_nats>`` with 95 % intervals, the
strongest attacker under fixed names (``attack_auc_best``, ``attack_bacc_best``,
``attack_acc_best``, ``advantage_best``, ``tpr_at_1pct_fpr``, ``tpr_at_0p1pct_fpr``),
``utility_acc`` (logistic probe on r), ``utility_acc_paper``, ``utility_acc_raw``,
``utility_majority``, the defense's budget metrics, ``bound_*`` (TAPPFL Theorems 1 and 2),
per-round curves, ROC arrays and the raw vs learned projections; ``info["stages"]`` says which
stages came from the stage cache.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.attacks.attribute import majority_rate
from core.attacks.protocol import (
    AttackOutput,
    attack_params,
    attack_part,
    run_attack,
    score_attack,
    strongest,
)
from core.config.schema import AttributePrivacyConfig
from core.data.base import Dataset
from core.data.splits import subsample
from core.foundation import caveats
from core.foundation.knowledge import AdversaryKnowledge, GroundTruth
from core.foundation.parts import attacks_for
from core.foundation.progress import Progress
from core.foundation.releases import RawRelease, RepresentationRelease
from core.foundation.result import Result
from core.foundation.stages import StageOutput, Stages
from core.runs import attribute_stages as S

FAMILY = "attribute_privacy"


def on_release() -> list[str]:
    """The attackers that read the release (the strongest is reported as ``*_best``): every
    one of the family that is not a no-model baseline."""
    return [a.key for a in attacks_for(FAMILY) if a.role != "baseline"]


@dataclass
class _Data:
    """The loaded data set with its private attribute u (k values) and its splits."""

    ds: Dataset
    attr: str
    X: np.ndarray
    y: np.ndarray
    u: np.ndarray
    k: int
    tr: np.ndarray
    ax: np.ndarray
    te: np.ndarray


def run_attribute_privacy(cfg: AttributePrivacyConfig, progress: Progress, stages: Stages | None = None) -> Result:
    """Load → train under the defense → release → attacks → scores, utility, bounds,
    projections → the Result."""
    from core.defenses.federated import build_defense
    from core.foundation.device import get_device

    stages = stages or Stages(None)
    t0 = time.perf_counter()
    d = _load(cfg, progress)
    dev = get_device(cfg.device)
    stages.map_location = str(dev)
    defense = build_defense(cfg.defense, cfg.fl)
    notes: list[str] = list(defense.notes)
    if cfg.model != type(cfg.model)():
        from core.defenses.tappfl_conv import MODEL_NOTE

        notes.append(MODEL_NOTE.format(arch=cfg.model.arch, width=cfg.model.width))
    trained, train_key = stages.get("train", S.train_part(cfg, dev.type),
                                    lambda: S.train(cfg, d.ds, defense, progress.sub(0.02, 0.75)))
    ev = progress.sub(0.75, 1.0)
    release, R, release_key = _release(cfg, d, trained, train_key, dev, stages, ev, notes)
    outputs = _attacks(cfg, d, stages, release, R["R_aux"], release_key, ev)
    ev.update(0.7, "scoring")
    scores, metrics, intervals, artifacts, best = _score(cfg, d, outputs, defense.metrics)
    ev.update(0.8, "utility heads")
    probe_weights = _utility(cfg, d, R, release_key, stages, metrics)
    artifacts.update(record_arrays(d, outputs, best))
    metrics.update(_theorem_bounds(cfg, d, scores, R["R_test"], probe_weights, notes))
    info = _info(cfg, d, best, defense.info)
    if cfg.projection_points > 0:
        ev.update(0.85, "projections")
        info["projection_method"] = _projections(cfg, d, R["R_test"], release_key, stages,
                                                 artifacts)
    return _report(cfg, trained, release, stages, t0, ev, metrics=metrics, intervals=intervals,
                   artifacts=artifacts, info=info, notes=notes)


def _load(cfg: AttributePrivacyConfig, progress: Progress) -> _Data:
    """The data set, its private attribute (the config's or the set's default), its splits."""
    from core.data import load_dataset

    progress.update(0.01, f"loading {cfg.data.name}")
    ds = load_dataset(cfg.data, cfg.seed)
    attr = cfg.data.private_attribute or ds.default_attribute
    return _Data(ds=ds, attr=attr, X=np.asarray(ds.X), y=np.asarray(ds.y),
                 u=np.asarray(ds.attribute(attr)), k=len(ds.attribute_values[attr]),
                 tr=ds.split("train"), ax=ds.split("aux"), te=ds.split("test"))


def _release(cfg: AttributePrivacyConfig, d: _Data, trained: StageOutput, train_key: str, dev,
             stages: Stages, ev: Progress, notes: list[str]
             ) -> tuple[RepresentationRelease, dict[str, np.ndarray], str]:
    """The released encoder and its representations of every split (a stage keyed by the
    trained encoder): (release, representations ``R_<split>``, the release stage's key)."""
    ev.update(0.0, "release")
    encoder = S.load_encoder(cfg, d.ds, trained, dev)
    rel_out, release_key = stages.get("release", {"train": train_key},
                                      lambda: S.release(encoder, d.ds))
    R = rel_out.arrays
    release = RepresentationRelease(targets=R["R_test"], encoder=encoder,
                                    nonfinite_frac=rel_out.meta["nonfinite_frac"],
                                    adversary_proba=trained.arrays["in_training_proba"])
    if release.nonfinite_frac > 0:
        notes.append(f"the encoder diverged: {100 * release.nonfinite_frac:.1f} % of representation "
                     "entries are NaN/inf (set to 0 before the heads and attackers)")
    return release, R, release_key


def _attacks(cfg: AttributePrivacyConfig, d: _Data, stages: Stages,
             release: RepresentationRelease, R_aux: np.ndarray, release_key: str,
             ev: Progress) -> dict[str, AttackOutput]:
    """Every attack's output on the release (the attackers see the release and their
    knowledge, never u of the targets): the ones every run scores (the in-training adversary;
    the no-model baseline, which sees nothing of the release and is keyed by the data alone),
    then each chosen fresh attacker on r and, as ``raw_<name>``, on raw x."""
    X, u, ax, te = d.X, d.u, d.ax, d.te
    know_r = AdversaryKnowledge(n_classes=d.k, aux_features=R_aux, aux_labels=u[ax],
                                training_algorithm="the defense's FedAvg encoder (white-box)")
    know_x = AdversaryKnowledge(n_classes=d.k, aux_features=X[ax], aux_labels=u[ax])
    outputs: dict[str, AttackOutput] = {}
    for part in attacks_for(FAMILY):
        if part.selectable:
            continue
        if part.role == "baseline":
            outputs[part.key] = _run_stage(stages, part.key, RawRelease(X[te]), know_x, {}, cfg,
                                           S.data_part(cfg))
        else:
            outputs[part.key] = run_attack(part.key, release, know_r, family=FAMILY)
    for j, name in enumerate(cfg.attack.attackers):
        ev.update(0.05 + 0.6 * j / len(cfg.attack.attackers), f"attack: fresh {name}")
        params = attack_params(attack_part(name, FAMILY), cfg.attack)
        outputs[name] = _run_stage(stages, name, release, know_r, params, cfg, {"release": release_key})
        outputs[f"raw_{name}"] = _run_stage(stages, name, RawRelease(X[te]), know_x, params, cfg,
                                            S.data_part(cfg), label=f"raw_{name}")
    return outputs


def _score(cfg: AttributePrivacyConfig, d: _Data, outputs: dict[str, AttackOutput],
           defense_metrics: dict[str, float]
           ) -> tuple[dict[str, Any], dict[str, float], dict[str, dict[str, float]],
                      dict[str, np.ndarray], str | None]:
    """Score every attack against the targets' u (the only place that reads it): per-attacker
    metrics with intervals, the gap to the majority value's rate, the strongest attacker on
    the release under fixed names and the ROC arrays of a binary attribute. Returns (scores,
    metrics, intervals, artifacts, the strongest attacker)."""
    truth = GroundTruth(d.u[d.te])
    scores = {who: score_attack(out, truth, seed=cfg.seed) for who, out in outputs.items()}
    # the accuracy gap is measured against the majority value's rate (a model-free guess),
    # not 1/k: on an imbalanced attribute 1/k would read the majority's share as leakage
    majority = majority_rate(d.u[d.te], d.k)
    metrics: dict[str, float] = {"n_values": float(d.k), "chance": 1.0 / d.k,
                                 "attribute_majority": majority, **defense_metrics}
    intervals: dict[str, dict[str, float]] = {}
    artifacts: dict[str, np.ndarray] = {}
    for who, sc in scores.items():
        for stat, v in sc.values.items():
            metrics[f"attack_{who}_{stat}"] = v
            if stat in sc.intervals:
                lo, hi = sc.intervals[stat]
                intervals[f"attack_{who}_{stat}"] = {"lo": lo, "hi": hi, "n": sc.n}
        metrics[f"gap_{who}"] = sc.values["acc"] - majority
    best = strongest({w: scores[w] for w in on_release() if w in scores})
    _best_metrics(best, scores, outputs, truth, d.k, metrics, intervals)
    for who in on_release():
        if d.k == 2 and who in outputs:
            fpr, tpr = _roc(truth.labels, outputs[who].proba[:, 1])
            artifacts[f"roc_{who}_fpr"], artifacts[f"roc_{who}_tpr"] = fpr, tpr
    return scores, metrics, intervals, artifacts, best


def record_arrays(d: _Data, outputs: dict[str, AttackOutput],
                  best: str | None) -> dict[str, np.ndarray]:
    """Per-record exposure (:mod:`core.report.exposure`): ``record_index`` (the test rows the
    attackers guess, as indices in the data set) and ``record_confidence``, the strongest
    attacker's calibrated probability of each record's true private value (chance 1/k);
    nothing when no attacker read the release."""
    if best is None:
        return {}
    from core.attacks.protocol import finite_proba

    out = outputs[best]
    proba = finite_proba(np.asarray(out.proba if out.calibrated is None else out.calibrated,
                                     np.float64))
    conf = proba[np.arange(len(d.te)), d.u[d.te]]
    return {"record_index": np.asarray(d.te).astype(np.int32),
            "record_confidence": conf.astype(np.float32)}


def _utility(cfg: AttributePrivacyConfig, d: _Data, R: dict[str, np.ndarray], release_key: str,
             stages: Stages, metrics: dict[str, float]) -> np.ndarray:
    """The task heads on r (a stage keyed by the release) and on raw x (keyed by the data)
    into ``metrics``, with the majority label's rate; returns the probe's weights (Theorem 1's
    C_L)."""
    X, y, tr, te = d.X, d.y, d.tr, d.te
    util, _ = stages.get("utility", {"release": release_key},
                         lambda: S.utility(R["R_train"], y[tr], R["R_test"], y[te], seed=cfg.seed))
    raw_util, _ = stages.get("utility", {**S.data_part(cfg), "raw": True},
                             lambda: S.utility(X[tr], y[tr], X[te], y[te], seed=cfg.seed, paper_head=False),
                             label="utility_raw")
    metrics["utility_acc"] = util.meta["utility_acc"]
    metrics["utility_acc_paper"] = util.meta["utility_acc_paper"]
    metrics["utility_acc_raw"] = raw_util.meta["utility_acc"]
    majority = int(np.bincount(y[tr]).argmax())
    metrics["utility_majority"] = float(np.mean(y[te] == majority))
    return util.arrays["probe_weights"]


def _theorem_bounds(cfg: AttributePrivacyConfig, d: _Data, scores, R_test: np.ndarray,
                    probe_weights: np.ndarray, notes: list[str]) -> dict[str, float]:
    """TAPPFL's Theorem 2 from the best fresh attacker's CE (the no-model baseline's when no
    fresh attacker ran) and Theorem 1 with estimated constants at the strongest advantage."""
    fresh = [w for w in cfg.attack.attackers if w in scores]
    baseline = [a.key for a in attacks_for(FAMILY) if a.role == "baseline"]
    ce = min(scores[w].values["ce_nats"] for w in (fresh or baseline))
    adv = max(scores[w].values["adv"] for w in on_release() if w in scores)
    return _bounds(d.k, d.ds, ce, d.y[d.te], d.u[d.te], R_test, probe_weights, adv, notes)


def _info(cfg: AttributePrivacyConfig, d: _Data, best: str | None,
          defense_info: dict[str, Any]) -> dict[str, Any]:
    """What the page names: the data, the attribute and its values, the defense, the
    strongest attacker and the bounds' caveats."""
    from core.bounds.tappfl import H_ESTIMATE_CAVEAT, THM1_CAVEAT, THM2_BINARY_ONLY

    ds = d.ds
    info: dict[str, Any] = {
        "dataset": ds.name, "private_attribute": d.attr, "attribute_values": ds.attribute_values[d.attr],
        "label_names": ds.label_names, "task": ds.task_name, "defense": cfg.defense.kind,
        "best_attacker": best, "bound_caveat": H_ESTIMATE_CAVEAT, "thm1_caveat": THM1_CAVEAT,
        "devices": cfg.fl.num_devices, **defense_info,
    }
    if d.k != 2:
        info["thm2_message"] = THM2_BINARY_ONLY
    return info


def _projections(cfg: AttributePrivacyConfig, d: _Data, R_test: np.ndarray, release_key: str,
                 stages: Stages, artifacts: dict[str, np.ndarray]) -> str:
    """Projections of the same seeded test rows, raw x and learned r (a stage keyed by the
    release), into ``artifacts`` with their attribute and label; returns the method."""
    te = d.te
    rows = subsample(len(te), cfg.projection_points, cfg.seed)
    proj, _ = stages.get("projection", {"release": release_key, "points": cfg.projection_points},
                         lambda: S.projection(d.X[te][rows], R_test[rows], cfg.seed))
    artifacts.update(proj.arrays, proj_attribute=d.u[te][rows].astype(np.int64),
                     proj_label=d.y[te][rows].astype(np.int64))
    return proj.meta["method"]


def _report(cfg: AttributePrivacyConfig, trained: StageOutput, release: RepresentationRelease,
            stages: Stages, t0: float, ev: Progress, *, metrics: dict[str, float],
            intervals: dict[str, dict[str, float]], artifacts: dict[str, np.ndarray],
            info: dict[str, Any], notes: list[str]) -> Result:
    """The Result: the training curves' last losses, timings (evaluation time excludes a
    training that came from the stage cache), notes, caveats and the stage log."""
    curves = trained.meta["curves"]
    for src, dst in (("ce_loss", "ce_loss"), ("jsd_loss", "jsd_loss")):
        if curves.get(src):
            metrics[dst] = curves[src][-1]
    metrics["representation_nonfinite_frac"] = release.nonfinite_frac
    metrics["seconds_train"] = float(trained.meta["seconds_train"])
    metrics["seconds_total"] = time.perf_counter() - t0
    metrics["seconds_eval"] = metrics["seconds_total"] - (
        metrics["seconds_train"] if stages.log.get("train") == "computed" else 0.0)
    info["notes"] = notes
    info["caveats"] = caveats.collect(cfg.kind, metrics, info, cfg.model_dump(mode="json"),
                                      intervals=intervals)
    info["stages"] = dict(stages.log)
    info["stage_seconds"] = {n: round(v, 3) for n, v in stages.seconds.items()}
    metrics = {n: (float(v) if v is not None else math.nan) for n, v in metrics.items()}
    ev.update(1.0, "done")
    return Result(kind=cfg.kind, config=cfg.model_dump(mode="json"), seed=cfg.seed, metrics=metrics,
                  intervals=intervals, curves=curves, artifacts=artifacts, info=info,
                  timings={"train_s": metrics["seconds_train"], "eval_s": metrics["seconds_eval"]})


def _run_stage(stages: Stages, name: str, release, knowledge, params, cfg, part, label=None) -> AttackOutput:
    key_part = {**part, "attack": name, "params": params, "seed": cfg.seed, "release_kind": release.kind}
    out, _ = stages.get("attack", key_part, lambda: S.attack(name, release, knowledge, params, cfg.seed),
                        label=label or name)
    return AttackOutput(name, out.arrays["proba"], out.arrays.get("calibrated"), out.meta.get("info", {}),
                        out.arrays.get("decision_weights"))


def _roc(labels: np.ndarray, score: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    from core.foundation.metrics import roc_curve_points

    fpr, tpr = roc_curve_points(labels, score)
    return np.asarray(fpr, np.float32), np.asarray(tpr, np.float32)


def _best_metrics(best, scores, outputs, truth, k, metrics, intervals) -> None:
    """The strongest attacker on the release under fixed names (by AUC)."""
    from core.foundation.metrics import tpr_at_fpr

    if best is None:
        return
    sc = scores[best]
    for stat, name in (("auc", "attack_auc_best"), ("bacc", "attack_bacc_best"),
                       ("acc", "attack_acc_best"), ("adv", "advantage_best")):
        metrics[name] = sc.values[stat]
        if stat in sc.intervals:
            lo, hi = sc.intervals[stat]
            intervals[name] = {"lo": lo, "hi": hi, "n": sc.n}
    if k == 2:
        s = outputs[best].proba[:, 1]
        metrics["tpr_at_1pct_fpr"] = tpr_at_fpr(truth.labels, s, 0.01)
        metrics["tpr_at_0p1pct_fpr"] = tpr_at_fpr(truth.labels, s, 0.001)


def _bounds(k, ds, ce, y_te, u_te, R_te, probe_weights, adv, notes) -> dict[str, float]:
    from core.bounds.tappfl import (
        delta_y_given_u,
        lipschitz_logistic,
        representation_radius,
        tappfl_bounds,
        thm1_informative_below,
    )

    thm1: dict[str, float | None] = {"delta_y_u": None, "R": None, "C_L": None, "adv": None}
    if k == 2 and len(ds.label_names) == 2:
        thm1 = {"delta_y_u": delta_y_given_u(y_te, u_te), "R": representation_radius(R_te),
                "C_L": lipschitz_logistic(probe_weights), "adv": adv}
    else:
        notes.append("Theorem 1 needs a binary task and a binary attribute; not computed here")
    out = tappfl_bounds(n_values=k, ce_nats=ce, **thm1)
    out["h_u_given_r_bits"] = out["bound_h_bits"]
    out["bound_thm1_adv_threshold"] = (
        thm1_informative_below(thm1["delta_y_u"], thm1["R"], thm1["C_L"])
        if thm1["R"] is not None else math.nan)
    return out
