"""Runner for ``kind: property``: Inf2Guard's defense against property inference (spec 004
§2.2, Algorithm 2) and the property attacks of §3.2, composed from the cached stages of
:mod:`core.runs.property_stages`.

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
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from core.config.schema import PropertyConfig
from core.data.base import Dataset
from core.data.subsets import Subsets
from core.foundation import caveats
from core.foundation.progress import Progress
from core.foundation.result import Result
from core.foundation.stages import StageOutput, Stages
from core.runs import property_stages as S

FAMILY = S.FAMILY


@dataclass
class _Data:
    """The loaded data set, the property (the share of ``value`` of ``attr`` in a subset, K
    bins) and the defender's, shadow and target subsets."""

    ds: Dataset
    attr: str
    value: str
    K: int
    subs: dict[str, Subsets]


def run_property(cfg: PropertyConfig, progress: Progress, stages: Stages | None = None) -> Result:
    """Load and sample subsets → train under λ → release → attacks → scores, bound,
    projection → the Result."""
    from core.foundation.device import get_device

    stages = stages or Stages(None)
    t0 = time.perf_counter()
    d = _load(cfg, progress)
    dev = get_device(cfg.device)
    stages.map_location = str(dev)
    X = torch.tensor(np.asarray(d.ds.X), dtype=torch.float32, device=dev)
    y = torch.tensor(np.asarray(d.ds.y), dtype=torch.int64, device=dev)
    n_classes = len(d.ds.label_names)
    shape = tuple(d.ds.image_shape) if d.ds.image_shape else (1, 1, int(X.shape[1]))
    trained, train_key = stages.get(
        "train", S.train_part(cfg, dev.type),
        lambda: S.train_stage(cfg, X, y, d.subs["train"], n_classes, progress.sub(0.04, 0.75),
                              shape))
    rel, release_key = _release(cfg, d, X, n_classes, trained, train_key, dev, stages, progress,
                                shape)
    metrics = _utility_and_subsets(cfg, d, rel)
    intervals, attack_info, ces = _attacks(cfg, d, rel, release_key, stages, progress, metrics)
    best = _strongest(cfg, metrics, intervals)
    notes = [(f"property: share of {d.attr} = {d.value!r} in a subset, {d.K} bins at ratios "
             f"{', '.join(f'{r:g}' for r in d.subs['test'].ratios)}; the same number of subsets "
             "per bin (majority-bin rate = chance)")]
    info: dict[str, Any] = {"private_attribute": f"share of {d.value}", "attribute": d.attr,
                            "property_value": d.value,
                            "attribute_values": [f"{r:g}" for r in d.subs["test"].ratios],
                            "best_attacker": best, "attacks": attack_info, "notes": notes}
    if ces:
        _bound(d.K, ces, metrics, info, notes)
    artifacts: dict[str, np.ndarray] = {}
    if cfg.projection_points > 0:
        progress.update(0.92, "projecting the target subsets")
        pr, _ = stages.get("projection", {"release": release_key,
                                          "points": cfg.projection_points},
                           lambda: S.projection_stage(cfg, d.ds, rel, d.subs["test"]))
        artifacts.update(pr.arrays)
        info["projection_method"] = pr.meta.get("method", "tsne")
    return _report(cfg, trained, stages, t0, metrics=metrics, intervals=intervals,
                   artifacts=artifacts, info=info)


def _load(cfg: PropertyConfig, progress: Progress) -> _Data:
    """The data set, the property's attribute value and the seeded subsets of each split."""
    from core.data import load_dataset

    progress.update(0.01, f"loading {cfg.data.name}")
    ds = load_dataset(cfg.data, cfg.seed)
    attr = cfg.data.private_attribute or ds.default_attribute
    code, value = S.property_value(ds, attr, cfg.subsets.property_value)
    has_value = np.asarray(ds.attribute(attr)) == code
    progress.update(0.03, "sampling subsets")
    subs = S.make_subsets(cfg, ds, has_value)
    return _Data(ds=ds, attr=attr, value=value, K=cfg.subsets.n_values, subs=subs)


def _release(cfg: PropertyConfig, d: _Data, X: torch.Tensor, n_classes: int,
             trained: StageOutput, train_key: str, dev, stages: Stages, progress: Progress,
             shape: tuple[int, ...] | None = None) -> tuple[StageOutput, str]:
    """The trained networks rebuilt from the train stage's weights and the release stage
    (keyed by the trained model and the subsets): (release, its key)."""
    progress.update(0.76, "releasing representations")
    nets = S.build_networks(cfg, X.shape[1], n_classes, shape)
    for net, name in zip(nets, ("encoder", "head", "adversary"), strict=True):
        net.load_state_dict(trained.weights[name])
        net.to(dev).eval()
    s = cfg.subsets.model_dump(mode="json")
    return stages.get("release", {"train": train_key, "subsets": s},
                      lambda: S.release_stage(cfg, d.ds, X, nets, d.subs))


def _utility_and_subsets(cfg: PropertyConfig, d: _Data, rel: StageOutput) -> dict[str, float]:
    """The metrics before any attack: utility on the test split beside the majority label's
    rate, λ, chance and the majority bin's rate, and the subsets' counts and mean size."""
    from core.attacks.property import majority_rate

    ds, subs, K = d.ds, d.subs, d.K
    return {
        "utility_acc": float(rel.meta["utility_acc"]),
        "utility_majority": float(np.bincount(np.asarray(ds.y)[ds.split("test")]).max()
                                  / len(ds.split("test"))),
        "tradeoff_lambda": float(cfg.defense.tradeoff_lambda), "chance": 1.0 / K,
        "n_values": float(K), "property_majority": majority_rate(subs["test"].labels, K),
        "subsets_train": float(len(subs["train"])), "subsets_aux": float(len(subs["aux"])),
        "subsets_test": float(len(subs["test"])),
        "subset_size_mean": float(subs["test"].lengths.mean())}


def _attacks(cfg: PropertyConfig, d: _Data, rel: StageOutput, release_key: str, stages: Stages,
             progress: Progress, metrics: dict[str, float]
             ) -> tuple[dict[str, dict[str, float]], dict[str, Any], dict[str, float]]:
    """Each chosen attacker on the release (a stage keyed by the release and its parameters),
    scored against the targets' true bins into ``metrics``: (intervals, each attacker's info,
    each trained attacker's CE in nats)."""
    from core.attacks.property import PropertyAttack, score_property
    from core.attacks.protocol import attack_params, attack_part

    labels = d.subs["test"].labels
    intervals: dict[str, dict[str, float]] = {}
    attack_info: dict[str, Any] = {}
    ces: dict[str, float] = {}
    n_att = len(cfg.attack.attackers)
    for i, name in enumerate(cfg.attack.attackers):
        progress.update(0.78 + 0.12 * i / n_att, f"attack: {name}")
        ap = attack_part(name, FAMILY)
        key = {"release": release_key, "attacker": name, "params": attack_params(ap, cfg.attack)}
        out, _ = stages.get("attack", key,
                            lambda name=name: S.attack_stage(cfg, name, rel, d.subs),
                            label=f"attack:{name}")
        att = PropertyAttack(out.arrays["proba"], out.arrays.get("decision_weights"),
                             out.meta.get("info", {}))
        sc, iv = score_property(att, labels, n_values=d.K, seed=cfg.seed)
        for stat, v in sc.items():
            metrics[ap.metric_name(stat)] = float(v)
        for stat, (lo, hi) in iv.items():
            intervals[ap.metric_name(stat)] = {"lo": float(lo), "hi": float(hi),
                                               "n": float(len(labels))}
        attack_info[name] = att.info
        if ap.role != "baseline":
            ces[name] = sc["ce_nats"]
    return intervals, attack_info, ces


def _strongest(cfg: PropertyConfig, metrics: dict[str, float],
               intervals: dict[str, dict[str, float]]) -> str:
    """The strongest trained attacker by accuracy (a no-model baseline only when nothing else
    ran), reported as ``property_acc_best``."""
    from core.attacks.protocol import attack_part

    trained_attackers = ([a for a in cfg.attack.attackers
                          if attack_part(a, FAMILY).role != "baseline"]
                         or list(cfg.attack.attackers))
    acc = {a: attack_part(a, FAMILY).metric_name("acc") for a in trained_attackers}
    best = max(trained_attackers, key=lambda a: metrics[acc[a]])
    metrics["property_acc_best"] = metrics[acc[best]]
    intervals["property_acc_best"] = intervals[acc[best]]
    return best


def _bound(K: int, ces: dict[str, float], metrics: dict[str, float], info: dict[str, Any],
           notes: list[str]) -> None:
    """The K-ary leakage bound at the lowest attacker CE (an upper estimate of H(u|R)), with
    a note when it is vacuous or the measured accuracy exceeds it."""
    from core.bounds.property import PIA_ESTIMATE_CAVEAT, PIA_K_ARY_NOTE, property_bounds

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


def _report(cfg: PropertyConfig, trained: StageOutput, stages: Stages, t0: float, *,
            metrics: dict[str, float], intervals: dict[str, dict[str, float]],
            artifacts: dict[str, np.ndarray], info: dict[str, Any]) -> Result:
    """The Result: the training curves, timings, the stage log and the caveats."""
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
