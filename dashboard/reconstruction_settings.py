"""Settings of the Reconstruction → gradient leakage page that tests and benchmarks import
without running the page: the defense choices, the κ slider grid and the sweeps' grids.

Every grid is a registered knob's (:mod:`core.foundation.parts`): DP-SGD's target-ε grid is its teaching
grid; the κ channel's slider and sweep scale with the image dimension d (κ/d nats per
dimension), so its gradient-leakage knob is per dimension and :meth:`core.foundation.parts.Knob.for_dim`
turns it into κ for the data."""

from __future__ import annotations

from typing import Any

from core.foundation.parts import DEFENSES, baseline_for, defenses_for

KIND = "gradient_leakage"


def defense_choices(family: str = KIND) -> dict[str, tuple[str, str, dict[str, Any]]]:
    """Choice -> (title, defense, block fields): every registered defense of ``family``, one
    choice per value of a defense's ``variants`` field (the κ channel's Natural, White, ...:
    each a defense of its own), titled from the part."""
    out: dict[str, tuple[str, str, dict[str, Any]]] = {}
    for name in defenses_for(family):
        part = DEFENSES.get(name)
        titles = dict(part.page.variant_titles)
        values = part.variant_values()
        for v in values:
            symbol = part.knob.symbol + " · " if part.knob else ""
            out[v] = (f"{symbol}{titles.get(v, v.capitalize())}", name, {part.page.variants: v})
        if not values:
            out[name] = (part.title, name, {})
    return out


def choice_of(block: Any) -> str:
    """The choice a defense block (a validated block) is on the page."""
    part = DEFENSES.get(block.kind)
    return str(getattr(block, part.page.variants)) if part.page.variants else block.kind


#: the page's "defense" choices: none, each channel of the channel block, DP-SGD
CHOICES = {c: t for c, (t, _, _) in defense_choices().items()}
#: the undefended run of the page's settings (the tradeoff plot's reference point)
BASELINE = baseline_for(KIND)
#: the "DLG setting" preset (Zhu et al. 2019): LeNet-sigmoid (initialised U(−0.5, 0.5) as in
#: DLG, :class:`core.models.nn.LeNetSigmoid`), undefended single-image uploads of the fresh model,
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
#: κ/d values of the κ sweep (nats per dimension) and the target ε values of the DP-SGD sweep:
#: the knobs' teaching grids
KAPPA_KNOB = DEFENSES.get("channel").knob.for_family(KIND)
KAPPA_PER_DIM_GRID = KAPPA_KNOB.teaching_grid()
EPS_GRID = DEFENSES.get("dp_sgd").knob.for_family(KIND).teaching_grid()


def kappa_grid(d: int) -> list[float]:
    """κ slider positions: a 1-2-5 log scale from about 0.001·d to 10·d nats (the channel's
    per-dimension knob for dimension d)."""
    return list(KAPPA_KNOB.for_dim(d).positions())


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
    """One stored sweep (kind sweep, core.config.sweeps) over the defense blocks of every series:
    only the points missing from the store run, each stored under its own key."""
    blocks = [c["defense"] for cs in series.values() for c in cs]
    return {"kind": "sweep", "base": config, "grid": {"defense": blocks},
            "seeds": [config.get("seed", 0)], "executor": "serial"}
