"""The stages of the membership runner (:mod:`core.runs.membership`), each a small function:
the run's context (data, pool, defense build), the target, the shadow models, the signals the
chosen attacks declare (computed once per model inside the model stages: ML Privacy Meter's
``get_signals``), the release, the attacks (pooled over targets where they pool) and their
reports. The runner composes them; none of them names an attack or a defense.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from core.config.schema import MembershipConfig
from core.foundation import caveats
from core.foundation.progress import Progress
from core.foundation.stages import StageOutput, Stages

#: prefix of a signal's array in a model stage's output
SIGNAL_PREFIX = "signal_"

FAMILY = "membership"


def _shape(ds) -> tuple[int, int, int]:
    return tuple(ds.image_shape) if ds.image_shape else (1, 1, int(ds.X.shape[1]))


def _pool(ds, cfg: MembershipConfig) -> tuple[np.ndarray, np.ndarray]:
    """(pool rows (2M,), is_member (2M,) bool for the target)."""
    from core.foundation.seeds import stream

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


@dataclass
class Context:
    """What every stage of one run reads: the config, the data on the run's device, the pool
    and its membership, the test and population rows, the defense build, the stage key's part
    of the config and the signals the chosen attacks declare (sorted)."""

    cfg: MembershipConfig
    ds: Any
    shape: tuple[int, int, int]
    n_classes: int
    dev: torch.device
    X: torch.Tensor
    y: torch.Tensor
    pool: np.ndarray
    member: np.ndarray
    te: np.ndarray
    z_rows: np.ndarray
    build: Any
    part: dict[str, Any]
    parts: dict[str, Any]
    signals: tuple[str, ...] = ()
    #: a target trained elsewhere (:class:`core.runs.trained_target.Loaded`), else None
    trained: Any = None
    #: a procedure of its own for the shadows (a scikit-learn target's clones), else None
    fit: Any = None

    def factory(self):
        """A fresh ``cfg.model`` network (the global RNG's initialisation; the callers seed
        it): :func:`core.models.build_model` for the data's shape and classes."""
        return _factory(self.cfg, self.shape, self.n_classes)

    def model(self, seed: int):
        """``cfg.model`` initialised from ``torch_stream(seed, "init")`` on the run's device
        (the target's, each shadow's, the audit's), as the defense's procedure trains it."""
        from core.foundation.seeds import torch_stream
        from core.models.nn import seeded

        return self.build.prepare(seeded(self.factory, torch_stream(seed, "init")).to(self.dev))

    def train(self, rows: np.ndarray, seed: int):
        """The defense's procedure on ``rows`` (the target's, and each shadow's)."""
        if self.fit is not None:
            return self.fit(rows, seed)
        return self.build.train(self.model(seed), self.X[rows], self.y[rows], seed=seed)

    def keyed(self, part: dict[str, Any]) -> dict[str, Any]:
        """A model stage's key part: the signal names join it only when there are any, so the
        keys of runs without signals stay as they were."""
        return {**part, "signals": list(self.signals)} if self.signals else part

    def signal_arrays(self, predict) -> dict[str, np.ndarray]:
        """Every declared signal of one model (its ``predict``) on the pool rows, each under
        :data:`SIGNAL_PREFIX` + name. Every model is queried with the run's seed, so the target
        and the shadows see the same perturbed copies."""
        from core.foundation.parts import SIGNALS
        from core.foundation.registry import load_object

        X, y = self.X[self.pool], self.y[self.pool]
        return {SIGNAL_PREFIX + name: np.asarray(load_object(SIGNALS.get(name).function)(
                    predict, X, y, image_shape=self.shape, seed=self.cfg.seed))
                for name in self.signals}


def _factory(cfg: MembershipConfig, shape: tuple[int, int, int], n_classes: int):
    from core.models import build_model

    m = cfg.model
    return build_model(m.arch, shape, n_classes, m.width, data=cfg.data.name)


def _train_spectrum(ds):
    """The training split's spectrum, for a defense that asks for it (the κ channel); its
    import (scipy.linalg) is paid only then."""
    from core.bounds.channel_readout import image_spectrum

    return image_spectrum(np.asarray(ds.X)[ds.split("train")])


def check_target(cfg: MembershipConfig):
    """Every check the target stage runs on ``cfg.target`` (the files, their hashes, the
    members against the data, the weights against the architecture, a query of two rows), on
    the CPU, training nothing: a registration of a trained model runs these before storing
    it. Returns the :class:`core.runs.trained_target.Loaded` target."""
    from core.data import load_dataset
    from core.runs import trained_target as TT

    ds = load_dataset(cfg.data, cfg.seed)
    shape, n_classes = _shape(ds), len(ds.label_names)
    if cfg.target.framework == "torch":
        cfg.model.part.check_input(shape, cfg.data.name)
    X = torch.tensor(np.asarray(ds.X), dtype=torch.float32)
    return TT.load(cfg, shape, n_classes, X, lambda: _factory(cfg, shape, n_classes))


def context(cfg: MembershipConfig, progress: Progress) -> Context:
    """Load the data, draw the pool and the reference rows, build the defense."""
    from core.attacks.protocol import attack_part
    from core.data import load_dataset
    from core.foundation.builds import build_defense
    from core.foundation.device import get_device
    from core.foundation.seeds import stream

    progress.update(0.01, f"loading {cfg.data.name}")
    ds = load_dataset(cfg.data, cfg.seed)
    shape = _shape(ds)
    n_classes = len(ds.label_names)
    dev = get_device(cfg.device)
    X = torch.tensor(np.asarray(ds.X), dtype=torch.float32, device=dev)
    y = torch.tensor(np.asarray(ds.y), dtype=torch.int64, device=dev)
    # a mismatch of model and data (channels) is one line before anything trains
    if cfg.target is None or cfg.target.framework == "torch":
        cfg.model.part.check_input(shape, cfg.data.name)
    trained = None
    if cfg.target is None:
        pool, member = _pool(ds, cfg)
        te, ax = np.array(ds.split("test")), np.array(ds.split("aux"))
        d0 = np.sort(stream(cfg.seed, "membership", "reference").choice(
            ax, size=min(len(ax), cfg.train.members), replace=False))
        z_rows = np.setdiff1d(ax, d0) if len(ax) > len(d0) else ax
    else:  # the target's own members; its files checked before anything trains
        from core.runs import trained_target as TT

        trained = TT.load(cfg, shape, n_classes, X, lambda: _factory(cfg, shape, n_classes))
        excluded = np.array([], np.int64) if trained.canaries is None else trained.canaries[0]
        pool, member, te = TT.pool(trained.members, ds.n, cfg.seed, excluded)
        z_rows = d0 = te
    build = build_defense(
        FAMILY, cfg.defense, image_shape=shape, n_classes=n_classes, train=cfg.train,
        spectrum=lambda: _train_spectrum(ds), reference=X[d0],
        reference_labels=y[d0], model=cfg.model)
    part = {"data": cfg.data.model_dump(mode="json"), "seed": cfg.seed, "device": dev.type,
            "defense": cfg.defense.model_dump(mode="json"),
            "train": cfg.train.model_dump(mode="json")}
    if cfg.model != type(cfg.model)():  # the default model keeps the keys stored runs have
        part["model"] = cfg.model.model_dump(mode="json")
    fit = None
    if trained is not None:
        from core.runs.trained_target import stage_part

        part["target"] = stage_part(cfg)
        if trained.estimator is not None:
            from dataclasses import replace

            fit = TT.sklearn_fit(trained.estimator, X, y, n_classes)
            build = replace(build, train_many=None)
    parts = {a: attack_part(a, FAMILY) for a in cfg.attack.attackers}
    signals = tuple(sorted({s for p in parts.values() for s in p.signals}))
    return Context(cfg, ds, shape, n_classes, dev, X, y, pool, member, te, z_rows, build,
                   part, parts, signals, trained, fit)


def target_stage(ctx: Context, stages: Stages, progress: Progress) -> tuple[StageOutput, str]:
    """The target (a stage: a change of attack, pooling or projection never retrains it): its
    outputs on the pool, the test rows and the population, r and Ψ where it has them, and the
    declared signals on the pool."""
    X, y, pool, z_rows = ctx.X, ctx.y, ctx.pool, ctx.z_rows

    def compute() -> StageOutput:
        if ctx.trained is not None:  # trained elsewhere: its loaded weights, nothing trains
            from core.foundation.builds import Trained

            progress.update(0.05, "querying the target trained elsewhere")
            tgt = Trained(predict=ctx.trained.predict)
        else:
            progress.update(0.05, "training the target")
            tgt = ctx.train(pool[ctx.member], ctx.cfg.seed)
        arrays = {"p_pool": tgt.predict(X[pool]).double().cpu().numpy(),
                  "p_test": tgt.predict(X[ctx.te]).double().cpu().numpy(),
                  "p_z": _true_prob(tgt.predict(X[z_rows]), y[z_rows])}
        if tgt.represent is not None:
            arrays["r_pool"] = tgt.represent(X[pool]).double().cpu().numpy()
            # the encoder queried on the population (the representation head's fitting rows)
            arrays["r_z"] = tgt.represent(X[z_rows]).double().cpu().numpy()
        if tgt.adversary is not None:
            arrays["adversary_pool"] = tgt.adversary(X[pool], y[pool]).double().cpu().numpy()
        arrays.update(ctx.signal_arrays(tgt.predict))
        meta = {k: v for k, v in tgt.meta.items() if isinstance(v, int | float | str)}
        return StageOutput(arrays=arrays, meta={**meta, "steps": int(tgt.steps)})

    key = ctx.keyed(ctx.part)
    if ctx.trained is not None:  # the weights key the target (a network's shadows do not read them)
        key = {**key, "weights_sha256": ctx.cfg.target.weights_sha256}
    return stages.get("target", key, compute)


def trained_elsewhere(ctx: Context, notes: list[str]) -> dict[str, Any]:
    """For a target trained elsewhere: its description for ``info["target"]`` and the note,
    first of the run's notes, that privlab did not train it; nothing otherwise."""
    if ctx.trained is None:
        return {}
    from core.runs.trained_target import describe, note

    notes.insert(0, note(ctx.cfg))
    return {"target": describe(ctx.cfg)}


def utility_metrics(ctx: Context, A: dict[str, np.ndarray]) -> dict[str, float]:
    """Test and member accuracy of the target, their gap, the majority rate, the pool's sizes."""
    p_pool, p_test = torch.tensor(A["p_pool"]), torch.tensor(A["p_test"])
    y_cpu, te, member = ctx.y.cpu(), ctx.te, ctx.member
    acc_test = float((p_test.argmax(-1) == y_cpu[te]).float().mean())
    acc_members = float((p_pool[member].argmax(-1) == y_cpu[ctx.pool][member]).float().mean())
    majority = float(np.bincount(np.asarray(ctx.ds.y)[te]).max() / len(te))
    return {"utility_acc": acc_test, "utility_train_acc": acc_members,
            "train_test_gap": acc_members - acc_test, "utility_majority": majority,
            "members": float(member.sum()), "nonmembers": float((~member).sum())}


def audit_stage(ctx: Context, stages: Stages, progress: Progress, claimed: float | None):
    """The one-run audit (a stage; off by default): the defense's procedure once more on the
    members, with canaries; black-box canary records come from train rows outside the pool."""
    from core.runs.audit_stage import run_audit_stage

    cfg = ctx.cfg
    if ctx.trained is not None:  # trained elsewhere: the canaries its training included
        from core.runs.audit_stage import AuditOutcome
        from core.runs.trained_target import canary_audit

        progress.update(0.15, "auditing the target on its canaries")
        metrics, info = canary_audit(ctx.trained, ctx.X, cfg.audit)
        return AuditOutcome(metrics=metrics, info=info)
    progress.update(0.15, f"auditing {cfg.defense.kind} ({cfg.audit.canaries} canaries)")
    outside = np.setdiff1d(np.asarray(ctx.ds.split("train")), ctx.pool)
    rows = ctx.pool[ctx.member]
    return run_audit_stage(
        cfg.audit, ctx.build, cfg.defense, stages, ctx.part,
        model_factory=lambda: ctx.model(cfg.seed),
        X=ctx.X[rows], y=ctx.y[rows], records=(ctx.X[outside], ctx.y[outside]),
        n_classes=ctx.n_classes, seed=cfg.seed, claimed=claimed)


@dataclass
class Shadows:
    """The shadow models' outputs: true-class probabilities on the pool and the population
    (n, K) / (m, K), shadow encoders' r (K, n, d) / (K, m, d) where trained, and the declared
    signals (name -> (K, n, ...))."""

    probs_pool: np.ndarray | None = None
    probs_z: np.ndarray | None = None
    r_pool: np.ndarray | None = None
    r_z: np.ndarray | None = None
    signals: dict[str, np.ndarray] = field(default_factory=dict)


def _stacked_signals(per_model: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    return {k: np.stack([m[k] for m in per_model]) for k in (per_model[0] if per_model else {})}


def stack_shadows(model: torch.nn.Module, dev: torch.device) -> bool:
    """Whether K shadow models train together over stacked weights: always for a network
    without convolutions (the MLP) and on CUDA; on a CPU a conv net when every layer has a
    grouped form (:mod:`core.models.stacked`: 8 LeNet-5 as one grouped, channels_last network
    beat one by one at every batch timed, where ``vmap`` alone was slower at batches 32 and 64:
    ``conv_shadow_speedup_8`` in benchmarks/results/models.json)."""
    from core.models.common import has_conv
    from core.models.stacked import groupable

    return dev.type == "cuda" or not has_conv(model) or groupable(model)


def _shadow_models(ctx: Context, in_mask: np.ndarray, sub: Progress) -> StageOutput:
    """K shadow models, the defense's procedure on halves of the pool (batched where the
    defense has a batched form): their true-class probabilities and declared signals."""
    from core.foundation.seeds import derive

    cfg, X, y, pool, z_rows = ctx.cfg, ctx.X, ctx.y, ctx.pool, ctx.z_rows
    K = cfg.attack.shadows
    sub.update(0.0, f"training {K} shadow models")
    seed_k = [derive(cfg.seed, "shadow", k, bits=63) for k in range(K)]
    sigs: list[dict[str, np.ndarray]] = []
    if ctx.build.train_many is not None and stack_shadows(ctx.factory(), ctx.dev):
        many = ctx.build.train_many(ctx.factory, X[pool], y[pool], in_mask, seed=cfg.seed)
        pp = many(X[pool], y[pool]).T.double().cpu().numpy()  # (n, K)
        pz = many(X[z_rows], y[z_rows]).T.double().cpu().numpy()
        if ctx.signals:
            sigs = [ctx.signal_arrays(many.predictor(k)) for k in range(K)]
    else:
        cols_pool, cols_z = [], []
        for k in range(K):
            sub.update(k / K, f"shadow model {k + 1}/{K} ({cfg.defense.kind})")
            s = ctx.train(pool[in_mask[k]], seed_k[k])
            cols_pool.append(_true_prob(s.predict(X[pool]), y[pool]))
            cols_z.append(_true_prob(s.predict(X[z_rows]), y[z_rows]))
            sigs.append(ctx.signal_arrays(s.predict))
        pp, pz = np.stack(cols_pool, 1), np.stack(cols_z, 1)
    return StageOutput(arrays={"probs_pool": pp, "probs_z": pz, **_stacked_signals(sigs)})


def _shadow_encoders(ctx: Context, in_mask: np.ndarray, sub: Progress) -> StageOutput:
    """The target's procedure on the same halves of the pool: each encoder's r of the pool and
    the population (representation LiRA), and its model's outputs and signals, which the
    model-level shadow attacks read, so the K shadows train once."""
    from core.foundation.seeds import derive

    cfg, X, y, pool, z_rows = ctx.cfg, ctx.X, ctx.y, ctx.pool, ctx.z_rows
    K = cfg.attack.shadows
    seed_k = [derive(cfg.seed, "shadow", k, bits=63) for k in range(K)]
    cols: dict[str, list[np.ndarray]] = {"probs_pool": [], "probs_z": [], "r_pool": [],
                                         "r_z": []}
    sigs: list[dict[str, np.ndarray]] = []
    for k in range(K):
        sub.update(k / K, f"shadow encoder {k + 1}/{K} ({cfg.defense.kind})")
        s = ctx.train(pool[in_mask[k]], seed_k[k])
        cols["probs_pool"].append(_true_prob(s.predict(X[pool]), y[pool]))
        cols["probs_z"].append(_true_prob(s.predict(X[z_rows]), y[z_rows]))
        cols["r_pool"].append(s.represent(X[pool]).float().cpu().numpy())
        cols["r_z"].append(s.represent(X[z_rows]).float().cpu().numpy())
        sigs.append(ctx.signal_arrays(s.predict))
    return StageOutput(arrays={"probs_pool": np.stack(cols["probs_pool"], 1),
                               "probs_z": np.stack(cols["probs_z"], 1),
                               "r_pool": np.stack(cols["r_pool"]),
                               "r_z": np.stack(cols["r_z"]), **_stacked_signals(sigs)})


def shadow_stage(ctx: Context, stages: Stages, A: dict[str, np.ndarray], in_mask: np.ndarray,
                 sub: Progress) -> Shadows:
    """The shadow models as one stage: shadow encoders when an attack needs them (and the
    target has r), else shadow models when an attack needs shadows or targets pool; none
    otherwise."""
    cfg, parts = ctx.cfg, ctx.parts
    K, T = cfg.attack.shadows, cfg.attack.targets
    pooled = any(p.pools_targets for p in parts.values())
    needs_shadows = any("shadows" in p.needs for p in parts.values()) or (T > 1 and pooled)
    needs_r = any("shadow_encoders" in p.needs for p in parts.values()) and "r_pool" in A
    key = ctx.keyed({**ctx.part, "shadows": K})
    if needs_r:
        out, _ = stages.get("shadow_representations", key,
                            lambda: _shadow_encoders(ctx, in_mask, sub))
    elif needs_shadows:
        out, _ = stages.get("shadows", key, lambda: _shadow_models(ctx, in_mask, sub))
    else:
        return Shadows()
    a = out.arrays
    return Shadows(
        probs_pool=np.asarray(a["probs_pool"], np.float64),
        probs_z=np.asarray(a["probs_z"], np.float64),
        r_pool=np.asarray(a["r_pool"], np.float64) if needs_r else None,
        r_z=np.asarray(a["r_z"], np.float64) if needs_r else None,
        signals={k[len(SIGNAL_PREFIX):]: np.asarray(v) for k, v in a.items()
                 if k.startswith(SIGNAL_PREFIX)})


def release(ctx: Context, A: dict[str, np.ndarray], sh: Shadows, in_mask: np.ndarray):
    """What the membership attacker observes (:class:`core.attacks.membership.
    MembershipRelease`): the target's outputs and signals on the pool, the shadows' and the
    population's."""
    from core.attacks.membership import MembershipRelease

    y_cpu = ctx.y.cpu()
    ytrue = y_cpu[ctx.pool]
    p_pool = torch.tensor(A["p_pool"])
    return MembershipRelease(
        p_true=_true_prob(p_pool, ytrue), probs=p_pool.double().numpy(),
        labels=ytrue.numpy(), shadow_p=sh.probs_pool,
        shadow_in=None if sh.probs_pool is None else in_mask.T,
        population_p=np.asarray(A["p_z"], np.float64), population_shadow_p=sh.probs_z,
        representations=A.get("r_pool"), adversary=A.get("adversary_pool"),
        population_labels=y_cpu[ctx.z_rows].numpy(), population_representations=A.get("r_z"),
        shadow_representations=sh.r_pool, shadow_population_representations=sh.r_z,
        signals={k[len(SIGNAL_PREFIX):]: np.asarray(v) for k, v in A.items()
                 if k.startswith(SIGNAL_PREFIX)},
        shadow_signals=sh.signals)


def attack_scores(ctx: Context, rel, in_mask: np.ndarray, notes: list[str]):
    """Every chosen attack through the protocol on the release (scores oriented higher =
    member), and for the attacks that pool targets, each of ``targets − 1`` shadow models as a
    further target against the other shadows (ML Privacy Meter's protocol: TPR at 0.1 % FPR
    then reads thousands of non-members). Returns (outputs, scores, membership labels)."""
    from core.attacks.protocol import attack_params, run_attack
    from core.foundation.knowledge import AdversaryKnowledge

    cfg, parts = ctx.cfg, ctx.parts
    T = cfg.attack.targets
    pooled = [a for a, p in parts.items() if p.pools_targets]
    knowledge = AdversaryKnowledge(n_classes=2, shadow_pool=ctx.pool,
                                   training_algorithm=f"the target's, defense {cfg.defense.kind!r}",
                                   extra={"membership": ctx.member})
    params = {a: {**attack_params(p, cfg.attack), "seed": cfg.seed} for a, p in parts.items()}
    outputs = {a: run_attack(a, rel, knowledge, family=FAMILY, **params[a])
               for a in cfg.attack.attackers}
    scores = {a: out.member_scores() for a, out in outputs.items()}
    labels = {a: ctx.member for a in outputs}
    if T > 1 and pooled:
        for t in range(T - 1):
            rel_t = rel.shadow_as_target(t)
            for name in pooled:
                sc = run_attack(name, rel_t, knowledge, family=FAMILY, **params[name])
                scores[name] = np.concatenate([scores[name], sc.member_scores()])
                labels[name] = np.concatenate([labels[name], in_mask[t]])
        notes.append(f"scores pooled over {T} target models (the target and {T - 1} shadow "
                     f"models, each against the other shadows) for {', '.join(pooled)}; "
                     "the other attacks score the target alone")
    return outputs, scores, labels


def record_arrays(ctx: Context, scores: dict[str, np.ndarray],
                  labels: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Per-record exposure (:mod:`core.report.exposure`), read from the scores the reports read:
    ``record_index`` (each pool row's index in the data set), ``record_member`` (1 where the
    target trained on it), ``record_targets_in`` (of the pooled target models, how many
    trained on it) and per attack ``record_score_<attack>`` / ``record_nonmember_score_<attack>``:
    the mean of the record's scores (higher = member) over the target models that trained /
    did not train on it, non-finite scores left out (NaN where there were none). A pooled
    attack's scores are T consecutive blocks of the pool (the target, then each shadow as
    target, :func:`attack_scores`), each with its own membership labels; those blocks are kept
    whole as ``record_model_scores_<attack>`` (T, n; the dtype the report read) and
    ``record_model_members_<attack>`` (T, n), so that the attack's AUC is recomputed from the
    stored arrays alone (:func:`core.report.exposure.recomputed_auc`). A few kB per attack and model."""
    n = len(ctx.pool)
    out: dict[str, np.ndarray] = {"record_index": ctx.pool.astype(np.int32),
                                  "record_member": ctx.member.astype(np.int8)}
    inside = {a: np.asarray(labels[a], bool).reshape(-1, n) for a in scores}
    for name, sc in scores.items():
        raw = np.asarray(sc).reshape(-1, n)
        s = raw.astype(np.float64)
        for prefix, side in (("record_score", inside[name]), ("record_nonmember_score",
                                                              ~inside[name])):
            ok = side & np.isfinite(s)
            count = ok.sum(0)
            with np.errstate(invalid="ignore", divide="ignore"):
                mean = np.where(ok, s, 0.0).sum(0) / count
            out[f"{prefix}_{name}"] = np.where(count > 0, mean, np.nan).astype(np.float32)
        out[f"record_model_scores_{name}"] = raw
        out[f"record_model_members_{name}"] = inside[name].astype(np.int8)
    out["record_targets_in"] = max(inside.values(), key=len).sum(0).astype(np.int16)
    return out


@dataclass
class Reports:
    """What the attacks' reports add to a Result."""

    metrics: dict[str, float] = field(default_factory=dict)
    intervals: dict[str, dict[str, float]] = field(default_factory=dict)
    artifacts: dict[str, np.ndarray] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    raised: list[dict] = field(default_factory=list)
    scored: dict[str, list[int]] = field(default_factory=dict)


def _nonfinite_caveat(part, name: str, n_bad: int, n: int) -> dict:
    return caveats.raised(
        "mia_scores_nonfinite", [part.metric_name(s) for s in
                                 ("auc", "adv", "bacc", "tpr_at_1pct_fpr", "tpr_at_0p1pct_fpr")],
        f"{part.title}: {n_bad:,} of {n:,} membership scores were "
        "NaN or infinite (a diverged model's loss) and are left out of its scores.",
        attack=name)


def reports(ctx: Context, scores: dict[str, np.ndarray],
            labels: dict[str, np.ndarray]) -> Reports:
    """One ROC report per attack (:func:`core.attacks.membership.membership_report`) on its
    finite scores, members and non-members balanced: metrics under the part's names, their
    intervals, the ROC points, and a caveat for dropped non-finite scores."""
    from core.attacks import membership as M

    seed, out = ctx.cfg.seed, Reports()
    for name, sc in scores.items():
        p = ctx.parts[name]
        n_finite = int(np.isfinite(sc).sum())
        if n_finite < len(sc):  # an attack's non-finite scores are dropped: say so beside them
            out.raised.append(_nonfinite_caveat(p, name, len(sc) - n_finite, len(sc)))
        ok = M.scored_rows(sc, labels[name], seed=seed)
        rep = M.membership_report(sc[ok], labels[name][ok], seed=seed)
        for stat, key in (("auc", "auc"), ("adv", "advantage"), ("bacc", "balanced_accuracy"),
                          ("tpr_at_1pct_fpr", "tpr_at_1pct"),
                          ("tpr_at_0p1pct_fpr", "tpr_at_0p1pct"),
                          ("epsilon_lower_bound", "epsilon_lower_bound")):
            out.metrics[p.metric_name(stat)] = rep[key]
        n = int(rep["n_members"] + rep["n_nonmembers"])
        out.scored[name] = [int(rep["n_members"]), int(rep["n_nonmembers"])]
        for stat, key in (("auc", "auc_interval"), ("adv", "advantage_interval"),
                          ("bacc", "balanced_accuracy_interval")):
            lo, hi = rep[key]
            out.intervals[p.metric_name(stat)] = {"lo": float(lo), "hi": float(hi), "n": n}
        out.artifacts[f"roc_{name}_fpr"] = np.asarray(rep["roc_fpr"], np.float64)
        out.artifacts[f"roc_{name}_tpr"] = np.asarray(rep["roc_tpr"], np.float64)
        if not rep["tpr_at_0p1_meaningful"]:
            out.notes.append(f"{p.title}: TPR at 0.1 % FPR from {rep['n_nonmembers']} non-members "
                             "(fewer than 1,000): not meaningful")
    return out


def inf2guard_bound(outputs: dict[str, Any], metrics: dict[str, float], notes: list[str]) -> None:
    """Inf2Guard Theorem 1 (spec 004 §4.1) at H(u|r) estimated by the representation
    attacker's cross-entropy (an upper estimate of H, so the bound is optimistic); nothing
    when no attack reports a cross-entropy."""
    ces = [out.info["ce_nats"] for out in outputs.values() if "ce_nats" in out.info]
    if not ces:
        return
    from core.bounds.tappfl import (
        conditional_entropy_estimate_bits,
        thm2_exact_bound,
        thm2_paper_bound,
    )

    h, caveat = conditional_entropy_estimate_bits(min(ces), 2)
    metrics.update(h_u_given_r_bits=float(h), bound_mia_paper=float(thm2_paper_bound(h)),
                   bound_mia_exact=float(thm2_exact_bound(h)))
    notes.append("Inf2Guard Theorem 1: " + caveat)


def projection_stage(ctx: Context, stages: Stages, A: dict[str, np.ndarray], target_key: str,
                     progress: Progress) -> dict[str, np.ndarray]:
    """The released representations (else the log-probabilities) in 2-D, coloured by
    membership (a stage: t-SNE costs seconds); nothing when ``projection_points`` is 0."""
    cfg = ctx.cfg
    if cfg.projection_points <= 0:
        return {}
    progress.update(0.95, "projecting the release")
    rel = A["r_pool"] if "r_pool" in A else np.log(np.clip(A["p_pool"], 1e-12, 1.0))
    n_proj = cfg.projection_points
    proj, _ = stages.get("projection", {"target": target_key, "points": n_proj},
                         lambda: _projection(rel, cfg.seed, n_proj))
    idx = proj.arrays["indices"]
    return {"proj_release": proj.arrays["embedding"],
            "proj_member": ctx.member[idx].astype(np.int64),
            "proj_label": np.asarray(ctx.ds.y)[ctx.pool][idx].astype(np.int64)}


def best_attack(parts: dict[str, Any], scores: dict[str, np.ndarray],
                metrics: dict[str, float], intervals: dict[str, dict[str, float]]) -> str:
    """The attack of highest AUC; its AUC and the best TPR at 0.1 % FPR as headline metrics."""
    auc = {n: parts[n].metric_name("auc") for n in scores}
    best = max(scores, key=lambda n: metrics[auc[n]])
    metrics["mia_auc_best"] = metrics[auc[best]]
    metrics["mia_tpr_at_0p1pct_fpr_best"] = max(
        metrics[parts[n].metric_name("tpr_at_0p1pct_fpr")] for n in scores)
    intervals["mia_auc_best"] = intervals[auc[best]]
    return best


def _projection(release: np.ndarray, seed: int, points: int) -> StageOutput:
    """t-SNE of the release on at most ``points`` pool rows (a seeded subsample)."""
    from core.data.projection import project

    emb, idx = project(np.asarray(release, np.float64), method="tsne", seed=seed,
                       max_points=points)
    return StageOutput(arrays={"embedding": emb, "indices": idx})
