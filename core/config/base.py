"""The base of every config block and the constrained types several blocks share.

Light (pydantic and annotated_types only): a part's declaration in :mod:`core.catalog` builds its
block on :class:`Block` without importing :mod:`core.config.schema`, which in turn generates its
unions from the registered parts.
"""

from __future__ import annotations

from typing import Annotated, ClassVar

from annotated_types import Ge, Le, Lt
from pydantic import BaseModel, ConfigDict

#: δ of an (ε, δ) guarantee: the accountants and the analytic Gaussian calibration work in
#: double precision, whose Gaussian tails stop resolving δ long before the subnormal 1e-320
#: (where the calibration used to loop forever); 1e-12 is far below any δ a study uses
Delta = Annotated[float, Ge(1e-12), Lt(1.0)]
#: ε of a DP guarantee: below 1e-3 the calibrated noise exceeds the data by a factor 1000s
DPEpsilon = Annotated[float, Ge(1e-3), Le(10_000.0)]
#: clipping norms: below 1e-6 the clipped update is at float32's resolution
ClipNorm = Annotated[float, Ge(1e-6), Le(1000.0)]


class Block(BaseModel):
    """Base for every config block: unknown keys are errors, instances are immutable."""

    #: (v1 path, field): where the engine's first config shape kept a defense block's
    #: parameters (top-level ``tradeoff_lambda``, ``dp.epsilon``): :mod:`core.config.migrations`
    legacy_fields: ClassVar[tuple[tuple[str, str], ...]] = ()

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True,
                              allow_inf_nan=False)
