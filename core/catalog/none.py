"""No defense: the undefended baseline of every family it belongs to.

The block, its knob (range read from the block's constraints) and its registration: the
part's one declaration (:mod:`core.catalog`).
"""

from __future__ import annotations

from typing import Literal

from core.config.base import Block
from core.foundation.parts import DEFENSES, Builders, DefensePart, PageSpec, Releases


class NoDefense(Block):
    """No defense: plain FedAvg of the encoder (the undefended representation)."""

    kind: Literal["none"] = "none"


_FL = ("attribute_privacy",)
_GL = ("gradient_leakage",)
_MIA = ("membership",)
_CENTRAL = "core.defenses.central"
DEFENSES.register("none", DefensePart(
    config=NoDefense, baseline=True,
    name="none", title="none (undefended)", families=_FL + _GL + _MIA,
    release=Releases("representation", per_family=(("gradient_leakage", "update"),
                                                   ("membership", "model"))),
    knob=None, accounting=None,
    builder=Builders("core.defenses.federated:build_none",
                     per_family=(("gradient_leakage", f"{_CENTRAL}:build_plain"),
                                 ("membership", f"{_CENTRAL}:build_plain"))),
    page=PageSpec(order=10, readouts=(("gradient_leakage",
                                       "core.defenses.channel_live:live_undefended"),)),
    description="Attribute privacy: the encoder trained on the utility term only (λ = 0). "
                "Gradient leakage: plain training, the uploads released as they are."))
