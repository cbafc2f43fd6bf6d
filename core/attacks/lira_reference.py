"""The LiRA reference setting (Carlini et al. 2022, "Membership Inference Attacks From First
Principles", and its reference code): CIFAR-10, a Wide ResNet 28-2 trained on a random half of
the 50,000 training images, 16 shadow models, LiRA online and offline.

:data:`PUBLISHED` holds the figures the reference setting reports for 16 shadow models; a run
of :func:`reference_config` on CIFAR-10 shows ours beside them (:func:`comparison_rows`).
CIFAR-10 is read from ``$PRIVLAB_DATA_DIR/cifar10`` (torchvision layout) and never downloaded
here: :func:`check_data` is the one-line refusal naming where to put it. :func:`cost` is the
estimate (:mod:`core.engine.costs`): on this CPU from the measured training steps of a WRN-28-2,
on an H100-class GPU from its FLOPs at a stated assumed utilisation.

What our runner does differently from the reference code, stated with the figures: plain SGD
at the reference's peak learning rate (no momentum, weight decay, learning-rate schedule or
augmentation: the membership runner's training has none), the target trained beside 16 shadow
models (the reference trains 16 models and scores one of them against the other 15), and LiRA
scored on the un-augmented query only.

Torch-free at import.
"""

from __future__ import annotations

import copy
from typing import Any

from core.engine.costs import ModelCost, arch_cost, image_passes

__all__ = [
    "DATA",
    "PRESET_ID",
    "PUBLISHED",
    "check_data",
    "comparison_rows",
    "cost",
    "reference_config",
]

PRESET_ID = "lira_reference"
DATA = "cifar10"
ARCH = "wrn28_2"
#: CIFAR-10's 60,000 images with 5 % test and 5 % aux: 54,000 train rows, a pool of 50,000
TRAIN_ROWS = 54_000
SOURCE = ("Carlini et al. 2022 (LiRA), reference setting: CIFAR-10, WRN-28-2, 16 shadow "
          "models; AUC and TPR at 0.1 % FPR")

#: attack config name → the published figures of the reference setting (16 shadow models)
PUBLISHED: dict[str, dict[str, float]] = {
    "lira_online": {"auc": 0.6676, "tpr_at_0p1pct_fpr": 0.0169},
    "lira_offline": {"auc": 0.5488, "tpr_at_0p1pct_fpr": 0.0130},
}

_CONFIG: dict[str, Any] = {
    "kind": "membership", "device": "auto", "seed": 0,
    "data": {"name": DATA, "test_fraction": 0.05, "aux_fraction": 0.05},
    "model": {"arch": ARCH, "width": 1.0},
    "train": {"members": 25_000, "epochs": 100, "batch_size": 256, "lr": 0.1,
              "optimizer": "sgd"},
    "attack": {"attackers": list(PUBLISHED), "shadows": 16, "rmia_references": 1,
               "targets": 1},
    "projection_points": 0,
}
DIFFERENCES = ("our runner: plain SGD at lr 0.1 (no momentum, weight decay, schedule or "
               "augmentation), the target beside 16 shadows, LiRA on the un-augmented query")


def reference_config(*, data: str | None = None, width: float | None = None,
                     epochs: int | None = None, members: int | None = None,
                     shadows: int | None = None, validate: bool = True) -> Any:
    """The preset's config (validated into :class:`core.config.schema.MembershipConfig` unless
    ``validate`` is False: a plain mapping); the keywords give a scaled copy of the same
    pipeline (another data set, a narrower WRN, fewer epochs, members or shadows: what a test
    runs on CPU)."""
    from core.foundation.parts import baseline_for

    cfg = copy.deepcopy(_CONFIG)
    cfg["defense"] = {"kind": baseline_for("membership")}
    if data is not None:
        cfg["data"]["name"] = data
    if width is not None:
        cfg["model"]["width"] = float(width)
    if epochs is not None:
        cfg["train"]["epochs"] = int(epochs)
    if members is not None:
        cfg["train"]["members"] = int(members)
    if shadows is not None:
        cfg["attack"]["shadows"] = int(shadows)
    if not validate:
        return cfg
    from core.config.schema import parse_config

    return parse_config(cfg)


def check_data(data_dir: str | None = None) -> None:
    """Nothing when CIFAR-10's torchvision files are where the data layer reads them; else the
    one-line :class:`core.data.errors.DataError` naming the directory to fill (no download)."""
    from core.data.errors import DataError
    from core.data.torchvision_sets import is_present, root_for

    if not is_present(DATA, data_dir):
        root = root_for(DATA, data_dir)
        raise DataError(f"data.name: {DATA} is not in {root}; the LiRA reference preset needs "
                        f"CIFAR-10's torchvision files there ({root}/cifar-10-batches-py/, or "
                        f"set $PRIVLAB_DATA_DIR to a folder holding {DATA}/); nothing is "
                        "downloaded")


def cost(config: Any = None) -> ModelCost:
    """The estimated training cost of the preset (or of ``config``, a scaled copy): WRN-28-2's
    parameters and forward FLOPs on 3×32×32, the image passes of the target and its shadows,
    and the time on this CPU (measured steps) and on an H100-class GPU (an estimate)."""
    cfg = reference_config(validate=False) if config is None else config
    if not isinstance(cfg, dict):
        cfg = cfg.model_dump(mode="json")
    passes = image_passes(cfg, TRAIN_ROWS)
    return arch_cost(cfg["model"]["arch"], float(cfg["model"]["width"]), (3, 32, 32), 10, passes)


def comparison_rows(result: Any = None) -> list[dict[str, Any]]:
    """One row per LiRA variant: the published AUC and TPR at 0.1 % FPR and ours (None without
    a result or where the run did not score that attack)."""
    rows = []
    metrics = getattr(result, "metrics", None) or {}
    for attack, pub in PUBLISHED.items():
        row: dict[str, Any] = {"attack": attack}
        for stat, value in pub.items():
            ours = metrics.get(f"mia_{attack}_{stat}")
            row[f"published_{stat}"] = value
            row[f"ours_{stat}"] = None if ours is None else float(ours)
        rows.append(row)
    return rows


def preset_yaml() -> str:
    """``privlab papers --preset lira_reference``: the config as YAML under a comment with the
    published figures, the differences and the estimated cost."""
    import yaml

    from core.engine.costs import format_duration

    c = cost()
    pub = "; ".join(f"{a}: AUC {p['auc']}, TPR {p['tpr_at_0p1pct_fpr']:.2%} at 0.1 % FPR"
                    for a, p in PUBLISHED.items())
    head = (f"# {PRESET_ID}: {SOURCE}. Published: {pub}. {DIFFERENCES}. Needs {DATA}/ under "
            f"$PRIVLAB_DATA_DIR (never downloaded). Estimated: {format_duration(c.cpu_seconds)} "
            f"on this CPU ({c.cpu_based_on}), {format_duration(c.gpu_seconds)} on a GPU "
            f"({c.gpu_based_on})\n")
    cfg = reference_config().model_dump(mode="json")
    return head + yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True)
