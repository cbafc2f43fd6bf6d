"""The κ channel (spec 001, Eqs. 18-20): data-space noise solved from the capacity κ.

The block, its knob (range read from the block's constraints) and its registration: the
part's one declaration (:mod:`core.catalog`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from annotated_types import Ge, Le
from pydantic import Field, model_validator

from core.config.base import Block
from core.foundation.parts import DEFENSES, Control, DefensePart, Knob, PageSpec, Releases


class ChannelDefense(Block):
    """Data-space channel D̃ = D + ξ with the noise solved from the capacity κ (spec 001,
    Eqs. 18-20): Natural (σI), White (∝ Σ_D), Personalized (σ·diag β); Laplace (a derived
    bound, not the paper's). ``noise_mode``: ``redraw`` (fresh noise every step: κ per step,
    n·κ in total) or ``fixed`` (one noisy copy of the data: κ in total, by the DPI)."""

    kind: Literal["channel"] = "channel"
    channel: Literal["natural", "white", "personalized", "laplace"] = "natural"
    kappa: Annotated[float, Ge(1e-3), Le(1e7)] = Field(
        8.0, description="capacity κ in nats per round (κ/d nats per dimension is shown beside "
        "it); below 1e-3 the solved noise variance tr Σ/2κ swamps float32 training (NaN)")
    noise_mode: Literal["redraw", "fixed"] = "redraw"
    beta_rect: tuple[int, int, int, int] | None = Field(
        None, description="personalized: rows r0:r1, columns c0:c1 of the β mask's rectangle; "
        "None = the paper's eye band (rows 12-19, cols 8-23 of 32×32, scaled to the image)")
    beta_multiplier: Annotated[float, Ge(1.0), Le(1e4)] = Field(
        50.0, description="personalized: β inside the rectangle (1 elsewhere; the paper's 1:50)")

    @model_validator(mode="after")
    def _check_rect(self) -> ChannelDefense:
        if self.beta_rect is not None:
            r0, r1, c0, c1 = self.beta_rect
            if not (0 <= r0 < r1 and 0 <= c0 < c1):
                raise ValueError(f"beta_rect: got {list(self.beta_rect)}; expected rows r0 < r1 "
                                 "and columns c0 < c1, all >= 0")
        return self


_GL = ("gradient_leakage",)
_MIA = ("membership",)
_CENTRAL = "core.defenses.central"
DEFENSES.register("channel", DefensePart(
    config=ChannelDefense,
    name="channel", title="κ channel (data-space noise)", families=_GL + _MIA,
    release=Releases("update", per_family=(("membership", "model"),)),
    knob=Knob.of(ChannelDefense, "kappa", "κ", "capacity per round (nats)", "log",
              "lower_is_more_private", budget_metric="kappa", grid=(2.0, 8.0, 32.0, 128.0, 512.0),
              family_fields=(("membership", (
                  ("options", (5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 300.0, 600.0)),
                  ("teaching", (20.0, 80.0, 300.0)))),
                  # gradient leakage scales κ with the image dimension d: its page slides κ
                  # over [0.001·d, 10·d] and sweeps κ/d (Knob.for_dim)
                  ("gradient_leakage", (
                      ("per_dim", True), ("low", 1e-3), ("high", 10.0),
                      ("teaching", (0.01, 0.03, 0.1, 0.3, 1.0)))))),
    page=PageSpec(
        order=60, variants="channel",
        variant_titles=(("natural", "Natural (σI)"), ("white", "White (∝ Σ_D)"),
                        ("personalized", "Personalized (σ·diag β)"),
                        ("laplace", "Laplace (derived bound)")),
        controls=(Control("noise_mode", "Noise", "redraw: fresh noise every step (κ per step, "
                          "n·κ over the run); fixed: one noisy copy of the data (κ in total).",
                          families=_GL, segmented=True),),
        readouts=(("gradient_leakage", "core.defenses.channel_live:live_kappa"),)),
    accounting="capacity", builder=f"{_CENTRAL}:build_channel",
    description="The model trains on D̃ = D + ξ with ξ solved from the capacity κ (Eq. 18): "
                "Natural σI, White ∝ Σ_D (Eq. 19), Personalized σ·diag β (Eq. 20, exact via "
                "β-whitening), Laplace (a derived bound). I(D; upload | W_i) ≤ κ per round."))
