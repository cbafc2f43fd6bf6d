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
from core.stages import Stages


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

    # -- the target
    progress.update(0.05, "training the target")
    target = _train_one(cfg, X, y, pool[member], shape, n_classes, cfg.seed, noise, X_d0)
    p_pool = target.predict(X[pool])
    p_test = target.predict(X[te])
    acc_test = float((p_test.argmax(-1) == y[te]).float().mean())
    acc_members = float((p_pool[member].argmax(-1) == y[pool][member]).float().mean())
    metrics.update(utility_acc=acc_test, utility_train_acc=acc_members,
                   train_test_gap=acc_members - acc_test,
                   utility_majority=float(np.bincount(np.asarray(ds.y)[te]).max() / len(te)),
                   members=float(member.sum()), nonmembers=float((~member).sum()))
    for k, v in target.extra.items():
        if k == "epsilon":
            metrics["epsilon_accountant"] = float(v)
        elif k == "noise_multiplier":
            metrics["dp_noise_multiplier"] = float(v)
    if cfg.defense.kind == "channel":
        metrics["kappa"] = float(cfg.defense.kappa)
    if cfg.defense.kind == "inf2guard":
        metrics["tradeoff_lambda"] = float(cfg.defense.tradeoff_lambda)

    # -- shadow / reference models: the same procedure on halves of the pool
    K = cfg.attack.shadows
    in_mask = shadow_splits(len(pool), K, seed=cfg.seed + 1)
    needs_shadows = {"lira_offline", "lira_online", "rmia"} & set(cfg.attack.attackers)
    sub = progress.sub(0.2, 0.85)
    probs_pool = probs_z = None
    if needs_shadows:
        sub.update(0.0, f"training {K} shadow models")
        if cfg.defense.kind == "none":
            from core.nn import image_classifier

            t = cfg.train
            sh = train_shadows(lambda: image_classifier("mlp", shape, n_classes), X[pool], y[pool],
                               in_mask, image_shape=shape, epochs=t.epochs, batch_size=t.batch_size,
                               lr=t.lr, optimizer=t.optimizer, seed=cfg.seed + 2)
            from core.attacks.shadows import per_example_true_prob

            probs_pool = per_example_true_prob(sh, X[pool], y[pool]).T  # (n, K)
            probs_z = per_example_true_prob(sh, X[z_rows], y[z_rows]).T
        else:
            cols_pool, cols_z = [], []
            for k in range(K):
                sub.update(k / K, f"shadow model {k + 1}/{K} ({cfg.defense.kind})")
                s = _train_one(cfg, X, y, pool[in_mask[k]], shape, n_classes,
                               cfg.seed + 1000 + k, noise, X_d0)
                cols_pool.append(_true_prob(s.predict(X[pool]), y[pool]))
                cols_z.append(_true_prob(s.predict(X[z_rows]), y[z_rows]))
            probs_pool, probs_z = np.stack(cols_pool, 1), np.stack(cols_z, 1)
        probs_pool, probs_z = np.asarray(probs_pool, np.float64), np.asarray(probs_z, np.float64)

    # -- scores per attack (higher = member), one report each
    progress.update(0.88, "scoring")
    ytrue = y[pool]
    p_true = _true_prob(p_pool, ytrue)
    losses = F.cross_entropy(torch.log(p_pool.clamp_min(1e-12)), ytrue, reduction="none")
    scores: dict[str, np.ndarray] = {}
    for name in cfg.attack.attackers:
        if name == "loss":
            scores[name] = M.loss_attack(losses.double().cpu().numpy())
        elif name == "confidence":
            scores[name] = M.confidence_attack(p_true)
        elif name == "entropy":
            scores[name] = M.entropy_attack(p_pool.double().cpu().numpy())
        elif name in ("lira_offline", "lira_online"):
            phi = M.logit_scale(probs_pool)
            out_phi = np.where(in_mask.T, np.nan, phi)
            if name == "lira_offline":
                scores[name] = M.lira_offline(M.logit_scale(p_true), out_phi)
            else:
                scores[name] = M.lira_online(M.logit_scale(p_true), np.where(in_mask.T, phi, np.nan),
                                             out_phi)
        elif name == "rmia":
            R = cfg.attack.rmia_references
            # each row's first R OUT shadows are its reference models (offline RMIA)
            order = np.argsort(in_mask.T, axis=1, kind="stable")[:, :R]
            ref = np.take_along_axis(probs_pool, order, 1)
            p_z = _true_prob(target.predict(X[z_rows]), y[z_rows])
            scores[name] = M.rmia(p_true, ref, p_z, probs_z[:, :R], a=cfg.attack.rmia_a,
                                  offline=True)
        elif name == "in_training":
            scores[name] = target.adversary(X[pool]).double().cpu().numpy()
        elif name == "representation":
            scores[name] = _representation_attack(target, X, pool, member, cfg.seed, notes)
    for name, sc in scores.items():
        ok = np.isfinite(sc)
        rep = M.membership_report(sc[ok], member[ok], seed=cfg.seed)
        metrics[f"mia_{name}_auc"] = rep["auc"]
        metrics[f"mia_{name}_adv"] = rep["advantage"]
        metrics[f"mia_{name}_bacc"] = rep["balanced_accuracy"]
        metrics[f"mia_{name}_tpr_at_1pct_fpr"] = rep["tpr_at_1pct"]
        metrics[f"mia_{name}_tpr_at_0p1pct_fpr"] = rep["tpr_at_0p1pct"]
        metrics[f"mia_{name}_epsilon_lower_bound"] = rep["epsilon_lower_bound"]
        n = int(rep["n_members"] + rep["n_nonmembers"])
        for stat, key in (("auc", "auc_interval"), ("adv", "advantage_interval"),
                          ("bacc", "balanced_accuracy_interval")):
            lo, hi = rep[key]
            intervals[f"mia_{name}_{stat}"] = {"lo": float(lo), "hi": float(hi), "n": n}
        artifacts[f"roc_{name}_fpr"] = np.asarray(rep["roc_fpr"], np.float64)
        artifacts[f"roc_{name}_tpr"] = np.asarray(rep["roc_tpr"], np.float64)
        if not rep["tpr_at_0p1_meaningful"]:
            notes.append(f"{name}: TPR at 0.1 % FPR from {rep['n_nonmembers']} non-members "
                         "(fewer than 1,000): not meaningful")
    if "representation_ce_nats" in target.extra:
        # Inf2Guard Theorem 1 (spec 004 §4.1) at H(u|r) estimated by the representation
        # attacker's cross-entropy: an upper estimate of H, so the bound is optimistic
        from core.bounds.tappfl import (
            conditional_entropy_estimate_bits,
            thm2_exact_bound,
            thm2_paper_bound,
        )

        h, caveat = conditional_entropy_estimate_bits(target.extra["representation_ce_nats"], 2)
        metrics.update(h_u_given_r_bits=float(h), bound_mia_paper=float(thm2_paper_bound(h)),
                       bound_mia_exact=float(thm2_exact_bound(h)))
        notes.append("Inf2Guard Theorem 1: " + caveat)
    best = max(scores, key=lambda n: metrics[f"mia_{n}_auc"])
    metrics["mia_auc_best"] = metrics[f"mia_{best}_auc"]
    metrics["mia_tpr_at_0p1pct_fpr_best"] = max(metrics[f"mia_{n}_tpr_at_0p1pct_fpr"] for n in scores)
    intervals["mia_auc_best"] = intervals[f"mia_{best}_auc"]
    metrics["seconds_total"] = time.perf_counter() - t0
    info = {"notes": notes, "best_attack": best, "stages": dict(stages.log),
            "accountant": target.extra.get("accountant")}
    return Result(kind=cfg.kind, config=cfg.model_dump(mode="json"), seed=cfg.seed,
                  metrics=metrics, intervals=intervals, artifacts=artifacts, info=info)


def _representation_attack(target: _Trained, X, pool, member, seed: int,
                           notes: list[str]) -> np.ndarray:
    """The paper's representation attack (spec 004 §3.1): a fresh MLP membership classifier on
    r trained on 80 % of the pool with true labels; every pool row scored by cross-fitting (two
    folds of 80/20 would leave rows unscored, so five folds)."""
    from core.attacks.attribute import fresh_attacker

    R = target.represent(X[pool]).cpu().numpy()
    u = member.astype(np.int64)
    out = np.full(len(pool), np.nan)
    ce = []
    folds = np.random.default_rng([seed, 9003]).permutation(len(pool)) % 5
    for f in range(5):
        tr, te = folds != f, folds == f
        res = fresh_attacker(R[tr], u[tr], R[te], u[te], model="mlp", seed=seed + f, n_classes=2)
        out[te] = res.proba[:, 1]
        ce.append(res.ce_nats * te.sum())
    target.extra["representation_ce_nats"] = float(np.sum(ce) / len(pool))
    return out
