"""The stages of the property family (spec 004 §2.2, §3.2): the subsets, then train →
release → attack → projection, each a pure function of the config part its stage key holds
(:mod:`core.foundation.stages`). The runner :mod:`core.runs.property` composes them and scores.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from core.config.schema import PropertyConfig
from core.data.base import Dataset
from core.data.subsets import Subsets, aggregate, sample_subsets
from core.foundation.progress import Progress
from core.foundation.seeds import stream
from core.foundation.stages import StageOutput

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
    part = {"kind": cfg.kind, "device": device, "data": d["data"], "seed": cfg.seed,
            "defense": d["defense"], "train": d["train"],
            "subsets": {k: s[k] for k in ("n_values", "property_value", "size_min", "size_max",
                                          "train_per_bin")}}
    if cfg.model != type(cfg.model)():  # the default model keeps the keys stored runs have
        part["model"] = d["model"]
    return part


def build_networks(cfg: PropertyConfig, d_in: int, n_classes: int,
                   shape: tuple[int, ...] | None = None):
    """Encoder, task head and the in-training property adversary, untrained: the MLP encoder
    of ``train.hidden_dim`` / ``representation_dim`` for the default model, else ``model``'s
    encoder role on data of ``shape`` (r flattened; the head and adversary read its width)."""
    from core.models.nn import Encoder, PropertyAdversary, TaskHead

    t = cfg.train
    if cfg.model == type(cfg.model)():
        enc, r_dim = Encoder(d_in, hidden=t.hidden_dim, rep_dim=t.representation_dim), None
    else:
        from core.models import build_encoder

        m = cfg.model
        enc, r_dim = build_encoder(m.arch, shape or (1, 1, d_in), n_classes, m.width,
                                   data=cfg.data.name)
    r_dim = r_dim or t.representation_dim
    return (enc, TaskHead(r_dim, n_classes),
            PropertyAdversary(r_dim, cfg.subsets.n_values, hidden=64))


def train_stage(cfg: PropertyConfig, X: torch.Tensor, y: torch.Tensor, sub: Subsets,
                n_classes: int, progress: Progress,
                shape: tuple[int, ...] | None = None) -> StageOutput:
    from core.defenses.inf2guard_property import train_inf2guard_property
    from core.models.nn import seeded

    networks = None
    if cfg.model != type(cfg.model)():
        def networks(gen):
            return tuple(seeded(net, gen)
                         for net in build_networks(cfg, X.shape[1], n_classes, shape))
    t = cfg.train
    m = train_inf2guard_property(
        X, y, sub, n_classes=n_classes, tradeoff_lambda=cfg.defense.tradeoff_lambda,
        aggregation=cfg.defense.aggregation, epochs=t.epochs, pretrain_epochs=t.pretrain_epochs,
        batch_subsets=t.batch_subsets, lr=t.lr, adversary_lr=t.adversary_lr,
        hidden_dim=t.hidden_dim, representation_dim=t.representation_dim, adversary_hidden=64,
        seed=cfg.seed, progress=progress, networks=networks)
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
    from core.foundation.knowledge import AdversaryKnowledge

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
    from core.data.projection import project

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
