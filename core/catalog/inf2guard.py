"""Inf2Guard against membership inference (spec 004 §2.1, Eq. 6, Algorithm 1).

The block, its knob (range read from the block's constraints) and its registration: the
part's one declaration (:mod:`core.catalog`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from annotated_types import Ge, Le
from pydantic import Field

from core.config.base import Block
from core.foundation.parts import DEFENSES, DefensePart, Knob, PageSpec, PaperSpec, Releases


class Inf2GuardDefense(Block):
    """Inf2Guard against membership inference (spec 004 §2.1, Eq. 6 / Algorithm 1): encoder,
    task head and membership adversary in a game weighted by λ."""

    kind: Literal["inf2guard"] = "inf2guard"
    tradeoff_lambda: Annotated[float, Ge(0.0), Le(1.0)] = Field(
        0.5, description="Inf2Guard privacy weight λ (Eq. 6): 0 = utility only, 1 = privacy only")


_MIA = ("membership",)
_CENTRAL = "core.defenses.central"
DEFENSES.register("inf2guard", DefensePart(
    config=Inf2GuardDefense, page=PageSpec(order=80),
    name="inf2guard", title="Inf2Guard (λ)", families=_MIA,
    release=Releases("model", extra=(("membership", "representation"),
                                     ("membership", "adversary_output"))),
    knob=Knob.of(Inf2GuardDefense, "tradeoff_lambda", "λ", "Inf2Guard privacy weight", "linear",
              "higher_is_more_private", budget_metric="tradeoff_lambda",
              grid=(0.0, 0.25, 0.5, 0.75, 1.0)),
    accounting=None, builder=f"{_CENTRAL}:build_inf2guard",
    # Inf2Guard (§5) claims more utility than DP-SGD at equal membership advantage
    paper=PaperSpec(outperforms=("dp_sgd",), short_title="Inf2Guard"),
    description="Encoder, task head and a membership adversary in the game of Eq. 6 "
                "(Algorithm 1); no formal guarantee: measured by attacks (and Theorem 1's "
                "leakage bound at an estimated H(u|r)). Releases the model and its encoder's r."))
