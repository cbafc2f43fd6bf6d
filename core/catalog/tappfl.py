"""TAPPFL (AAAI 2024, Eq. 7): the per-device encoder trained against an in-training attribute adversary.

The block, its knob (range read from the block's constraints) and its registration: the
part's one declaration (:mod:`core.catalog`).
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from annotated_types import Ge, Le
from pydantic import Field

from core.config.base import Block
from core.foundation.parts import DEFENSES, DefensePart, Knob, PageSpec


class TappflDefense(Block):
    """TAPPFL (AAAI 2024, Eq. 7): the encoder trained on −λ·CE(adversary) − (1−λ)·I_JSD."""

    # the first config shape: a top-level tradeoff_lambda
    legacy_fields: ClassVar = (("tradeoff_lambda", "tradeoff_lambda"),)

    kind: Literal["tappfl"] = "tappfl"
    tradeoff_lambda: Annotated[float, Ge(0.0), Le(1.0)] = Field(
        0.5, description="TAPPFL privacy weight λ (Eq. 7): 0 = utility only, 1 = privacy only"
    )


_FL = ("attribute_privacy",)
DEFENSES.register("tappfl", DefensePart(
    config=TappflDefense, page=PageSpec(order=20),
    name="tappfl", title="TAPPFL (λ)", families=_FL, release="representation",
    knob=Knob.of(TappflDefense, "tradeoff_lambda", "λ", "TAPPFL privacy weight", "linear",
              "higher_is_more_private", budget_metric="tradeoff_lambda",
              grid=(0.0, 0.25, 0.5, 0.75, 1.0),
              # the ends of λ (utility only, privacy only) and the middle: three cold runs
              teaching=(0.0, 0.5, 1.0)),
    accounting=None, builder="core.defenses.federated:build_tappfl",
    description="Encoder trained on −λ·CE(adversary) − (1−λ)·I_JSD(x; r | u) (Eq. 7); "
                "no formal guarantee: measured by attacks."))
