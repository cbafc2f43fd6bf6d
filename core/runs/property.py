"""Runner for ``kind: property``: Inf2Guard's defense against property inference (spec 004
§2.2, Algorithm 2) and the property attacks of §3.2, composed from cached stages.

1. subsets (cheap, recomputed): the defender's from the train split, the attacker's shadow
   subsets from the aux split, the targets from the test split (:mod:`core.data.subsets`);
2. ``train`` (stage): encoder, head and in-training adversary under λ (keyed by the data,
   seed, defense, the training subsets and the training settings, never by the attackers);
3. ``release`` (stage): per-sample utility on the test split and the aggregated
   representations of the shadow and target subsets (mean and max) with the in-training
   adversary's probabilities on the targets;
4. ``attack`` (a stage per attacker, keyed by the release and its own parameters): each a
   registered part of the property family called through :func:`core.attacks.protocol.
   run_attack`; a change of attacker never retrains the encoder;
5. scoring against the targets' true bins (accuracy, balanced accuracy, AUC, CE, gap to
   chance, 95 % intervals), the K-ary leakage bound at the estimated H(u|R) and a t-SNE of the
   target subsets (raw feature means beside released aggregates), a ``projection`` stage.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from core import caveats
from core.config import PropertyConfig
from core.data.base import Dataset
from core.data.subsets import Subsets, aggregate, sample_subsets
from core.progress import Progress
from core.result import Result
from core.seeds import stream
from core.stages import StageOutput, Stages

FAMILY = "property"


def property_value(ds: Dataset, attribute: str, requested: str | None) -> tuple[int, str]:
    """(code, name) of the attribute value whose share is the property: ``requested``, else
    'Female' where the attribute has it (the paper's female ratio), else the value of code 1."""
    values = list(ds.attribute_values[attribute])
    if requested is not None:
        if requested not in values:
            raise ValueError(f"subsets.property_value: got {requested!r}; allowed for "
                             f"{attribute!r}: {', '.join(values)}")
        return values.index(requested), requested
    name = "Female" if "Female" in values else values[1]
    return values.index(name), name


def make_subsets(cfg: PropertyConfig, ds: Dataset, has_value: np.ndarray) -> dict[str, Subsets]:
    """The defender's (train), the attacker's shadow (aux) and the target (test) subsets."""
    s = cfg.subsets
    per = {"train": s.train_per_bin, "aux": s.aux_per_bin, "test": s.test_per_bin}
    out = {}
    for split, n in per.items():
        rows = ds.split(split)
        try:
            out[split] = sample_subsets(rows, has_value[rows], n_values=s.n_values, per_bin=n,
                                        size_min=s.size_min, size_max=s.size_max,
                                        seed=stream(cfg.seed, "subsets", split))
        except ValueError as exc:  # name the split whose pool is too small
            raise ValueError(f"{exc} [{split} split of {ds.name!r}: {len(rows)} rows]") from None
    return out


def train_part(cfg: PropertyConfig, device: str) -> dict[str, Any]:
    """What determines the trained networks (the train stage's key)."""
    d = cfg.model_dump(mode="json")
    s = d["subsets"]
    return {"kind": cfg.kind, "device": device, "data": d["data"], "seed": cfg.seed,
            "defense": d["defense"], "train": d["train"],
            "subsets": {k: s[k] for k in ("n_values", "property_value", "size_min", "size_max",
                                          "train_per_bin")}}


def _build(cfg: PropertyConfig, d_in: int, n_classes: int):
    from core.nn import Encoder, PropertyAdversary, TaskHead

    t = cfg.train
    return (Encoder(d_in, hidden=t.hidden_dim, rep_dim=t.representation_dim),
            TaskHead(t.representation_dim, n_classes),
            PropertyAdversary(t.representation_dim, cfg.subsets.n_values, hidden=64))


def train_stage(cfg: PropertyConfig, X: torch.Tensor, y: torch.Tensor, sub: Subsets,
                n_classes: int, progress: Progress) -> StageOutput:
    from core.defenses.inf2guard_property import train_inf2guard_property

    t = cfg.train
    m = train_inf2guard_property(
        X, y, sub, n_classes=n_classes, tradeoff_lambda=cfg.defense.tradeoff_lambda,
        aggregation=cfg.defense.aggregation, epochs=t.epochs, pretrain_epochs=t.pretrain_epochs,
        batch_subsets=t.batch_subsets, lr=t.lr, adversary_lr=t.adversary_lr,
        hidden_dim=t.hidden_dim, representation_dim=t.representation_dim, adversary_hidden=64,
        seed=cfg.seed, progress=progress)
    cpu = {n: {k: v.detach().cpu() for k, v in net.state_dict().items()}
           for n, net in (("encoder", m.encoder), ("head", m.head), ("adversary", m.adversary))}
    return StageOutput(meta={"curves": m.curves, "seconds_train": m.seconds}, weights=cpu)


def release_stage(cfg: PropertyConfig, ds: Dataset, X: torch.Tensor, nets, subs: dict[str, Subsets]
                  ) -> StageOutput:
    """Per-sample utility on the test split; aggregates (mean, max) of the shadow and target
    subsets; the in-training adversary's probabilities on the targets' own-aggregator view."""
    enc, head, adv = nets
    with torch.no_grad():
        R = torch.cat([enc(X[i:i + 8192]) for i in range(0, len(X), 8192)])
        te = torch.as_tensor(np.array(ds.split("test")), device=X.device)
        pred = head(R[te]).argmax(-1).cpu().numpy()
    Rn = R.cpu().numpy().astype(np.float64)
    y = np.asarray(ds.y)
    arrays = {}
    for split in ("aux", "test"):
        for how in ("mean", "max"):
            arrays[f"agg_{split}_{how}"] = aggregate(Rn, subs[split], how).astype(np.float32)
    with torch.no_grad():
        own = torch.as_tensor(arrays[f"agg_test_{cfg.defense.aggregation}"], device=X.device)
        arrays["in_training_proba"] = torch.softmax(adv(own), -1).double().cpu().numpy()
    util = float(np.mean(pred == y[ds.split("test")]))
    return StageOutput(arrays=arrays, meta={"utility_acc": util})


def attack_stage(cfg: PropertyConfig, name: str, rel: StageOutput, subs: dict[str, Subsets]
                 ) -> StageOutput:
    """One registered attacker on the release (the targets' truth is not passed in): the
    targets aggregated the attacker's way (the defender's with ``aggregation: same``) and the
    defense's own adversary's probabilities; the knowledge is the shadow subsets."""
    from core.attacks.property import SubsetRelease
    from core.attacks.protocol import attack_params, attack_part, run_attack
    from core.knowledge import AdversaryKnowledge

    own = cfg.defense.aggregation
    how = own if cfg.attack.aggregation == "same" else cfg.attack.aggregation
    release = SubsetRelease(rel.arrays[f"agg_test_{how}"].astype(np.float64), how,
                            in_training_proba=rel.arrays["in_training_proba"],
                            in_training_aggregation=own)
    knowledge = AdversaryKnowledge(
        n_classes=cfg.subsets.n_values, aux_labels=subs["aux"].labels,
        aux_features=rel.arrays[f"agg_aux_{how}"].astype(np.float64))
    params = attack_params(attack_part(name, FAMILY), cfg.attack)
    out = run_attack(name, release, knowledge, family=FAMILY, seed=cfg.seed, **params)
    arrays = {"proba": out.proba}
    if out.decision_weights is not None:
        arrays["decision_weights"] = np.asarray(out.decision_weights, np.float64)
    return StageOutput(arrays=arrays, meta={"info": out.info})


def projection_stage(cfg: PropertyConfig, ds: Dataset, rel: StageOutput, sub: Subsets
                     ) -> StageOutput:
    """t-SNE (PCA below 60 subsets) of the first ``projection_points`` target subsets: their
    raw feature means beside their released aggregates (spec 004 Fig. 12 (b)/(d))."""
    from core.projection import project

    m = min(cfg.projection_points, len(sub))
    sel = sub.take(np.arange(m))
    raw = aggregate(np.asarray(ds.X), sel, "mean")
    rep = rel.arrays[f"agg_test_{cfg.defense.aggregation}"][:m].astype(np.float64)
    method = "tsne" if m >= 60 else "pca"
    emb_raw, _ = project(raw, method=method, seed=cfg.seed)
    emb_rep, _ = project(rep, method=method, seed=cfg.seed)
    return StageOutput(arrays={"proj_raw": emb_raw, "proj_repr": emb_rep,
                               "proj_attribute": sel.labels.astype(np.int64)},
                       meta={"method": method})


def run_property(cfg: PropertyConfig, progress: Progress, stages: Stages | None = None) -> Result:
    from core.attacks.property import PropertyAttack, majority_rate, score_property
    from core.attacks.protocol import attack_params, attack_part
    from core.bounds.property import PIA_ESTIMATE_CAVEAT, PIA_K_ARY_NOTE, property_bounds
    from core.data import load_dataset
    from core.device import get_device

    stages = stages or Stages(None)
    t0 = time.perf_counter()
    progress.update(0.01, f"loading {cfg.data.name}")
    ds = load_dataset(cfg.data, cfg.seed)
    attr = cfg.data.private_attribute or ds.default_attribute
    code, value = property_value(ds, attr, cfg.subsets.property_value)
    has_value = np.asarray(ds.attribute(attr)) == code
    K = cfg.subsets.n_values
    progress.update(0.03, "sampling subsets")
    subs = make_subsets(cfg, ds, has_value)
    dev = get_device(cfg.device)
    stages.map_location = str(dev)
    X = torch.tensor(np.asarray(ds.X), dtype=torch.float32, device=dev)
    y = torch.tensor(np.asarray(ds.y), dtype=torch.int64, device=dev)
    n_classes = len(ds.label_names)

    # -- train -> release
    trained, train_key = stages.get(
        "train", train_part(cfg, dev.type),
        lambda: train_stage(cfg, X, y, subs["train"], n_classes, progress.sub(0.04, 0.75)))
    progress.update(0.76, "releasing representations")
    nets = _build(cfg, X.shape[1], n_classes)
    for net, name in zip(nets, ("encoder", "head", "adversary"), strict=True):
        net.load_state_dict(trained.weights[name])
        net.to(dev).eval()
    s = cfg.subsets.model_dump(mode="json")
    rel, release_key = stages.get("release", {"train": train_key, "subsets": s},
                                  lambda: release_stage(cfg, ds, X, nets, subs))

    # -- attacks: one stage each
    labels = subs["test"].labels
    metrics: dict[str, float] = {
        "utility_acc": float(rel.meta["utility_acc"]),
        "utility_majority": float(np.bincount(np.asarray(ds.y)[ds.split("test")]).max()
                                  / len(ds.split("test"))),
        "tradeoff_lambda": float(cfg.defense.tradeoff_lambda), "chance": 1.0 / K,
        "n_values": float(K), "property_majority": majority_rate(labels, K),
        "subsets_train": float(len(subs["train"])), "subsets_aux": float(len(subs["aux"])),
        "subsets_test": float(len(subs["test"])),
        "subset_size_mean": float(subs["test"].lengths.mean())}
    intervals: dict[str, dict[str, float]] = {}
    attack_info: dict[str, Any] = {}
    ces: dict[str, float] = {}
    n_att = len(cfg.attack.attackers)
    for i, name in enumerate(cfg.attack.attackers):
        progress.update(0.78 + 0.12 * i / n_att, f"attack: {name}")
        ap = attack_part(name, FAMILY)
        key = {"release": release_key, "attacker": name, "params": attack_params(ap, cfg.attack)}
        out, _ = stages.get("attack", key, lambda name=name: attack_stage(cfg, name, rel, subs),
                            label=f"attack:{name}")
        att = PropertyAttack(out.arrays["proba"], out.arrays.get("decision_weights"),
                             out.meta.get("info", {}))
        sc, iv = score_property(att, labels, n_values=K, seed=cfg.seed)
        for stat, v in sc.items():
            metrics[ap.metric_name(stat)] = float(v)
        for stat, (lo, hi) in iv.items():
            intervals[ap.metric_name(stat)] = {"lo": float(lo), "hi": float(hi),
                                               "n": float(len(labels))}
        attack_info[name] = att.info
        if ap.role != "baseline":
            ces[name] = sc["ce_nats"]
    # the strongest trained attacker (a no-model baseline only when nothing else ran)
    trained_attackers = ([a for a in cfg.attack.attackers
                          if attack_part(a, FAMILY).role != "baseline"]
                         or list(cfg.attack.attackers))
    acc = {a: attack_part(a, FAMILY).metric_name("acc") for a in trained_attackers}
    best = max(trained_attackers, key=lambda a: metrics[acc[a]])
    metrics["property_acc_best"] = metrics[acc[best]]
    intervals["property_acc_best"] = intervals[acc[best]]
    notes = [(f"property: share of {attr} = {value!r} in a subset, {K} bins at ratios "
             f"{', '.join(f'{r:g}' for r in subs['test'].ratios)}; the same number of subsets per "
             "bin (majority-bin rate = chance)")]
    info: dict[str, Any] = {"private_attribute": f"share of {value}", "attribute": attr,
                            "property_value": value,
                            "attribute_values": [f"{r:g}" for r in subs["test"].ratios],
                            "best_attacker": best, "attacks": attack_info, "notes": notes}

    # -- the K-ary leakage bound at the lowest attacker CE (an upper estimate of H(u|R))
    if ces:
        who = min(ces, key=ces.get)
        metrics.update(property_bounds(ces[who], K))
        info["bound_from"] = who
        info["bound_caveat"] = PIA_ESTIMATE_CAVEAT
        info["bound_note"] = PIA_K_ARY_NOTE
        if metrics["bound_pia_vacuous"]:
            notes.append("the K-ary bound is vacuous here (Ĥ(u|R) ≤ 1 bit: it allows accuracy 1)")
        if metrics["property_acc_best"] > metrics["bound_pia_fano_exact"] + 1e-9:
            notes.append("the measured accuracy exceeds the tight bound at Ĥ: Ĥ over-estimates "
                         "H(u|R) here, so the bound is optimistic, not a certificate")

    # -- projection of the target subsets (raw feature means vs released aggregates)
    artifacts: dict[str, np.ndarray] = {}
    if cfg.projection_points > 0:
        progress.update(0.92, "projecting the target subsets")
        pr, _ = stages.get("projection", {"release": release_key,
                                          "points": cfg.projection_points},
                           lambda: projection_stage(cfg, ds, rel, subs["test"]))
        artifacts.update(pr.arrays)
        info["projection_method"] = pr.meta.get("method", "tsne")
    curves = {f"property_train_{k}": [float(v) for v in vs]
              for k, vs in trained.meta.get("curves", {}).items()}
    metrics["seconds_train"] = float(trained.meta.get("seconds_train", 0.0))
    metrics["seconds_total"] = time.perf_counter() - t0
    info["stages"] = dict(stages.log)
    info["caveats"] = caveats.collect(cfg.kind, metrics, info, cfg.model_dump(mode="json"),
                                      intervals=intervals)
    return Result(kind=cfg.kind, config=cfg.model_dump(mode="json"), seed=cfg.seed,
                  metrics=metrics, intervals=intervals, curves=curves, artifacts=artifacts,
                  info=info)


def _with_interval(result: Any, name: str) -> str:
    v = result.metrics.get(name)
    iv = result.intervals.get(name)
    if v is None:
        return "n/a"
    return f"{v:.2f}" + (f" [{iv['lo']:.2f}, {iv['hi']:.2f}]" if iv else "")


def fresh_attacker_finding(by_lambda: dict[float, Any], attacker: str = "mlp") -> dict | None:
    """The teaching sweep's lesson about a fresh attacker, every number from the stored Results
    ``by_lambda`` (λ -> Result): compares λ = 0 (no defense) with the λ > 0 where that attacker
    reads the property best. ``kind`` is ``"stronger_with_defense"`` when the fresh attacker
    reads more at that λ than at λ = 0 beyond the intervals, ``"no_effect_on_fresh"`` when more
    but within them (the game made the property easier to read for an
    attacker trained afterwards: a finding to explain, not to tune away), else ``"defended"``.
    Returns None without λ = 0 and a λ > 0 scored by ``attacker``."""
    name = f"property_{attacker}_acc"
    scored = {float(g): r for g, r in by_lambda.items()
              if r is not None and r.metrics.get(name) is not None}
    if 0.0 not in scored or len(scored) < 2:
        return None
    r0 = scored[0.0]
    lam = max((g for g in scored if g > 0), key=lambda g: scored[g].metrics[name])
    r1 = scored[lam]
    a0, a1 = r0.metrics[name], r1.metrics[name]
    u0, u1 = r0.metrics.get("utility_acc"), r1.metrics.get("utility_acc")
    iv0, iv1 = r0.intervals.get(name), r1.intervals.get(name)
    beyond = bool(iv0 and iv1 and (iv1["lo"] > iv0["hi"] or iv0["lo"] > iv1["hi"]))
    util = (f"utility {u0:.3f} at λ = 0 and {u1:.3f} at λ = {lam:g}"
            if u0 is not None and u1 is not None else "utility n/a")
    acc0, acc1 = _with_interval(r0, name), _with_interval(r1, name)
    if a1 > a0 and not beyond:
        text = (f"Measured: the fresh {attacker} reads the property with accuracy {acc1} at "
                f"λ = {lam:g} and {acc0} at λ = 0 (no defense) — the intervals overlap: the "
                f"defense does not measurably lower what an attacker trained afterwards reads "
                f"({util}).")
        kind = "no_effect_on_fresh"
    elif a1 > a0:
        text = (f"Measured: the fresh {attacker} reads the property with accuracy {acc1} at "
                f"λ = {lam:g} but only {acc0} at λ = 0 (no defense) — the defense made the "
                f"property *easier* for an attacker trained afterwards ({util}; the intervals "
                "do not overlap). This contradicts the paper's claim for fresh attackers. A likely reason: "
                "at λ = 0 nothing in the objective involves the property, so the aggregate "
                "carries it only incidentally; the game makes the encoder move r with the "
                "attribute to fool the one adversary Ψ it trains against, and that "
                "attribute-dependent shift is what a classifier trained afterwards learns. "
                "Fooling Ψ is not removing the information.")
        kind = "stronger_with_defense"
    else:
        text = (f"Measured: raising λ from 0 to {lam:g} moves the fresh {attacker}'s accuracy "
                f"from {acc0} to {acc1} ({util}; "
                + ("beyond the intervals" if beyond else "within the intervals") + ").")
        kind = "defended"
    return {"kind": kind, "lambda": lam, "acc_0": a0, "acc_lambda": a1, "utility_0": u0,
            "utility_lambda": u1, "beyond_intervals": beyond, "text": text}
