"""Runner for ``kind: membership``: train the target under its defense, train K shadow /
reference models with the same procedure (defense included: the attacker knows the
algorithm, as LiRA assumes), score every pool row with each attack, one ROC report per attack.

The pool is 2·members train rows; the target trains on a seeded half (the members), the other
half are the non-members it is scored against, so members and non-members are balanced by
construction. Each shadow trains on a half of the same pool with every row in exactly half the
shadows (:func:`core.attacks.shadows.shadow_splits`); LiRA offline reads a row's OUT shadows,
online its IN and OUT shadows; RMIA (offline) the first ``rmia_references`` OUT shadows of
each row, against population rows z from the aux split (in no shadow's training set).
Plain training ("none") trains the shadows together over stacked weights; the other defenses'
shadows train one after another with the target's own function.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from core.config import MembershipConfig
from core.progress import Progress
from core.result import Result
from core.stages import StageOutput, Stages

#: attacks that read shadow / reference models
SHADOW_ATTACKS = ("lira_offline", "lira_online", "rmia")
#: attacks whose scores pool over several target models (they need only true-class probabilities)
POOLED_ATTACKS = ("loss", "confidence", *SHADOW_ATTACKS)


def _shape(ds) -> tuple[int, int, int]:
    return tuple(ds.image_shape) if ds.image_shape else (1, 1, int(ds.X.shape[1]))


def _pool(ds, cfg: MembershipConfig) -> tuple[np.ndarray, np.ndarray]:
    """(pool rows (2M,), is_member (2M,) bool for the target)."""
    tr = ds.split("train")
    m = cfg.train.members
    if 2 * m > len(tr):
        raise ValueError(f"train.members: got {m}; at most {len(tr) // 2} for {ds.name!r} "
                         f"(a pool of 2·members train rows)")
    rng = np.random.default_rng([cfg.seed, 9001])
    pool = np.sort(rng.choice(tr, size=2 * m, replace=False))
    member = np.zeros(2 * m, dtype=bool)
    member[rng.choice(2 * m, size=m, replace=False)] = True
    return pool, member


class _Trained:
    """A trained model as the attacker queries it: true-class probabilities and losses, and
    for Inf2Guard its representations and in-training adversary."""

    def __init__(self, predict, represent=None, adversary=None, extra=None) -> None:
        self.predict, self.represent, self.adversary = predict, represent, adversary
        self.extra = extra or {}


def _train_one(cfg: MembershipConfig, X: torch.Tensor, y: torch.Tensor, rows: np.ndarray,
               shape, n_classes: int, seed: int, noise, X_d0: torch.Tensor | None) -> _Trained:
    """The target's training procedure under its defense (also each shadow's)."""
    from core.nn import image_classifier, seeded

    t, d = cfg.train, cfg.defense
    Xr, yr = X[rows], y[rows]
    if d.kind == "inf2guard":
        from core.defenses.inf2guard import train_inf2guard

        pre = max(1, t.epochs // 4)
        m = train_inf2guard(Xr, yr, X_d0, n_classes=n_classes, tradeoff_lambda=d.tradeoff_lambda,
                            epochs=max(1, t.epochs - pre), pretrain_epochs=pre,
                            batch_size=t.batch_size, lr=t.lr, seed=seed)
        return _Trained(lambda Z: torch.softmax(m.logits(Z), -1), m.representations,
                        m.membership_proba)
    model = seeded(lambda: image_classifier("mlp", shape, n_classes),
                   torch.Generator().manual_seed(int(seed))).to(X.device)
    extra: dict[str, Any] = {}
    if d.kind == "dp_sgd":
        from core.defenses.dpsgd import train_dpsgd

        res = train_dpsgd(model, Xr, yr, image_shape=shape, epochs=t.epochs,
                          batch_size=t.batch_size, lr=t.lr, optimizer=t.optimizer,
                          max_grad_norm=d.clip_norm, delta=d.delta,
                          noise_multiplier=d.noise_multiplier, target_epsilon=d.target_epsilon,
                          accountant=d.accountant, seed=seed)
        extra = {"epsilon": res.epsilon, "accountant": res.accountant,
                 "noise_multiplier": res.noise_multiplier}
    else:
        from core.defenses.noisy_training import train_central

        perturb = None if noise is None else (lambda x, g: noise.perturb(x, generator=g))
        mode = d.noise_mode if d.kind == "channel" else "redraw"
        train_central(model, Xr, yr, image_shape=shape, epochs=t.epochs, batch_size=t.batch_size,
                      lr=t.lr, optimizer=t.optimizer, perturb=perturb, noise_mode=mode, seed=seed)
    model.eval()

    @torch.no_grad()
    def predict(Z: torch.Tensor) -> torch.Tensor:
        return torch.softmax(model(Z), -1)

    return _Trained(predict, extra=extra)


def _true_prob(p: torch.Tensor, y: torch.Tensor) -> np.ndarray:
    return p.gather(1, y.view(-1, 1)).squeeze(1).double().cpu().numpy()


def run_membership(cfg: MembershipConfig, progress: Progress, stages: Stages | None = None) -> Result:
    from core.attacks import membership as M
    from core.attacks.shadows import shadow_splits, train_shadows
    from core.data import load_dataset
    from core.device import get_device

    stages = stages or Stages(None)
    t0 = time.perf_counter()
    progress.update(0.01, f"loading {cfg.data.name}")
    ds = load_dataset(cfg.data, cfg.seed)
    shape = _shape(ds)
    n_classes = len(ds.label_names)
    dev = get_device(cfg.device)
    X = torch.tensor(np.asarray(ds.X), dtype=torch.float32, device=dev)
    y = torch.tensor(np.asarray(ds.y), dtype=torch.int64, device=dev)
    pool, member = _pool(ds, cfg)
    te, ax = np.array(ds.split("test")), np.array(ds.split("aux"))
    rng = np.random.default_rng([cfg.seed, 9002])
    d0 = np.sort(rng.choice(ax, size=min(len(ax), cfg.train.members), replace=False))
    z_rows = np.setdiff1d(ax, d0) if len(ax) > len(d0) else ax
    X_d0 = X[d0] if cfg.defense.kind == "inf2guard" else None
    noise = None
    if cfg.defense.kind == "channel":
        from core.runs import gradient_stages as GS

        spec = GS.spectrum_from(GS.spectrum(np.asarray(ds.X)[ds.split("train")]))
        _, noise = GS.build_channel(cfg.defense, spec, shape)
    notes: list[str] = []
    metrics: dict[str, float] = {}
    intervals: dict[str, dict[str, float]] = {}
    artifacts: dict[str, np.ndarray] = {}

    # -- the target (a stage: a change of attack, pooling or projection never retrains it)
    part = {"data": cfg.data.model_dump(mode="json"), "seed": cfg.seed, "device": dev.type,
            "defense": cfg.defense.model_dump(mode="json"),
            "train": cfg.train.model_dump(mode="json")}

    def compute_target() -> StageOutput:
        progress.update(0.05, "training the target")
        tgt = _train_one(cfg, X, y, pool[member], shape, n_classes, cfg.seed, noise, X_d0)
        arrays = {"p_pool": tgt.predict(X[pool]).double().cpu().numpy(),
                  "p_test": tgt.predict(X[te]).double().cpu().numpy(),
                  "p_z": _true_prob(tgt.predict(X[z_rows]), y[z_rows])}
        if tgt.represent is not None:
            arrays["r_pool"] = tgt.represent(X[pool]).double().cpu().numpy()
            arrays["adversary_pool"] = tgt.adversary(X[pool]).double().cpu().numpy()
        meta = {k: v for k, v in tgt.extra.items() if isinstance(v, int | float | str)}
        return StageOutput(arrays=arrays, meta=meta)

    tgt_out, target_key = stages.get("target", part, compute_target)
    A = tgt_out.arrays
    p_pool, p_test = torch.tensor(A["p_pool"]), torch.tensor(A["p_test"])
    y_cpu = y.cpu()
    acc_test = float((p_test.argmax(-1) == y_cpu[te]).float().mean())
    acc_members = float((p_pool[member].argmax(-1) == y_cpu[pool][member]).float().mean())
    metrics.update(utility_acc=acc_test, utility_train_acc=acc_members,
                   train_test_gap=acc_members - acc_test,
                   utility_majority=float(np.bincount(np.asarray(ds.y)[te]).max() / len(te)),
                   members=float(member.sum()), nonmembers=float((~member).sum()))
    for k, v in tgt_out.meta.items():
        if k == "epsilon":
            metrics["epsilon_accountant"] = float(v)
        elif k == "noise_multiplier":
            metrics["dp_noise_multiplier"] = float(v)
    if cfg.defense.kind == "channel":
        metrics["kappa"] = float(cfg.defense.kappa)
    if cfg.defense.kind == "inf2guard":
        metrics["tradeoff_lambda"] = float(cfg.defense.tradeoff_lambda)

    # -- shadow / reference models: the same procedure on halves of the pool (a stage)
    K = cfg.attack.shadows
    in_mask = shadow_splits(len(pool), K, seed=cfg.seed + 1)
    needs_shadows = bool(set(SHADOW_ATTACKS) & set(cfg.attack.attackers)) or (
        cfg.attack.targets > 1 and bool(set(POOLED_ATTACKS) & set(cfg.attack.attackers)))
    sub = progress.sub(0.2, 0.85)
    probs_pool = probs_z = None

    def compute_shadows() -> StageOutput:
        sub.update(0.0, f"training {K} shadow models")
        if cfg.defense.kind == "none":
            from core.attacks.shadows import per_example_true_prob
            from core.nn import image_classifier

            t = cfg.train
            sh = train_shadows(lambda: image_classifier("mlp", shape, n_classes), X[pool], y[pool],
                               in_mask, image_shape=shape, epochs=t.epochs, batch_size=t.batch_size,
                               lr=t.lr, optimizer=t.optimizer, seed=cfg.seed + 2)
            pp = per_example_true_prob(sh, X[pool], y[pool]).T.double().cpu().numpy()  # (n, K)
            pz = per_example_true_prob(sh, X[z_rows], y[z_rows]).T.double().cpu().numpy()
        else:
            cols_pool, cols_z = [], []
            for k in range(K):
                sub.update(k / K, f"shadow model {k + 1}/{K} ({cfg.defense.kind})")
                s = _train_one(cfg, X, y, pool[in_mask[k]], shape, n_classes,
                               cfg.seed + 1000 + k, noise, X_d0)
                cols_pool.append(_true_prob(s.predict(X[pool]), y[pool]))
                cols_z.append(_true_prob(s.predict(X[z_rows]), y[z_rows]))
            pp, pz = np.stack(cols_pool, 1), np.stack(cols_z, 1)
        return StageOutput(arrays={"probs_pool": pp, "probs_z": pz})

    if needs_shadows:
        sh_out, _ = stages.get("shadows", {**part, "shadows": K}, compute_shadows)
        probs_pool = np.asarray(sh_out.arrays["probs_pool"], np.float64)
        probs_z = np.asarray(sh_out.arrays["probs_z"], np.float64)

    # -- scores per attack (higher = member), one report each
    progress.update(0.88, "scoring")
    ytrue = y_cpu[pool]
    p_true = _true_prob(p_pool, ytrue)
    losses = F.cross_entropy(torch.log(p_pool.clamp_min(1e-12)), ytrue, reduction="none")
    p_z = np.asarray(A["p_z"], np.float64)
    scores: dict[str, np.ndarray] = {}
    labels: dict[str, np.ndarray] = {}
    extra: dict[str, float] = {}
    scored: dict[str, list[int]] = {}
    for name in cfg.attack.attackers:
        labels[name] = member
        if name == "loss":
            scores[name] = M.loss_attack(losses.double().cpu().numpy())
        elif name == "confidence":
            scores[name] = M.confidence_attack(p_true)
        elif name == "entropy":
            scores[name] = M.entropy_attack(p_pool.double().cpu().numpy())
        elif name in SHADOW_ATTACKS:
            scores[name] = _shadow_attack(name, cfg, p_true, probs_pool, in_mask.T, p_z, probs_z)
        elif name == "in_training":
            scores[name] = np.asarray(A["adversary_pool"], np.float64)
        elif name == "representation":
            scores[name], ce = _representation_attack(A["r_pool"], member, cfg.seed)
            extra["representation_ce_nats"] = ce
    # pooled targets (ML Privacy Meter's protocol): shadow t as a further target, scored against
    # the other shadows, so TPR at 0.1 % FPR reads thousands of non-members
    T = cfg.attack.targets
    pooled = [a for a in cfg.attack.attackers if a in POOLED_ATTACKS]
    if T > 1 and pooled:
        for t in range(T - 1):
            rest = np.arange(K) != t
            pt = np.clip(probs_pool[:, t], 1e-12, 1.0)
            for name in pooled:
                if name == "loss":
                    sc = M.loss_attack(-np.log(pt))
                elif name == "confidence":
                    sc = M.confidence_attack(pt)
                else:
                    sc = _shadow_attack(name, cfg, pt, probs_pool[:, rest], in_mask.T[:, rest],
                                        probs_z[:, t], probs_z[:, rest])
                scores[name] = np.concatenate([scores[name], sc])
                labels[name] = np.concatenate([labels[name], in_mask[t]])
        notes.append(f"scores pooled over {T} target models (the target and {T - 1} shadow "
                     f"models, each against the other shadows) for {', '.join(pooled)}; "
                     "the other attacks score the target alone")
    for name, sc in scores.items():
        ok = np.flatnonzero(np.isfinite(sc))
        # shadow targets hold about, not exactly, half the pool: balance before scoring
        ok = ok[M.balance_members(labels[name][ok], seed=cfg.seed)]
        rep = M.membership_report(sc[ok], labels[name][ok], seed=cfg.seed)
        metrics[f"mia_{name}_auc"] = rep["auc"]
        metrics[f"mia_{name}_adv"] = rep["advantage"]
        metrics[f"mia_{name}_bacc"] = rep["balanced_accuracy"]
        metrics[f"mia_{name}_tpr_at_1pct_fpr"] = rep["tpr_at_1pct"]
        metrics[f"mia_{name}_tpr_at_0p1pct_fpr"] = rep["tpr_at_0p1pct"]
        metrics[f"mia_{name}_epsilon_lower_bound"] = rep["epsilon_lower_bound"]
        n = int(rep["n_members"] + rep["n_nonmembers"])
        scored[name] = [int(rep["n_members"]), int(rep["n_nonmembers"])]
        for stat, key in (("auc", "auc_interval"), ("adv", "advantage_interval"),
                          ("bacc", "balanced_accuracy_interval")):
            lo, hi = rep[key]
            intervals[f"mia_{name}_{stat}"] = {"lo": float(lo), "hi": float(hi), "n": n}
        artifacts[f"roc_{name}_fpr"] = np.asarray(rep["roc_fpr"], np.float64)
        artifacts[f"roc_{name}_tpr"] = np.asarray(rep["roc_tpr"], np.float64)
        if not rep["tpr_at_0p1_meaningful"]:
            notes.append(f"{name}: TPR at 0.1 % FPR from {rep['n_nonmembers']} non-members "
                         "(fewer than 1,000): not meaningful")
    if "representation_ce_nats" in extra:
        # Inf2Guard Theorem 1 (spec 004 §4.1) at H(u|r) estimated by the representation
        # attacker's cross-entropy: an upper estimate of H, so the bound is optimistic
        from core.bounds.tappfl import (
            conditional_entropy_estimate_bits,
            thm2_exact_bound,
            thm2_paper_bound,
        )

        h, caveat = conditional_entropy_estimate_bits(extra["representation_ce_nats"], 2)
        metrics.update(h_u_given_r_bits=float(h), bound_mia_paper=float(thm2_paper_bound(h)),
                       bound_mia_exact=float(thm2_exact_bound(h)))
        notes.append("Inf2Guard Theorem 1: " + caveat)
    # the released representations in 2-D, coloured by membership (a stage: t-SNE costs seconds)
    if cfg.projection_points > 0:
        progress.update(0.95, "projecting the release")
        rel = A["r_pool"] if "r_pool" in A else np.log(np.clip(A["p_pool"], 1e-12, 1.0))
        n_proj = cfg.projection_points
        proj, _ = stages.get("projection", {"target": target_key, "points": n_proj},
                             lambda: _projection(rel, cfg.seed, n_proj))
        artifacts["proj_release"] = proj.arrays["embedding"]
        artifacts["proj_member"] = member[proj.arrays["indices"]].astype(np.int64)
        artifacts["proj_label"] = np.asarray(ds.y)[pool][proj.arrays["indices"]].astype(np.int64)
    best = max(scores, key=lambda n: metrics[f"mia_{n}_auc"])
    metrics["mia_auc_best"] = metrics[f"mia_{best}_auc"]
    metrics["mia_tpr_at_0p1pct_fpr_best"] = max(metrics[f"mia_{n}_tpr_at_0p1pct_fpr"] for n in scores)
    intervals["mia_auc_best"] = intervals[f"mia_{best}_auc"]
    metrics["seconds_total"] = time.perf_counter() - t0
    info = {"notes": notes, "best_attack": best, "stages": dict(stages.log),
            "accountant": tgt_out.meta.get("accountant"), "scored": scored,
            "projection_release": "r" if "r_pool" in A else "log_probs"}
    return Result(kind=cfg.kind, config=cfg.model_dump(mode="json"), seed=cfg.seed,
                  metrics=metrics, intervals=intervals, artifacts=artifacts, info=info)


def _projection(release: np.ndarray, seed: int, points: int) -> StageOutput:
    """t-SNE of the release on at most ``points`` pool rows (a seeded subsample)."""
    from core.projection import project

    emb, idx = project(np.asarray(release, np.float64), method="tsne", seed=seed,
                       max_points=points)
    return StageOutput(arrays={"embedding": emb, "indices": idx})


def _shadow_attack(name: str, cfg: MembershipConfig, p_true: np.ndarray, probs: np.ndarray,
                   ins: np.ndarray, p_z: np.ndarray | None, probs_z: np.ndarray) -> np.ndarray:
    """LiRA (offline / online) or offline RMIA scores of one target's true-class probabilities
    ``p_true`` (n,) against shadow models' ``probs`` (n, K') whose training sets are ``ins``
    (n, K') bool; RMIA's population rows z: the target's ``p_z`` and the shadows' ``probs_z``."""
    from core.attacks import membership as M

    if name in ("lira_offline", "lira_online"):
        phi = M.logit_scale(probs)
        # every row gets as many IN (and OUT) models as the row with the fewest: a shadow target
        # leaves its members K/2 − 1 IN and K/2 OUT models and its non-members the reverse, and
        # Gaussians fitted to unequal counts bias the ranking (below chance at K = 4)
        n_in, n_out = int(ins.sum(1).min()), int((~ins).sum(1).min())
        use_in = ins & (np.cumsum(ins, 1) <= n_in)
        use_out = ~ins & (np.cumsum(~ins, 1) <= n_out)
        out_phi = np.where(use_out, phi, np.nan)
        if name == "lira_offline":
            return M.lira_offline(M.logit_scale(p_true), out_phi)
        return M.lira_online(M.logit_scale(p_true), np.where(use_in, phi, np.nan), out_phi)
    R = cfg.attack.rmia_references
    # each row's first R OUT shadows are its reference models (offline RMIA)
    order = np.argsort(ins, axis=1, kind="stable")[:, :R]
    ref = np.take_along_axis(probs, order, 1)
    return M.rmia(p_true, ref, p_z, probs_z[:, :R], a=cfg.attack.rmia_a, offline=True)


def _representation_attack(R: np.ndarray, member: np.ndarray, seed: int) -> tuple[np.ndarray, float]:
    """The paper's representation attack (spec 004 §3.1): a fresh MLP membership classifier on
    r trained on 80 % of the pool with true labels; every pool row scored by cross-fitting (two
    folds of 80/20 would leave rows unscored, so five folds). Returns (scores, the attacker's
    mean cross-entropy in nats)."""
    from core.attacks.attribute import fresh_attacker

    u = member.astype(np.int64)
    out = np.full(len(u), np.nan)
    ce = []
    folds = np.random.default_rng([seed, 9003]).permutation(len(u)) % 5
    for f in range(5):
        tr, te = folds != f, folds == f
        res = fresh_attacker(R[tr], u[tr], R[te], u[te], model="mlp", seed=seed + f, n_classes=2)
        out[te] = res.proba[:, 1]
        ce.append(res.ce_nats * te.sum())
    return out, float(np.sum(ce) / len(u))
