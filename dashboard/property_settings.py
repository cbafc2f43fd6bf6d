"""Property page settings without Streamlit (the page, its tests and the lessons benchmark read
them): per data set the attribute whose share is the property, subset sizes, subsets per bin
and epochs, the default λ, and the page's default config."""

from __future__ import annotations

from typing import Any

from core.config.schema import PROPERTY_ATTACKS

#: per data set: the attribute whose share is the property, subset sizes, subsets per bin
#: (train and aux; the targets get half), epochs: small enough to run in seconds on a CPU
PRESETS = {"adult": {"attribute": "sex", "sizes": (32, 256), "per_bin": 250, "epochs": 15},
           "digits": {"attribute": "bold", "sizes": (8, 64), "per_bin": 150, "epochs": 15},
           "mnist5k": {"attribute": "bold", "sizes": (16, 128), "per_bin": 200, "epochs": 15}}
#: the widgets' first values (λ, K, aggregation, the fresh attackers' aggregator, attackers)
DEFAULTS = {"pr_lambda": 0.75, "pr_k": 4, "pr_agg": "mean", "pr_attack_agg": "same",
            "pr_attackers": list(PROPERTY_ATTACKS)}


def page_default_config(dataset: str = "digits", seed: int = 0,
                        device: str = "auto") -> dict[str, Any]:
    """The config the page runs on first visit for ``dataset`` (digits: what a fresh clone
    has), built the way the page's controls build it."""
    p, d = PRESETS[dataset], DEFAULTS
    lo, hi = p["sizes"]
    return {"kind": "property", "seed": seed, "device": device,
            "data": {"name": dataset, "private_attribute": p["attribute"]},
            "defense": {"kind": "inf2guard_property", "tradeoff_lambda": float(d["pr_lambda"]),
                        "aggregation": d["pr_agg"]},
            "subsets": {"n_values": d["pr_k"], "size_min": lo, "size_max": hi,
                        "train_per_bin": p["per_bin"], "aux_per_bin": p["per_bin"],
                        "test_per_bin": max(5, p["per_bin"] // 2)},
            "train": {"epochs": p["epochs"]},
            "attack": {"attackers": list(d["pr_attackers"]), "aggregation": d["pr_attack_agg"]}}
