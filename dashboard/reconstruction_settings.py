"""Settings of the Reconstruction → gradient leakage page that tests and benchmarks import
without running the page: the defense choices, the κ slider grid and the sweeps' grids.

DP-SGD's target-ε grid is its registered knob's teaching grid (:mod:`core.parts`). The κ channel's
slider and sweep scale with the image dimension d (κ/d nats per dimension), which no fixed
registered grid can say, so they are built here from d."""

from __future__ import annotations

import math
from typing import Any

from core.parts import DEFENSES

#: the page's "defense" choices: none, each channel of the channel block, DP-SGD
CHOICES = {"none": "none (undefended)", "natural": "κ · Natural (σI)",
           "white": "κ · White (∝ Σ_D)", "personalized": "κ · Personalized (σ·diag β)",
           "laplace": "κ · Laplace (derived bound)", "dp_sgd": "DP-SGD (Opacus)"}
#: the "DLG setting" preset (Zhu et al. 2019): LeNet-sigmoid (initialised U(−0.5, 0.5) as in
#: DLG, :class:`core.nn.LeNetSigmoid`), undefended single-image uploads of the fresh model,
#: DLG and iDLG at their presets (L-BFGS lr 1, 300 iterations, one start), and the model's own
#: training recipe (Adam lr 3e-3, batch 32, 20 epochs: it trains well above chance).
#: ``benchmarks/dlg_lenet.py`` measures exactly this config on 32 targets.
DLG_SETTING: dict[str, Any] = {
    "data": {"name": "digits"},
    "defense": {"kind": "none"},
    "train": {"model": "lenet_sigmoid", "setting": "central", "epochs": 20, "batch_size": 32,
              "lr": 0.003, "optimizer": "adam"},
    "attack": {"attackers": ["dlg", "idlg"], "targets": 32, "batch_size": 1, "iterations": None,
               "model_state": "fresh", "observation": "gradient"},
}
#: κ/d values of the κ sweep (nats per dimension) and the target ε values of the DP-SGD sweep
KAPPA_PER_DIM_GRID = (0.01, 0.03, 0.1, 0.3, 1.0)
EPS_GRID = DEFENSES.get("dp_sgd").knob.for_family("gradient_leakage").teaching_grid()


def kappa_grid(d: int) -> list[float]:
    """κ slider positions: a 1-2-5 log scale from about 0.001·d to 10·d nats."""
    lo, hi = 1e-3 * d, 10.0 * d
    out = []
    e = math.floor(math.log10(lo))
    while True:
        for m in (1, 2, 5):
            v = m * 10.0 ** e
            if lo * 0.99 <= v <= hi * 1.01:
                out.append(float(f"{v:.6g}"))
        if 10.0 ** e > hi:
            break
        e += 1
    return out


def sweep_configs(config: dict[str, Any], d: int) -> dict[str, list[dict[str, Any]]]:
    """Series name -> configs: a κ sweep per channel (κ/d on a fixed grid) and a target-ε
    sweep of DP-SGD, everything else as on the page."""
    out: dict[str, list[dict[str, Any]]] = {}
    for ch in ("natural", "white", "personalized"):
        out[ch] = [{**config, "defense": {"kind": "channel", "channel": ch,
                                          "kappa": float(f"{r * d:.6g}"),
                                          "noise_mode": "redraw"}} for r in KAPPA_PER_DIM_GRID]
    out["dp_sgd"] = [{**config, "defense": {"kind": "dp_sgd", "target_epsilon": e}}
                     for e in EPS_GRID]
    return out


def sweep_config(config: dict[str, Any], series: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """One stored sweep (kind sweep, core.sweeps) over the defense blocks of every series:
    only the points missing from the store run, each stored under its own key."""
    blocks = [c["defense"] for cs in series.values() for c in cs]
    return {"kind": "sweep", "base": config, "grid": {"defense": blocks},
            "seeds": [config.get("seed", 0)], "executor": "serial"}
