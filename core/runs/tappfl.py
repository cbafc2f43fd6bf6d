"""Runner for ``kind: tappfl`` — TAPPFL and its baselines in one FedAvg loop, then the attacks,
the utility heads, the bounds and the projections (the Result's contents: :func:`run_tappfl`).

Defenses (spec B10 "Baselines"):
- ``tappfl``: the extractor trained on −λ·CE(g(f(x)), u) − (1−λ)·I_JSD(x; f(x) | u) (Eq. 7);
- ``none``: the same loop at λ = 0 (utility term only): the undefended representation;
- ``dp_gaussian`` / ``dp_laplace``: λ = 0 training, each device's upload clipped and noised
  for a per-round (ε, δ); total ε over rounds from a named accountant;
- ``pruning``: λ = 0 training, the smallest-magnitude fraction of each upload zeroed.

Privacy is measured three ways, side by side: the devices' own in-training adversaries, fresh
server-side attackers (logistic regression, MLP) trained on frozen representations of the aux
split and scored on the test split, and the no-model prior. The fresh attackers are usually
much stronger than the in-training adversary — a finding the page shows, not a bug.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from core.config import TappflConfig
from core.progress import Progress
from core.result import Result

#: rows used for the cheap per-round evaluation (utility probe + fresh logistic attacker)
ROUND_EVAL_ROWS = 1500
WHO = ("in_training", "logreg", "mlp", "prior", "raw_logreg", "raw_mlp")


def _rows(idx: np.ndarray, cap: int, seed: int) -> np.ndarray:
    if len(idx) <= cap:
        return idx
    return np.sort(np.random.default_rng(seed).choice(idx, size=cap, replace=False))


def finite_representation(R: np.ndarray) -> tuple[np.ndarray, float]:
    """Replace non-finite entries (a diverged extractor, e.g. under heavy DP noise) by 0.

    A NaN/inf entry carries nothing a head or an attacker can use, so zeroing it measures what
    the released representation still holds; the returned fraction is reported with the run."""
    bad = ~np.isfinite(R)
    frac = float(bad.mean()) if R.size else 0.0
    return (np.where(bad, 0.0, R).astype(np.float32) if frac else R), frac


def finite_proba(P: np.ndarray) -> np.ndarray:
    """Rows of class probabilities with a NaN/inf (an adversary trained on a diverged
    representation) become uniform: they carry no information."""
    bad = ~np.all(np.isfinite(P), axis=1)
    if not bad.any():
        return P
    out = np.array(P, dtype=np.float64, copy=True)
    out[bad] = 1.0 / P.shape[1]
    return out


def build_upload_transform(cfg: TappflConfig):
    """The upload transform of a baseline defense (None for tappfl / none)."""
    if cfg.defense in ("dp_gaussian", "dp_laplace"):
        from core.defenses.dp import DPUpload

        mech = "gaussian" if cfg.defense == "dp_gaussian" else "laplace"
        return DPUpload(mech, epsilon=cfg.dp.epsilon, delta=cfg.dp.delta, clip_norm=cfg.dp.clip_norm)
    if cfg.defense == "pruning":
        from core.defenses.compression import PruneUpload

        return PruneUpload(cfg.pruning_rate, target=cfg.pruning_target)
    return None


def _dp_metrics(cfg: TappflConfig, transform) -> tuple[dict[str, float], dict[str, Any]]:
    from core.bounds.accountants import total_epsilon
    from core.fl.fedavg import num_sampled

    # The server samples the devices, so it knows who took part: no amplification by
    # subsampling against it. A device's worst case is taking part in every round (q = 1).
    q = 1.0
    sampled = num_sampled(cfg.fl.num_devices, cfg.fl.fraction_fit) / cfg.fl.num_devices
    if transform.mechanism == "gaussian":
        tot = total_epsilon(mechanism="gaussian", eps_round=cfg.dp.epsilon, delta=cfg.dp.delta,
                            rounds=cfg.fl.rounds, sample_rate=q, noise_multiplier=transform.noise_multiplier)
        m = {"dp_sigma": transform.sigma}
    else:
        tot = total_epsilon(mechanism="laplace", eps_round=cfg.dp.epsilon, delta=cfg.dp.delta,
                            rounds=cfg.fl.rounds, sample_rate=q)
        m = {"dp_laplace_b": transform.b}
    m.update(dp_epsilon_round=cfg.dp.epsilon, dp_epsilon_total=float(tot["epsilon_total"]),
             dp_delta_total=float(tot["delta_total"]), dp_noise_multiplier=transform.noise_multiplier,
             dp_fraction_sampled=sampled)
    info = {"accountant": tot["accountant"], "dp": transform.describe(),
            "dp_threat_model": ("noise added on each device against the honest-but-curious server: "
                                "replace-one-update sensitivity 2·clip, no subsampling amplification "
                                "(the server knows who was sampled), worst case all rounds")}
    return m, info


def run_tappfl(cfg: TappflConfig, progress: Progress) -> Result:
    """Train, attack, bound. The Result holds

    - metrics: ``utility_acc`` (logistic probe on frozen r), ``utility_acc_paper`` (the authors'
      eval head), ``utility_acc_raw`` (probe on raw x); ``attack_<who>_<acc|bacc|auc|adv|ce_nats>``
      and ``gap_<who>`` (accuracy − 1/k) for who ∈ in_training, logreg, mlp, prior, raw_logreg,
      raw_mlp; ``bound_*`` (Theorem 2 paper/exact forms at the CE estimate of H(u|r), Fano,
      Theorem 1's right-hand side and constants, validity/vacuity flags); ``dp_*`` or
      ``pruning_rate``; ``ce_loss``/``jsd_loss``; timings.
    - curves per round: ``round``, ``ce_loss``, ``jsd_loss``, ``utility_acc``,
      ``attack_logreg_auc``, ``in_training_acc``, ``seconds``.
    - artifacts: ``proj_raw``/``proj_repr`` (t-SNE of raw test x and of r, same rows),
      ``proj_attribute``, ``proj_label``; ``roc_<who>_fpr``/``_tpr`` for binary attributes.
    """
    from core.attacks.attribute import fresh_attacker, prior_attack, score_in_training
    from core.bounds.tappfl import (
        H_ESTIMATE_CAVEAT,
        THM1_CAVEAT,
        THM2_BINARY_ONLY,
        delta_y_given_u,
        lipschitz_logistic,
        representation_radius,
        tappfl_bounds,
    )
    from core.data import load_dataset
    from core.defenses.tappfl import adversary_proba, encode, train_tappfl
    from core.metrics import roc_curve_points
    from core.utility import linear_probe, paper_eval_head

    t0 = time.perf_counter()
    progress.update(0.01, f"loading {cfg.data.name}")
    ds = load_dataset(cfg.data, cfg.seed)
    attr = cfg.data.private_attribute or ds.default_attribute
    u = np.asarray(ds.attribute(attr))
    y = np.asarray(ds.y)
    X = np.asarray(ds.X)
    k = len(ds.attribute_values[attr])
    tr, ax, te = ds.split("train"), ds.split("aux"), ds.split("test")
    notes: list[str] = []
    metrics: dict[str, float] = {"n_values": float(k), "chance": 1.0 / k}
    info: dict[str, Any] = {
        "dataset": ds.name, "private_attribute": attr, "attribute_values": ds.attribute_values[attr],
        "label_names": ds.label_names, "task": ds.task_name, "defense": cfg.defense,
    }

    transform = build_upload_transform(cfg)
    if cfg.defense in ("dp_gaussian", "dp_laplace"):
        m, i = _dp_metrics(cfg, transform)
        metrics.update(m)
        info.update(i)
    if cfg.defense == "pruning":
        metrics["pruning_rate"] = cfg.pruning_rate
    train_cfg = cfg if cfg.defense == "tappfl" else cfg.model_copy(update={"tradeoff_lambda": 0.0})
    if cfg.defense != "tappfl":
        notes.append(f"defense {cfg.defense!r} trains the extractor at λ = 0 (utility term only); "
                     "the λ slider applies to TAPPFL only")

    # -- per-round evaluation on small fixed subsamples (cheap: a probe and a logistic attacker)
    ev_tr, ev_ax, ev_te = (_rows(s, ROUND_EVAL_ROWS, cfg.seed + i) for i, s in enumerate((tr, ax, te)))
    per_round: dict[str, list[float]] = {"utility_acc": [], "attack_logreg_auc": [], "in_training_acc": []}

    def on_round(r: int, state) -> None:
        R, _ = finite_representation(encode(state.extractor, X[np.concatenate([ev_tr, ev_ax, ev_te])]))
        a, b = len(ev_tr), len(ev_tr) + len(ev_ax)
        per_round["utility_acc"].append(linear_probe(R[:a], y[ev_tr], R[b:], y[ev_te], seed=cfg.seed).accuracy)
        out = fresh_attacker(R[a:b], u[ev_ax], R[b:], u[ev_te], model="logreg", seed=cfg.seed, n_classes=k)
        per_round["attack_logreg_auc"].append(out.scores["auc"])
        p = finite_proba(adversary_proba(state, R[b:]))
        per_round["in_training_acc"].append(score_in_training(p, u[ev_te]).scores["accuracy"])

    t_train = time.perf_counter()
    state = train_tappfl(train_cfg, ds, upload_transform=transform, progress=progress.sub(0.02, 0.75),
                         on_round=on_round)
    metrics["seconds_train"] = time.perf_counter() - t_train

    # -- final evaluation on the full splits
    t_eval = time.perf_counter()
    ev = progress.sub(0.75, 1.0)
    ev.update(0.0, "encoding")
    (R_tr, f_tr), (R_ax, f_ax), (R_te, f_te) = (finite_representation(encode(state.extractor, X[s]))
                                                for s in (tr, ax, te))
    metrics["representation_nonfinite_frac"] = max(f_tr, f_ax, f_te)
    if metrics["representation_nonfinite_frac"] > 0:
        notes.append(f"the extractor diverged: {100 * metrics['representation_nonfinite_frac']:.1f} % of "
                     "representation entries are NaN/inf (set to 0 before the heads and attackers)")
    ev.update(0.1, "utility heads")
    probe = linear_probe(R_tr, y[tr], R_te, y[te], seed=cfg.seed)
    metrics["utility_acc"] = probe.accuracy
    metrics["utility_acc_paper"] = paper_eval_head(R_tr, y[tr], R_te, y[te], seed=cfg.seed)
    metrics["utility_acc_raw"] = linear_probe(X[tr], y[tr], X[te], y[te], seed=cfg.seed).accuracy

    ev.update(0.25, "attacks")
    artifacts: dict[str, np.ndarray] = {}
    outcomes = {
        "in_training": score_in_training(finite_proba(adversary_proba(state, R_te)), u[te]),
        "prior": prior_attack(u[ax], u[te], n_classes=k),
    }
    steps = [(f"{raw}{m}", Ra, Rt, m) for m in cfg.attack.attackers
             for raw, Ra, Rt in (("", R_ax, R_te), ("raw_", X[ax], X[te]))]
    for j, (who, Ra, Rt, model) in enumerate(steps):
        ev.update(0.25 + 0.5 * j / max(len(steps), 1), f"attack: fresh {who}")
        outcomes[who] = fresh_attacker(
            Ra, u[ax], Rt, u[te], model=model, seed=cfg.seed, n_classes=k,
            mlp_hidden=cfg.attack.mlp_hidden, mlp_epochs=cfg.attack.mlp_epochs, max_train=cfg.attack.max_train)
    for who, out in outcomes.items():
        s = out.scores
        for m_name, key in (("acc", "accuracy"), ("bacc", "balanced_accuracy"), ("auc", "auc"),
                            ("adv", "advantage"), ("ce_nats", "cross_entropy_nats")):
            metrics[f"attack_{who}_{m_name}"] = float(s[key])
        metrics[f"gap_{who}"] = float(s["accuracy"]) - 1.0 / k
        if k == 2 and who in ("in_training", "logreg", "mlp"):
            fpr, tpr = roc_curve_points(u[te], out.proba[:, 1])
            artifacts[f"roc_{who}_fpr"] = np.asarray(fpr, dtype=np.float32)
            artifacts[f"roc_{who}_tpr"] = np.asarray(tpr, dtype=np.float32)

    # -- bounds (Theorem 2 from the best fresh attacker's CE; Theorem 1 with estimated constants)
    ev.update(0.8, "bounds")
    fresh = [w for w in ("logreg", "mlp") if w in outcomes]
    ce = min(outcomes[w].ce_nats for w in fresh) if fresh else outcomes["prior"].ce_nats
    thm1: dict[str, float | None] = {"delta_y_u": None, "R": None, "C_L": None, "adv": None}
    if k == 2 and len(ds.label_names) == 2:
        thm1 = {
            "delta_y_u": delta_y_given_u(y[te], u[te]),
            "R": representation_radius(R_te),
            "C_L": lipschitz_logistic(probe.weights),
            "adv": max(outcomes[w].scores["advantage"] for w in ("in_training", *fresh)),
        }
    else:
        notes.append("Theorem 1 needs a binary task and a binary attribute; not computed here")
    bounds = tappfl_bounds(n_values=k, ce_nats=ce, **thm1)
    metrics.update(bounds)
    metrics["h_u_given_r_bits"] = bounds["bound_h_bits"]
    info["bound_caveat"] = H_ESTIMATE_CAVEAT
    info["thm1_caveat"] = THM1_CAVEAT
    if k != 2:
        info["thm2_message"] = THM2_BINARY_ONLY

    # -- curves
    c = state.curves
    rounds = len(per_round["utility_acc"])
    curves: dict[str, list[float]] = {"round": [float(r + 1) for r in range(rounds)]}
    for src, dst in (("adversary_ce", "ce_loss"), ("jsd_mi", "jsd_loss"), ("round_seconds", "seconds"),
                     ("adversary_bacc", "in_training_bacc_train")):
        if src in c:
            vals = [float(v) for v in c[src]][-rounds:]
            curves[dst] = [-v for v in vals] if dst == "jsd_loss" else vals
    curves.update({key: [float(v) for v in vals] for key, vals in per_round.items()})
    if curves.get("ce_loss"):
        metrics["ce_loss"] = curves["ce_loss"][-1]
    if curves.get("jsd_loss"):
        metrics["jsd_loss"] = curves["jsd_loss"][-1]

    # -- projections of raw test x and learned r (spec B11 Fig. 3)
    if cfg.projection_points > 0:
        ev.update(0.85, "projections")
        from core.projection import project

        rows = _rows(np.arange(len(te)), cfg.projection_points, cfg.seed)
        method = "tsne" if len(rows) >= 60 else "pca"
        emb_raw, _ = project(X[te][rows], method=method, seed=cfg.seed)
        emb_rep, _ = project(R_te[rows], method=method, seed=cfg.seed)
        artifacts.update(proj_raw=emb_raw, proj_repr=emb_rep,
                         proj_attribute=u[te][rows].astype(np.int64), proj_label=y[te][rows].astype(np.int64))
        info["projection_method"] = method

    metrics["seconds_eval"] = time.perf_counter() - t_eval
    metrics["seconds_total"] = time.perf_counter() - t0
    info["notes"] = notes
    info["devices"] = cfg.fl.num_devices
    metrics = {k_: (float(v) if v is not None else math.nan) for k_, v in metrics.items()}
    ev.update(1.0, "done")
    return Result(kind="tappfl", config=cfg.model_dump(mode="json"), seed=cfg.seed, metrics=metrics,
                  curves=curves, artifacts=artifacts, info=info,
                  timings={"train_s": metrics["seconds_train"], "eval_s": metrics["seconds_eval"]})
