"""Fisher information loss: output perturbation of an L2-regularised GLM (spec 002 §A7).

The block, its knob (range read from the block's constraints) and its registration: the
part's one declaration (:mod:`core.catalog`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from annotated_types import Ge, Le
from pydantic import Field, model_validator

from core.config.base import Block, Delta, DPEpsilon
from core.foundation.parts import DEFENSES, DefensePart, Knob, PageSpec


class FilOutputPerturbation(Block):
    """FIL's defense (spec 002 §A7): the L2-regularised GLM trained to optimality and released
    as w' = w* + N(0, σ²I). σ is given directly (``sigma``), solved from a target η
    (``eta_target``: the worst-case or the mean η at the chosen granularity equals it) or from
    (``epsilon``, ``delta``) through the sensitivity 2/(nλ) (logistic regression on unit-ball
    features only; least squares has none). Exactly one of the three is set."""

    kind: Literal["fil_output_perturbation"] = "fil_output_perturbation"
    sigma: Annotated[float, Ge(1e-6), Le(1e6)] | None = Field(
        None, description="noise standard deviation σ of the released weights (η = ‖J‖/σ "
        "overflows below 1e-6)")
    eta_target: Annotated[float, Ge(1e-4), Le(1e9)] | None = Field(
        3.2, description="solve σ so that the worst-case (or mean) η equals this (σ = ‖J‖/η "
        "overflows below 1e-4)")
    eta_reduce: Literal["max", "mean"] = "max"
    epsilon: DPEpsilon | None = Field(
        None, description="solve σ for (ε, δ)-DP (logistic, unit ball); the classic "
        "calibration holds for ε < 1 only")
    delta: Delta = 1e-5
    dp_method: Literal["rdp", "classic"] = "rdp"
    releases: Annotated[int, Ge(1), Le(100_000)] = Field(
        1, description="k independent releases: composed FIL η√k")

    @model_validator(mode="before")
    @classmethod
    def _one_given_replaces_default(cls, data: Any) -> Any:
        """Giving ``sigma`` or ``epsilon`` alone means that mode: the default target η steps
        aside."""
        if isinstance(data, dict) and "eta_target" not in data and (
                data.get("sigma") is not None or data.get("epsilon") is not None):
            data = {**data, "eta_target": None}
        return data

    @model_validator(mode="after")
    def _exactly_one(self) -> FilOutputPerturbation:
        given = [n for n in ("sigma", "eta_target", "epsilon") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError(f"sigma, eta_target, epsilon: got {', '.join(given) or 'none'} set; "
                             "set exactly one (the others null)")
        if self.epsilon is not None and self.dp_method == "classic" and self.epsilon >= 1.0:
            from core.foundation.checks import range_text

            raise ValueError(f"epsilon: got {self.epsilon:g}; the classic Gaussian calibration "
                             "(Dwork & Roth, Thm A.1) holds for 0 < ε < 1 only: "
                             + range_text(1e-3, 1.0, hi_open=True,
                                          note="dp_method classic; rdp has no such limit"))
        return self

    @property
    def noise_from(self) -> str:
        return "sigma" if self.sigma is not None else "eta" if self.eta_target is not None else "dp"


_FIL = ("fisher_information",)
DEFENSES.register("fil_output_perturbation", DefensePart(
    config=FilOutputPerturbation, page=PageSpec(order=90),
    name="fil_output_perturbation", title="FIL output perturbation (σ)", families=_FIL,
    release="model",
    knob=Knob.of(FilOutputPerturbation, "eta_target", "η", "target FIL η (worst case)", "log",
              "lower_is_more_private", budget_metric="fil_eta", grid=(0.1, 0.3, 1.0, 3.0, 10.0)),
    accounting="fil", builder="core.defenses.fil_output:resolve_sigma",
    description="L2-regularised linear / logistic regression trained to optimality and released "
                "as w' = w* + N(0, σ²I); σ set directly, from a target η (η = ‖J‖₂/σ, Eq. 17) "
                "or from (ε, δ) via the sensitivity 2/(nλ) (logistic, unit ball)."))
