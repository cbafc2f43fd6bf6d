"""What an attacker knows in advance, what it is scored against, and the threat-model card.

breaching's habit: the attacker sees the shared data (a :mod:`core.foundation.releases` object) plus an
explicit :class:`AdversaryKnowledge`, never the truth; :class:`GroundTruth` goes only to the
scoring function. A :class:`ThreatModel` (sees / knows / goal) is the short card the pages
show beside each attack.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.foundation.checks import check_range


@dataclass(frozen=True)
class ThreatModel:
    """The card: what the attacker ``sees``, what it ``knows`` in advance, its ``goal``."""

    sees: str
    knows: str
    goal: str

    def as_dict(self) -> dict[str, str]:
        return {"sees": self.sees, "knows": self.knows, "goal": self.goal}


@dataclass(frozen=True)
class AdversaryKnowledge:
    """Prior knowledge of the attacker.

    ``aux_features``/``aux_labels``: auxiliary rows as the attacker can compute them (e.g.
    encoded with the released encoder) and their private labels; ``n_classes``: how many
    values the target label takes; ``prior``: the class frequencies it assumes;
    ``shadow_pool``: rows it may train shadow models on (membership); ``training_algorithm``:
    a description of the defender's training it may simulate; ``extra``: anything a later
    family needs (e.g. FIL's white-box attacker: every feature but the target value).
    """

    n_classes: int
    aux_features: np.ndarray | None = None
    aux_labels: np.ndarray | None = None
    prior: np.ndarray | None = None
    shadow_pool: np.ndarray | None = None
    training_algorithm: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_range("n_classes", self.n_classes, 2)
        if (self.aux_features is None) != (self.aux_labels is None):
            raise ValueError("aux_features, aux_labels: give both or neither")
        if self.aux_features is not None and len(self.aux_features) != len(self.aux_labels):
            raise ValueError(f"aux_labels: got {len(self.aux_labels)} rows; expected "
                             f"{len(self.aux_features)} to match aux_features")


@dataclass(frozen=True)
class GroundTruth:
    """The true labels of the attacked rows; only the scoring function reads them."""

    labels: np.ndarray
