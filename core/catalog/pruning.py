"""Magnitude pruning of uploads (TAPPFL's MC baseline).

The block, its knob (range read from the block's constraints) and its registration: the
part's one declaration (:mod:`core.catalog`).
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from annotated_types import Ge, Le
from pydantic import Field

from core.config.base import Block
from core.foundation.parts import DEFENSES, Control, DefensePart, Knob, PageSpec


class PruningDefense(Block):
    """Magnitude pruning: the smallest-magnitude fraction ``rate`` of each upload zeroed."""

    # the first config shape: top-level pruning_rate and pruning_target
    legacy_fields: ClassVar = (("pruning_rate", "rate"), ("pruning_target", "target"))

    kind: Literal["pruning"] = "pruning"
    rate: Annotated[float, Ge(0.0), Le(0.99)] = Field(
        0.5, description="the zeroed fraction p of each upload (at most 0.99: 1 zeroes it all)")
    target: Literal["weights", "update"] = Field(
        "weights", description="prune the uploaded parameters (TAPPFL's MC baseline) or the update"
    )


_FL = ("attribute_privacy",)
DEFENSES.register("pruning", DefensePart(
    config=PruningDefense,
    name="pruning", title="magnitude pruning of uploads", families=_FL, release="representation",
    knob=Knob.of(PruningDefense, "rate", "p", "pruning rate", "linear", "higher_is_more_private",
              budget_metric="pruning_rate", grid=(0.5, 0.8, 0.9, 0.95, 0.99)),
    accounting=None, builder="core.defenses.federated:build_pruning",
    page=PageSpec(order=50, controls=(
        Control("target", "prune", "Prune the uploaded parameters (TAPPFL's MC baseline) "
                                   "or the update."),)),
    description="The smallest-magnitude fraction of each upload zeroed (TAPPFL's MC baseline)."))
