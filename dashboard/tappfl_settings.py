"""Attribute privacy page settings -> TappflConfig mapping (no Streamlit; tests use it too).

The presets are the engine's own (:func:`core.defenses.tappfl_presets.quick_preset` and
:func:`~core.defenses.tappfl_presets.paper_preset`); the page's widgets override the fields they show,
and everything else (pretraining epochs, network widths) comes from the chosen preset.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from core.config.schema import AttributePrivacyConfig, DataSpec
from core.foundation.parts import DEFENSES

PRESETS = ("quick", "paper")
#: TAPPFL's λ teaching grid (the page's sweep), from its registered knob
LAMBDA_GRID = DEFENSES.get("tappfl").knob.for_family("attribute_privacy").teaching_grid()
# t-SNE of the test rows dominates a quick run's time; the quick preset embeds fewer of them
PROJECTION_POINTS = {"quick": 300, "paper": AttributePrivacyConfig().projection_points}

#: the attribute a data set opens with on the page: on the digit sets "bold" (ink above its
#: digit's median), not "parity" or "large", which are functions of the digit itself — hiding
#: those must cost the whole task (TAPPFL Theorem 1), so λ could only trade utility away
DEFAULT_ATTRIBUTE = {"digits": "bold", "mnist5k": "bold"}
#: the data set the page opens with on a fresh clone (the sidebar's default)
DEFAULT_DATASET = "digits"

# widget key -> human name (for "edited from the preset" and error messages)
WIDGETS = {
    "ap_devices": "devices", "ap_rounds": "rounds", "ap_fraction": "fraction per round",
    "ap_epochs": "local epochs", "ap_adv_steps": "adversary steps",
    "ap_adv_lr": "adversary lr multiple", "ap_batch": "batch size",
    "ap_lr": "learning rate", "ap_max_samples": "row cap", "ap_proj_points": "projection points",
}


def with_defense(config: Mapping[str, Any], block: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``config`` with another defense block (e.g. ``{"kind": "none"}``: the
    undefended run of the same settings)."""
    out = json.loads(json.dumps(config))
    out["defense"] = dict(block)
    return out


def with_knob(config: Mapping[str, Any], field: str, value: float) -> dict[str, Any]:
    """A copy of ``config`` whose defense block has ``field = value`` (a sweep's grid point)."""
    out = json.loads(json.dumps(config))
    out["defense"][field] = float(value)
    return out


def preset_config(preset: str, data: DataSpec | None = None) -> AttributePrivacyConfig:
    """The engine's preset config (``quick`` or ``paper``) for ``data``."""
    from core.defenses.tappfl_presets import paper_preset, quick_preset

    if preset not in PRESETS:
        raise ValueError(f"preset: got {preset!r}; allowed: {', '.join(PRESETS)}")
    fn = quick_preset if preset == "quick" else paper_preset
    return fn(data or DataSpec())


def preset_widgets(preset: str) -> dict[str, Any]:
    """Widget values of a preset (keys of :data:`WIDGETS`)."""
    cfg = preset_config(preset)
    fl = cfg.fl
    return {
        "ap_devices": fl.num_devices, "ap_rounds": fl.rounds, "ap_fraction": float(fl.fraction_fit),
        "ap_epochs": fl.local_epochs, "ap_adv_steps": cfg.adversary_steps,
        "ap_adv_lr": float(cfg.adversary_lr_scale),
        "ap_batch": fl.batch_size, "ap_lr": float(fl.lr),
        "ap_max_samples": int(cfg.data.max_samples or 0),
        "ap_proj_points": PROJECTION_POINTS[preset],
    }


def build_config(
    *,
    preset: str,
    dataset: str,
    attribute: str,
    seed: int,
    device: str,
    defense: str,
    lam: float,
    values: Mapping[str, Any],
    partition: str = "iid",
    dp: Mapping[str, float] | None = None,
    pruning_rate: float | None = None,
    attackers: tuple[str, ...] | None = None,
    params: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The config mapping (validated later by parse_config) of the page's current settings:
    the defense block carries only the chosen defense's parameters (``lam`` for TAPPFL,
    ``dp`` / ``pruning_rate`` for the baselines, or any block fields in ``params``)."""
    cap = int(values["ap_max_samples"])
    data = DataSpec(name=dataset, private_attribute=attribute, max_samples=cap if cap > 0 else None)
    cfg = preset_config(preset, data).model_dump(mode="json")
    cfg.update(seed=int(seed), device=device,
               adversary_steps=int(values["ap_adv_steps"]),
               adversary_lr_scale=float(values["ap_adv_lr"]),
               projection_points=int(values["ap_proj_points"]))
    cfg["fl"].update(num_devices=int(values["ap_devices"]), rounds=int(values["ap_rounds"]),
                     fraction_fit=float(values["ap_fraction"]), local_epochs=int(values["ap_epochs"]),
                     batch_size=int(values["ap_batch"]), lr=float(values["ap_lr"]),
                     partition=partition)
    block: dict[str, Any] = {"kind": defense}
    # each argument lands only in a block that has its field (TAPPFL's λ, the DP blocks'
    # epsilon / delta / clip_norm, pruning's rate)
    part = DEFENSES.get(defense) if defense in DEFENSES else None
    fields = part.config.model_fields if part is not None and part.config is not None else {}
    given = {"tradeoff_lambda": lam, **(dp or {}), "rate": pruning_rate}
    block.update({k: float(v) for k, v in given.items() if k in fields and v is not None})
    block.update(params or {})
    cfg["defense"] = block
    if attackers is not None:
        cfg["attack"]["attackers"] = list(attackers)
    return cfg


def page_default_config(dataset: str = DEFAULT_DATASET, seed: int = 0,
                        device: str = "auto") -> dict[str, Any]:
    """The config the Attribute page runs on first visit (quick preset, TAPPFL at its default λ,
    the data set's opening attribute), built as the page's controls build it."""
    from core.data.registry import dataset_attributes

    attr = DEFAULT_ATTRIBUTE.get(dataset) or dataset_attributes(dataset)[0]
    lam = AttributePrivacyConfig().tradeoff_lambda
    return build_config(preset="quick", dataset=dataset, attribute=attr, seed=seed,
                        device=device, defense="tappfl", lam=lam,
                        values=preset_widgets("quick"))
