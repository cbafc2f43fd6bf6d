"""Inf2Guard against property inference (spec 004 §2.2, Eq. 11, Algorithm 2).

The block, its knob (range read from the block's constraints) and its registration: the
part's one declaration (:mod:`core.catalog`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from annotated_types import Ge, Le
from pydantic import Field

from core.config.base import Block
from core.foundation.parts import DEFENSES, DefensePart, Knob, PageSpec, Releases


class Inf2GuardPropertyDefense(Block):
    """Inf2Guard against property inference (spec 004 §2.2, Eq. 11 / Algorithm 2): encoder,
    per-sample task head and a K-way property adversary on aggregated subset representations,
    in a game weighted by λ (λ = 0: no defense)."""

    kind: Literal["inf2guard_property"] = "inf2guard_property"
    tradeoff_lambda: Annotated[float, Ge(0.0), Le(1.0)] = Field(
        0.5, description="Inf2Guard privacy weight λ (Eq. 11): 0 = utility only, 1 = privacy only")
    aggregation: Literal["mean", "max"] = Field(
        "mean", description="subset representation: mean (Table 3) or element-wise max (Table 4)")


_PIA = ("property",)
DEFENSES.register("inf2guard_property", DefensePart(
    config=Inf2GuardPropertyDefense, page=PageSpec(order=100),
    name="inf2guard_property", title="Inf2Guard vs property inference (λ)", families=_PIA,
    release=Releases("representation", per_family=(("property", "subset_representation"),)),
    knob=Knob.of(Inf2GuardPropertyDefense, "tradeoff_lambda", "λ", "Inf2Guard privacy weight", "linear",
              "higher_is_more_private", budget_metric="tradeoff_lambda",
              grid=(0.0, 0.25, 0.5, 0.75, 1.0),
              # no defense, a light one and the page's default λ: the sweep the finding reads
              teaching=(0.0, 0.25, 0.75)),
    accounting=None, builder="core.defenses.inf2guard_property:train_inf2guard_property",
    description="Encoder, per-sample task head and a K-way property adversary on aggregated "
                "subset representations in the game of Eq. 11 (Algorithm 2); λ = 0 is no "
                "defense; no formal guarantee: measured by attacks and the K-ary Fano bound."))
