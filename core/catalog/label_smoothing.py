"""Label smoothing (Szegedy et al., CVPR 2016, §7) against membership inference; no guarantee."""

from typing import Annotated, Any, Literal

from annotated_types import Ge, Le
from pydantic import Field

from core.config.base import Block
from core.engine.hooks import Hook
from core.foundation.parts import DEFENSES, DefensePart, Knob


class LabelSmoothingHook(Hook):
    """Cross-entropy to (1 − s)·onehot(y) + s/C, each model's mean over its rows (batchable)."""
    per_example = True

    def __init__(self, s: float) -> None:
        self.s = float(s)

    def loss(self, logits: Any, y: Any, state: Any) -> Any:
        from torch.nn.functional import cross_entropy as ce
        if not self.s or not state.batched:  # None at s = 0: plain training exactly
            return ce(logits, y, label_smoothing=self.s) if self.s else None
        rows = ce(logits.flatten(0, 1), y.flatten(), reduction="none", label_smoothing=self.s)
        return state.mean(rows.view(y.shape))


class LabelSmoothingDefense(Block):
    kind: Literal["label_smoothing"] = "label_smoothing"
    s: Annotated[float, Ge(0.0), Le(0.9)] = Field(0.1, description="smoothing s (0 = plain)")

    def hooks(self) -> list[Hook]:
        return [LabelSmoothingHook(self.s)]


DEFENSES.register("label_smoothing", DefensePart(
    config=LabelSmoothingDefense, name="label_smoothing", title="label smoothing (s)", order=130,
    families=("membership",), release="model", accounting=None, description=__doc__,
    builder="core.engine.builds:build_from_hooks", knob=Knob.of(LabelSmoothingDefense, "s",
        "s", "smoothing", "linear", "higher_is_more_private", budget_metric="label_smoothing_s")))
