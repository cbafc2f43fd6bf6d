"""The stages of the attribute-privacy family (train → release → attack; scoring is in the
runner): each a pure function of the config part that its stage key holds
(:mod:`core.foundation.stages`). The runner :mod:`core.runs.attribute_privacy` composes them.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from core.config.schema import AttributePrivacyConfig
from core.data.base import Dataset
from core.foundation.progress import Progress
from core.foundation.releases import finite_representation
from core.foundation.seeds import stream
from core.foundation.stages import StageOutput

#: rows used for the cheap per-round evaluation (utility probe + fresh logistic attacker)
ROUND_EVAL_ROWS = 1500


def train_part(cfg: AttributePrivacyConfig, device: str) -> dict[str, Any]:
    """The config fields that determine the trained encoder (not the attackers, not the
    projection): the train stage's key."""
    d = cfg.model_dump(mode="json")
    keep = ("data", "seed", "defense", "fl", "adversary_steps", "adversary_lr_scale",
            "pretrain_epochs", "representation_dim", "hidden_dim", "critic_hidden")
    part = {"kind": cfg.kind, "device": device, **{k: d[k] for k in keep}}
    if cfg.model != type(cfg.model)():  # the default MLP's keys stay as they were
        part["model"] = d["model"]
    return part


def data_part(cfg: AttributePrivacyConfig) -> dict[str, Any]:
    """What determines anything computed on the raw data alone (raw attackers, raw utility)."""
    return {"data": cfg.data.model_dump(mode="json"), "seed": cfg.seed}


def train(cfg: AttributePrivacyConfig, ds: Dataset, defense, progress: Progress) -> StageOutput:
    """Train the encoder under the defense (TAPPFL's FedAvg loop), with a cheap per-round
    evaluation, and the in-training adversary's probabilities on the test rows."""
    from core.attacks.attribute import fresh_attacker, score_in_training
    from core.attacks.protocol import finite_proba
    from core.data.splits import subsample
    from core.defenses.tappfl import adversary_proba, encode, train_tappfl
    from core.defenses.utility import linear_probe

    X, y = np.asarray(ds.X), np.asarray(ds.y)
    attr = cfg.data.private_attribute or ds.default_attribute
    u = np.asarray(ds.attribute(attr))
    k = len(ds.attribute_values[attr])
    tr, ax, te = ds.split("train"), ds.split("aux"), ds.split("test")
    ev_tr, ev_ax, ev_te = (subsample(rows, ROUND_EVAL_ROWS, stream(cfg.seed, "round_eval", split))
                           for split, rows in (("train", tr), ("aux", ax), ("test", te)))
    per_round: dict[str, list[float]] = {"utility_acc": [], "attack_logreg_auc": [], "in_training_acc": []}

    def on_round(r: int, state) -> None:
        R, _ = finite_representation(encode(state.extractor, X[np.concatenate([ev_tr, ev_ax, ev_te])]))
        a, b = len(ev_tr), len(ev_tr) + len(ev_ax)
        per_round["utility_acc"].append(linear_probe(R[:a], y[ev_tr], R[b:], y[ev_te], seed=cfg.seed).accuracy)
        out = fresh_attacker(R[a:b], u[ev_ax], R[b:], u[ev_te], model="logreg", seed=cfg.seed, n_classes=k)
        per_round["attack_logreg_auc"].append(out.scores["auc"])
        p = finite_proba(adversary_proba(state, R[b:]))
        per_round["in_training_acc"].append(
            score_in_training(p, u[ev_te], u_known=u[ev_ax]).scores["accuracy"])

    t0 = time.perf_counter()
    state = train_tappfl(cfg, ds, upload_transform=defense.upload_transform, progress=progress,
                         on_round=on_round)
    seconds = time.perf_counter() - t0
    R_te, _ = finite_representation(encode(state.extractor, X[te]))
    proba = finite_proba(adversary_proba(state, R_te))
    rounds = len(per_round["utility_acc"])
    curves: dict[str, list[float]] = {"round": [float(r + 1) for r in range(rounds)]}
    for src, dst in (("adversary_ce", "ce_loss"), ("jsd_mi", "jsd_loss"), ("round_seconds", "seconds"),
                     ("adversary_bacc", "in_training_bacc_train")):
        if src in state.curves:
            vals = [float(v) for v in state.curves[src]][-rounds:]
            curves[dst] = [-v for v in vals] if dst == "jsd_loss" else vals
    curves.update({n: [float(v) for v in vs] for n, vs in per_round.items()})
    return StageOutput(
        arrays={"in_training_proba": proba.astype(np.float64)},
        meta={"curves": curves, "pretrain_curves": state.pretrain_curves, "seconds_train": seconds,
              "n_values": k, "attribute": attr},
        weights={"extractor": {n: t.detach().cpu() for n, t in state.extractor.state_dict().items()}},
    )


def load_encoder(cfg: AttributePrivacyConfig, ds: Dataset, trained: StageOutput, device):
    """The released encoder rebuilt from the train stage's weights."""
    from core.models.nn import Encoder

    if cfg.model != type(cfg.model)():
        from core.models import build_encoder

        attr = cfg.data.private_attribute or ds.default_attribute
        enc, _ = build_encoder(cfg.model.arch, tuple(ds.image_shape),
                               max(2, len(ds.attribute_values[attr])), cfg.model.width)
    else:
        enc = Encoder(ds.X.shape[1], hidden=cfg.hidden_dim, rep_dim=cfg.representation_dim)
    enc.load_state_dict(trained.weights["extractor"])
    return enc.to(device).eval()


def release(encoder, ds: Dataset) -> StageOutput:
    """Representations of every split (train for the utility heads, aux for the attacker's
    knowledge, test = the attacked targets); non-finite entries zeroed and counted."""
    from core.defenses.tappfl import encode

    arrays, meta = {}, {}
    for split in ("train", "aux", "test"):
        R, frac = finite_representation(encode(encoder, np.asarray(ds.X)[ds.split(split)]))
        arrays[f"R_{split}"] = R.astype(np.float32)
        meta[f"nonfinite_{split}"] = frac
    meta["nonfinite_frac"] = max(meta[f"nonfinite_{s}"] for s in ("train", "aux", "test"))
    return StageOutput(arrays=arrays, meta=meta)


def utility(R_train: np.ndarray, y_train: np.ndarray, R_test: np.ndarray, y_test: np.ndarray,
            *, seed: int, paper_head: bool = True) -> StageOutput:
    """Task heads on frozen representations: the logistic probe (the headline utility, and its
    weights for Theorem 1's C_L) and the paper's MLP evaluation head."""
    from core.defenses.utility import linear_probe, paper_eval_head

    probe = linear_probe(R_train, y_train, R_test, y_test, seed=seed)
    meta = {"utility_acc": probe.accuracy}
    if paper_head:
        meta["utility_acc_paper"] = paper_eval_head(R_train, y_train, R_test, y_test, seed=seed)
    return StageOutput(arrays={"probe_weights": np.asarray(probe.weights, np.float64)}, meta=meta)


def attack(name: str, release_obj, knowledge, params: dict[str, Any], seed: int) -> StageOutput:
    """One registered attack on a release (no ground truth here)."""
    from core.attacks.protocol import run_attack

    out = run_attack(name, release_obj, knowledge, seed=seed, **params)
    arrays = {"proba": out.proba}
    if out.calibrated is not None:
        arrays["calibrated"] = out.calibrated
    if out.decision_weights is not None:
        arrays["decision_weights"] = out.decision_weights
    return StageOutput(arrays=arrays, meta={"info": out.info})


def projection(X_rows: np.ndarray, R_rows: np.ndarray, seed: int) -> StageOutput:
    """t-SNE (PCA below 60 rows) of the same test rows, raw and learned (spec B11 Fig. 3)."""
    from core.data.projection import project

    method = "tsne" if len(X_rows) >= 60 else "pca"
    emb_raw, _ = project(X_rows, method=method, seed=seed)
    emb_rep, _ = project(R_rows, method=method, seed=seed)
    return StageOutput(arrays={"proj_raw": emb_raw, "proj_repr": emb_rep}, meta={"method": method})
