"""Runner for ``kind: membership``: train the target under its defense, train K shadow /
reference models with the same procedure (defense included: the attacker knows the
algorithm, as LiRA assumes), score every pool row with each attack, one ROC report per attack.

The pool is 2·members train rows; the target trains on a seeded half (the members), the other
half are the non-members it is scored against, so members and non-members are balanced by
construction. Each shadow trains on a half of the same pool with every row in exactly half the
shadows (:func:`core.shadow_training.shadow_splits`). The defense is a
:class:`core.defenses.builds.DefenseBuild`: its training procedure trains the target and every
shadow (plain training's batched form trains the shadows together over stacked weights). The
attacks are the registered parts of the membership family (:mod:`core.parts`), each called
through :func:`core.attacks.protocol.run_attack` on one :class:`core.attacks.membership.
MembershipRelease` (the target's outputs, the shadows' outputs and membership masks, the
population rows z from the aux split) and scored by :func:`core.attacks.membership.
membership_report`; the attacks that pool targets are also run with each of ``targets − 1``
shadow models as the target. An attack that needs ``shadow_encoders`` (representation LiRA on
Inf2Guard's r) gets a ``shadow_representations`` stage instead of ``shadows``: the K shadow
models trained the target's way once, their r of the pool and of the population records and
their outputs (which the model-level shadow attacks read).
"""

from __future__ import annotations

import time

import numpy as np
import torch

from core import caveats
from core.config import MembershipConfig
from core.progress import Progress
from core.result import Result
from core.stages import StageOutput, Stages

FAMILY = "membership"


def _shape(ds) -> tuple[int, int, int]:
    return tuple(ds.image_shape) if ds.image_shape else (1, 1, int(ds.X.shape[1]))


def _pool(ds, cfg: MembershipConfig) -> tuple[np.ndarray, np.ndarray]:
    """(pool rows (2M,), is_member (2M,) bool for the target)."""
    from core.seeds import stream

    tr = ds.split("train")
    m = cfg.train.members
    if 2 * m > len(tr):
        raise ValueError(f"train.members: got {m}; at most {len(tr) // 2} for {ds.name!r} "
                         f"(a pool of 2·members train rows)")
    rng = stream(cfg.seed, "membership", "pool")
    pool = np.sort(rng.choice(tr, size=2 * m, replace=False))
    member = np.zeros(2 * m, dtype=bool)
    member[rng.choice(2 * m, size=m, replace=False)] = True
    return pool, member


def _true_prob(p: torch.Tensor, y: torch.Tensor) -> np.ndarray:
    return p.gather(1, y.view(-1, 1)).squeeze(1).double().cpu().numpy()


def run_membership(cfg: MembershipConfig, progress: Progress, stages: Stages | None = None) -> Result:
    from core.attacks import membership as M
    from core.attacks.protocol import attack_params, attack_part, run_attack
    from core.bounds.channel_readout import image_spectrum
    from core.data import load_dataset
    from core.defenses.builds import build_defense
    from core.device import get_device
    from core.knowledge import AdversaryKnowledge
    from core.nn import image_classifier, seeded
    from core.seeds import derive, stream, torch_stream
    from core.shadow_training import shadow_splits

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
    d0 = np.sort(stream(cfg.seed, "membership", "reference").choice(
        ax, size=min(len(ax), cfg.train.members), replace=False))
    z_rows = np.setdiff1d(ax, d0) if len(ax) > len(d0) else ax
    build = build_defense(
        FAMILY, cfg.defense, image_shape=shape, n_classes=n_classes, train=cfg.train,
        spectrum=lambda: image_spectrum(np.asarray(ds.X)[ds.split("train")]), reference=X[d0])
    notes: list[str] = list(build.notes)
    metrics: dict[str, float] = dict(build.metrics)
    intervals: dict[str, dict[str, float]] = {}
    artifacts: dict[str, np.ndarray] = dict(build.artifacts)

    def train(rows: np.ndarray, seed: int):
        """The defense's procedure on ``rows`` (the target's, and each shadow's)."""
        model = seeded(lambda: image_classifier("mlp", shape, n_classes),
                       torch_stream(seed, "init")).to(dev)
        return build.train(model, X[rows], y[rows], seed=seed)

    # -- the target (a stage: a change of attack, pooling or projection never retrains it)
    part = {"data": cfg.data.model_dump(mode="json"), "seed": cfg.seed, "device": dev.type,
            "defense": cfg.defense.model_dump(mode="json"),
            "train": cfg.train.model_dump(mode="json")}

    def compute_target() -> StageOutput:
        progress.update(0.05, "training the target")
        tgt = train(pool[member], cfg.seed)
        arrays = {"p_pool": tgt.predict(X[pool]).double().cpu().numpy(),
                  "p_test": tgt.predict(X[te]).double().cpu().numpy(),
                  "p_z": _true_prob(tgt.predict(X[z_rows]), y[z_rows])}
        if tgt.represent is not None:
            arrays["r_pool"] = tgt.represent(X[pool]).double().cpu().numpy()
            # the encoder queried on the population (the representation head's fitting rows)
            arrays["r_z"] = tgt.represent(X[z_rows]).double().cpu().numpy()
        if tgt.adversary is not None:
            arrays["adversary_pool"] = tgt.adversary(X[pool]).double().cpu().numpy()
        meta = {k: v for k, v in tgt.meta.items() if isinstance(v, int | float | str)}
        return StageOutput(arrays=arrays, meta={**meta, "steps": int(tgt.steps)})

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
    budget = build.report(tgt_out.meta, steps=int(tgt_out.meta.get("steps", 0)))
    metrics.update(budget.metrics)
    notes.extend(budget.notes)

    # -- the one-run audit (a stage; off by default): the defense's procedure once more on the
    # members, with canaries; black-box canary records come from train rows outside the pool
    audit = None
    if cfg.audit.enabled:
        from core.runs.audit_stage import run_audit_stage

        progress.update(0.15, f"auditing {cfg.defense.kind} ({cfg.audit.canaries} canaries)")
        outside = np.setdiff1d(np.asarray(ds.split("train")), pool)
        audit = run_audit_stage(
            cfg.audit, build, cfg.defense, stages, part,
            model_factory=lambda: seeded(lambda: image_classifier("mlp", shape, n_classes),
                                         torch_stream(cfg.seed, "init")).to(dev),
            X=X[pool[member]], y=y[pool[member]], records=(X[outside], y[outside]),
            n_classes=n_classes, seed=cfg.seed, claimed=metrics.get("epsilon_accountant"))
        metrics.update(audit.metrics)
        notes.extend(audit.notes)

    # -- shadow / reference models: the same procedure on halves of the pool (a stage)
    K = cfg.attack.shadows
    T = cfg.attack.targets
    parts = {a: attack_part(a, FAMILY) for a in cfg.attack.attackers}
    pooled = [a for a, p in parts.items() if p.pools_targets]
    in_mask = shadow_splits(len(pool), K, seed=cfg.seed)
    needs_shadows = any("shadows" in p.needs for p in parts.values()) or (T > 1 and bool(pooled))
    sub = progress.sub(0.2, 0.85)

    def compute_shadows() -> StageOutput:
        sub.update(0.0, f"training {K} shadow models")
        seed_k = [derive(cfg.seed, "shadow", k, bits=63) for k in range(K)]
        if build.train_many is not None:
            true_prob = build.train_many(lambda: image_classifier("mlp", shape, n_classes),
                                         X[pool], y[pool], in_mask, seed=cfg.seed)
            pp = true_prob(X[pool], y[pool]).T.double().cpu().numpy()  # (n, K)
            pz = true_prob(X[z_rows], y[z_rows]).T.double().cpu().numpy()
        else:
            cols_pool, cols_z = [], []
            for k in range(K):
                sub.update(k / K, f"shadow model {k + 1}/{K} ({cfg.defense.kind})")
                s = train(pool[in_mask[k]], seed_k[k])
                cols_pool.append(_true_prob(s.predict(X[pool]), y[pool]))
                cols_z.append(_true_prob(s.predict(X[z_rows]), y[z_rows]))
            pp, pz = np.stack(cols_pool, 1), np.stack(cols_z, 1)
        return StageOutput(arrays={"probs_pool": pp, "probs_z": pz})

    # -- shadow encoders (a stage): the target's procedure on the same halves of the pool,
    # each encoder's r of the pool and the population (representation LiRA); their models'
    # outputs serve the model-level shadow attacks too, so the K shadows train once
    needs_r = any("shadow_encoders" in p.needs for p in parts.values()) and "r_pool" in A

    def compute_shadow_r() -> StageOutput:
        seed_k = [derive(cfg.seed, "shadow", k, bits=63) for k in range(K)]
        cols: dict[str, list[np.ndarray]] = {"probs_pool": [], "probs_z": [], "r_pool": [],
                                             "r_z": []}
        for k in range(K):
            sub.update(k / K, f"shadow encoder {k + 1}/{K} ({cfg.defense.kind})")
            s = train(pool[in_mask[k]], seed_k[k])
            cols["probs_pool"].append(_true_prob(s.predict(X[pool]), y[pool]))
            cols["probs_z"].append(_true_prob(s.predict(X[z_rows]), y[z_rows]))
            cols["r_pool"].append(s.represent(X[pool]).float().cpu().numpy())
            cols["r_z"].append(s.represent(X[z_rows]).float().cpu().numpy())
        return StageOutput(arrays={"probs_pool": np.stack(cols["probs_pool"], 1),
                                   "probs_z": np.stack(cols["probs_z"], 1),
                                   "r_pool": np.stack(cols["r_pool"]),
                                   "r_z": np.stack(cols["r_z"])})

    probs_pool = probs_z = shadow_r = shadow_r_z = None
    if needs_r:
        sr_out, _ = stages.get("shadow_representations", {**part, "shadows": K},
                               compute_shadow_r)
        shadow_r = np.asarray(sr_out.arrays["r_pool"], np.float64)
        shadow_r_z = np.asarray(sr_out.arrays["r_z"], np.float64)
        probs_pool = np.asarray(sr_out.arrays["probs_pool"], np.float64)
        probs_z = np.asarray(sr_out.arrays["probs_z"], np.float64)
    elif needs_shadows:
        sh_out, _ = stages.get("shadows", {**part, "shadows": K}, compute_shadows)
        probs_pool = np.asarray(sh_out.arrays["probs_pool"], np.float64)
        probs_z = np.asarray(sh_out.arrays["probs_z"], np.float64)

    # -- every attack through the protocol on one release; scores oriented higher = member
    progress.update(0.88, "scoring")
    ytrue = y_cpu[pool]
    release = M.MembershipRelease(
        p_true=_true_prob(p_pool, ytrue), probs=p_pool.double().numpy(),
        labels=ytrue.numpy(), shadow_p=probs_pool,
        shadow_in=None if probs_pool is None else in_mask.T,
        population_p=np.asarray(A["p_z"], np.float64), population_shadow_p=probs_z,
        representations=A.get("r_pool"), adversary=A.get("adversary_pool"),
        population_labels=y_cpu[z_rows].numpy(), population_representations=A.get("r_z"),
        shadow_representations=shadow_r, shadow_population_representations=shadow_r_z)
    knowledge = AdversaryKnowledge(n_classes=2, shadow_pool=pool,
                                   training_algorithm=f"the target's, defense {cfg.defense.kind!r}",
                                   extra={"membership": member})
    params = {a: {**attack_params(p, cfg.attack), "seed": cfg.seed} for a, p in parts.items()}
    outputs = {a: run_attack(a, release, knowledge, family=FAMILY, **params[a])
               for a in cfg.attack.attackers}
    scores = {a: out.member_scores() for a, out in outputs.items()}
    labels = {a: member for a in outputs}
    scored: dict[str, list[int]] = {}
    # pooled targets (ML Privacy Meter's protocol): shadow t as a further target, scored against
    # the other shadows, so TPR at 0.1 % FPR reads thousands of non-members
    if T > 1 and pooled:
        for t in range(T - 1):
            rel_t = release.shadow_as_target(t)
            for name in pooled:
                sc = run_attack(name, rel_t, knowledge, family=FAMILY, **params[name])
                scores[name] = np.concatenate([scores[name], sc.member_scores()])
                labels[name] = np.concatenate([labels[name], in_mask[t]])
        notes.append(f"scores pooled over {T} target models (the target and {T - 1} shadow "
                     f"models, each against the other shadows) for {', '.join(pooled)}; "
                     "the other attacks score the target alone")
    raised: list[dict] = []
    for name, sc in scores.items():
        ok = np.flatnonzero(np.isfinite(sc))
        if len(ok) < len(sc):  # an attack's non-finite scores are dropped: say so beside them
            part_ = parts[name]
            raised.append(caveats.raised(
                "mia_scores_nonfinite", [part_.metric_name(s) for s in
                                         ("auc", "adv", "bacc", "tpr_at_1pct_fpr",
                                          "tpr_at_0p1pct_fpr")],
                f"{part_.title}: {len(sc) - len(ok):,} of {len(sc):,} membership scores were "
                "NaN or infinite (a diverged model's loss) and are left out of its scores.",
                attack=name))
        # shadow targets hold about, not exactly, half the pool: balance before scoring
        ok = ok[M.balance_members(labels[name][ok], seed=cfg.seed)]
        rep = M.membership_report(sc[ok], labels[name][ok], seed=cfg.seed)
        p = parts[name]
        metrics[p.metric_name("auc")] = rep["auc"]
        metrics[p.metric_name("adv")] = rep["advantage"]
        metrics[p.metric_name("bacc")] = rep["balanced_accuracy"]
        metrics[p.metric_name("tpr_at_1pct_fpr")] = rep["tpr_at_1pct"]
        metrics[p.metric_name("tpr_at_0p1pct_fpr")] = rep["tpr_at_0p1pct"]
        metrics[p.metric_name("epsilon_lower_bound")] = rep["epsilon_lower_bound"]
        n = int(rep["n_members"] + rep["n_nonmembers"])
        scored[name] = [int(rep["n_members"]), int(rep["n_nonmembers"])]
        for stat, key in (("auc", "auc_interval"), ("adv", "advantage_interval"),
                          ("bacc", "balanced_accuracy_interval")):
            lo, hi = rep[key]
            intervals[p.metric_name(stat)] = {"lo": float(lo), "hi": float(hi), "n": n}
        artifacts[f"roc_{name}_fpr"] = np.asarray(rep["roc_fpr"], np.float64)
        artifacts[f"roc_{name}_tpr"] = np.asarray(rep["roc_tpr"], np.float64)
        if not rep["tpr_at_0p1_meaningful"]:
            notes.append(f"{name}: TPR at 0.1 % FPR from {rep['n_nonmembers']} non-members "
                         "(fewer than 1,000): not meaningful")
    ces = [out.info["ce_nats"] for out in outputs.values() if "ce_nats" in out.info]
    if ces:
        # Inf2Guard Theorem 1 (spec 004 §4.1) at H(u|r) estimated by the representation
        # attacker's cross-entropy: an upper estimate of H, so the bound is optimistic
        from core.bounds.tappfl import (
            conditional_entropy_estimate_bits,
            thm2_exact_bound,
            thm2_paper_bound,
        )

        h, caveat = conditional_entropy_estimate_bits(min(ces), 2)
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
    auc = {n: parts[n].metric_name("auc") for n in scores}
    best = max(scores, key=lambda n: metrics[auc[n]])
    metrics["mia_auc_best"] = metrics[auc[best]]
    metrics["mia_tpr_at_0p1pct_fpr_best"] = max(
        metrics[parts[n].metric_name("tpr_at_0p1pct_fpr")] for n in scores)
    intervals["mia_auc_best"] = intervals[auc[best]]
    metrics["seconds_total"] = time.perf_counter() - t0
    info = {"notes": notes, "best_attack": best, "stages": dict(stages.log),
            "accountant": budget.info.get("accountant"), "scored": scored,
            "projection_release": "r" if "r_pool" in A else "log_probs"}
    if audit is not None and audit.info:
        info["audit"] = audit.info
    fallback = tgt_out.meta.get("accountant_note")
    if fallback:
        raised.append(caveats.raised("accountant_fallback", ["epsilon_accountant"],
                                     str(fallback)))
    info["caveats"] = caveats.collect(cfg.kind, metrics, info, cfg.model_dump(mode="json"),
                                      intervals=intervals, explicit=raised)
    return Result(kind=cfg.kind, config=cfg.model_dump(mode="json"), seed=cfg.seed,
                  metrics=metrics, intervals=intervals, artifacts=artifacts, info=info)


def _projection(release: np.ndarray, seed: int, points: int) -> StageOutput:
    """t-SNE of the release on at most ``points`` pool rows (a seeded subsample)."""
    from core.projection import project

    emb, idx = project(np.asarray(release, np.float64), method="tsne", seed=seed,
                       max_points=points)
    return StageOutput(arrays={"embedding": emb, "indices": idx})
